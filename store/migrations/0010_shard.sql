-- Sharded probes (issue 26): how many devices a result's probe ran on, and
-- how the model was split over them; and how many devices a queued job
-- needs, so that the lease query offers a worker only the jobs it can hold
-- (fleet.Holds). Results from before ran on one device.
ALTER TABLE results ADD COLUMN devices_used INTEGER NOT NULL DEFAULT 1;
ALTER TABLE results ADD COLUMN sharding TEXT;
ALTER TABLE jobs ADD COLUMN devices INTEGER NOT NULL DEFAULT 1;
