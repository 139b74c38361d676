-- A scan records the process that runs it ("host:pid"), so that start-up
-- marks interrupted only the scans whose process is gone, not a scan that
-- another live process (scanner scan beside scanner serve) is running.
ALTER TABLE scans ADD COLUMN owner TEXT NOT NULL DEFAULT '';
