-- The work queue of `serve --dispatch workers` (internal/fleet): the
-- workers that lease probes, the jobs of each scan, and which worker
-- produced a result. The server is the only writer; every transition of a
-- job is decided by fleet's pure functions and written in one transaction.

-- workers are the `scanner worker` processes the server has heard from.
CREATE TABLE workers (
	id           TEXT PRIMARY KEY, -- host plus a random suffix, fresh per process
	host         TEXT NOT NULL,
	version      TEXT NOT NULL DEFAULT '',
	target       TEXT NOT NULL,
	runtime_key  TEXT NOT NULL,    -- compat.Runtime.Key(): jobs match on it
	runtime      TEXT NOT NULL,    -- JSON compat.Runtime
	devices      INTEGER NOT NULL,
	memory_bytes INTEGER NOT NULL DEFAULT 0,
	first_seen   INTEGER NOT NULL,
	last_seen    INTEGER NOT NULL,
	jobs_done    INTEGER NOT NULL DEFAULT 0 -- results accepted from it
);
CREATE INDEX workers_seen ON workers (last_seen);

-- jobs are the probes a scan queued, one per model, leased in rank
-- (popularity) order to workers of the job's target and runtime.
CREATE TABLE jobs (
	id          INTEGER PRIMARY KEY,
	scan_id     INTEGER NOT NULL REFERENCES scans (id) ON DELETE CASCADE,
	rank        INTEGER NOT NULL,  -- the model's place in the scan's listing
	model_id    TEXT NOT NULL REFERENCES models (id) ON UPDATE CASCADE ON DELETE CASCADE,
	target      TEXT NOT NULL,
	runtime_key TEXT NOT NULL,
	spec        TEXT NOT NULL,     -- JSON fleet.Job: what the worker runs
	state       TEXT NOT NULL,     -- fleet.State
	lease_id    TEXT,              -- the current lease, NULL unless leased
	worker_id   TEXT,              -- its holder
	expires_at  INTEGER,           -- its expiry
	attempts    INTEGER NOT NULL DEFAULT 0, -- leases granted
	lost        INTEGER NOT NULL DEFAULT 0, -- leases that expired
	last_worker TEXT NOT NULL DEFAULT '',   -- host of the last holder
	updated_at  INTEGER NOT NULL,
	UNIQUE (scan_id, model_id)
);
CREATE INDEX jobs_queue ON jobs (target, runtime_key, scan_id, rank) WHERE state = 'queued';
CREATE INDEX jobs_leased ON jobs (expires_at) WHERE state = 'leased';
CREATE UNIQUE INDEX jobs_lease ON jobs (lease_id) WHERE lease_id IS NOT NULL;
CREATE INDEX jobs_scan ON jobs (scan_id, state);

-- The worker (host) whose probe a result is; '' for a local probe.
ALTER TABLE results ADD COLUMN worker TEXT NOT NULL DEFAULT '';
