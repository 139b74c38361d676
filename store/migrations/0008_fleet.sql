-- 0007 (fleet): what a fleet needs to survive its own operations
-- (issue 23). The lead may renumber it at merge (asked for as 0009_fleet).

-- results.worker_tested_at is the time a worker's own clock gave a result
-- (its probe's start); tested_at is then when the server received it, so
-- that a worker's skewed clock cannot reorder results. NULL for a result
-- the server's own process probed.
ALTER TABLE results ADD COLUMN worker_tested_at INTEGER;

-- A scan's owner ("host:pid:boot:instance", see store/owner.go) renews
-- owner_seen while it runs: a scan whose owner stopped renewing is an
-- orphan, whatever host it ran on. Running scans of an older binary get
-- one heartbeat's grace from now.
ALTER TABLE scans ADD COLUMN owner_seen INTEGER NOT NULL DEFAULT 0;
UPDATE scans SET owner_seen = CAST(strftime('%s', 'now') AS INTEGER) * 1000000000 WHERE status = 'running';

-- stalled_since is when the scan's queued jobs stopped matching any live
-- worker (a rollout to another runtime, a fleet gone); NULL while they
-- match. fleet_note says what the fleet did about it (waiting, re-planned
-- for another runtime, ended).
ALTER TABLE scans ADD COLUMN stalled_since INTEGER;
ALTER TABLE scans ADD COLUMN fleet_note TEXT NOT NULL DEFAULT '';

-- left_at is when a worker said it was leaving (SIGTERM): it is no longer
-- live, so that a rollout's new runtime is planned for at once. NULL while
-- it works; a worker that polls again is back.
ALTER TABLE workers ADD COLUMN left_at INTEGER;
