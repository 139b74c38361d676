-- 0001: the initial schema. Times are INTEGER Unix nanoseconds (UTC);
-- JSON columns hold the compat package's encoding of the value. Status,
-- target and kind words are checked in Go, not here, so that adding one to
-- the contract needs no table rebuild.

-- state is one row: when the data last changed (Changed, for ETags).
CREATE TABLE state (
	id         INTEGER PRIMARY KEY CHECK (id = 1),
	changed_at INTEGER NOT NULL
);
INSERT INTO state (id, changed_at) VALUES (1, 0);

-- models are the Hub models the scanner knows.
CREATE TABLE models (
	id            TEXT PRIMARY KEY,
	org           TEXT NOT NULL COLLATE NOCASE, -- id before "/", "" for legacy one-part ids
	task          TEXT NOT NULL DEFAULT '',
	library       TEXT NOT NULL DEFAULT '',
	downloads     INTEGER NOT NULL DEFAULT 0,
	likes         INTEGER NOT NULL DEFAULT 0,
	gated         INTEGER NOT NULL DEFAULT 0 CHECK (gated IN (0, 1)),
	sha           TEXT NOT NULL DEFAULT '',
	tags          TEXT, -- JSON array, NULL when none
	last_modified INTEGER,
	first_seen    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL
);
CREATE INDEX models_id_nocase ON models (id COLLATE NOCASE);
CREATE INDEX models_org       ON models (org);

-- model_aliases are old ids that the Hub redirects (307) to a model.
CREATE TABLE model_aliases (
	alias    TEXT PRIMARY KEY COLLATE NOCASE,
	model_id TEXT NOT NULL REFERENCES models (id) ON UPDATE CASCADE ON DELETE CASCADE
);
CREATE INDEX model_aliases_model ON model_aliases (model_id);

-- scans are runs of the scanner over a list of models.
CREATE TABLE scans (
	id           INTEGER PRIMARY KEY,
	triggered_by TEXT NOT NULL DEFAULT '',
	status       TEXT NOT NULL,
	target       TEXT NOT NULL DEFAULT '',
	params       TEXT NOT NULL DEFAULT '',
	started_at   INTEGER NOT NULL,
	finished_at  INTEGER,
	planned      INTEGER NOT NULL DEFAULT 0,
	done         INTEGER NOT NULL DEFAULT 0,
	probed       INTEGER NOT NULL DEFAULT 0,
	unchanged    INTEGER NOT NULL DEFAULT 0,
	error        TEXT NOT NULL DEFAULT '',
	device_busy  REAL,
	runtime      TEXT NOT NULL -- JSON compat.Runtime
);
CREATE INDEX scans_running ON scans (status) WHERE status = 'running';

-- results are every probe ever recorded; only a rename (a merge) changes one.
CREATE TABLE results (
	id            INTEGER PRIMARY KEY,
	model_id      TEXT NOT NULL REFERENCES models (id) ON UPDATE CASCADE ON DELETE CASCADE,
	scan_id       INTEGER REFERENCES scans (id) ON DELETE SET NULL,
	target        TEXT NOT NULL,
	status        TEXT NOT NULL,
	stage         TEXT,
	failure_class TEXT,
	op            TEXT,
	reason        TEXT,
	signature     TEXT,
	mode          TEXT,
	revision      TEXT NOT NULL,
	tested_at     INTEGER NOT NULL,
	duration_s    REAL NOT NULL,
	runtime_key   TEXT NOT NULL, -- compat.Runtime.Key(): what decides a retest
	torch         TEXT NOT NULL,
	torch_tpu     TEXT NOT NULL,
	transformers  TEXT NOT NULL,
	harness       TEXT NOT NULL,
	tokens_per_s  REAL,          -- copy of metrics.tokens_per_s
	task          TEXT NOT NULL DEFAULT '',
	repro         TEXT NOT NULL DEFAULT '',
	message       TEXT,
	runtime       TEXT NOT NULL, -- JSON compat.Runtime
	metrics       TEXT NOT NULL, -- JSON compat.Metrics, unmeasured metrics are null
	stages        TEXT           -- JSON []compat.StageRun, NULL when none
);
CREATE INDEX results_model_target ON results (model_id, target, tested_at, id);
CREATE INDEX results_model_time   ON results (model_id, tested_at, id);
CREATE INDEX results_runtime      ON results (torch_tpu, torch, transformers, harness);
-- Idempotency. A model is probed once per scan on a target at a revision and
-- runtime, so recording that probe again (a retry after a lost commit
-- acknowledgement, a restart that replays what it had) must not add a row.
-- Results outside any scan have no such identity; for them only the very
-- same probe (same tested_at) is a duplicate, so a forced retest still counts.
CREATE UNIQUE INDEX results_once_per_scan ON results (model_id, target, revision, runtime_key, scan_id)
	WHERE scan_id IS NOT NULL;
CREATE UNIQUE INDEX results_once_unscanned ON results (model_id, target, revision, runtime_key, tested_at)
	WHERE scan_id IS NULL;

-- result_logs keep the log tails apart, so that results rows stay small.
CREATE TABLE result_logs (
	result_id INTEGER PRIMARY KEY REFERENCES results (id) ON DELETE CASCADE,
	log_tail  TEXT NOT NULL
);

-- current has one row per model and target (tpu, cpu, cuda, and '' for
-- "any target"), tested or not: the listing the site's table is read from.
-- result_id points at the model's newest result there (by tested_at, then
-- id; on '' the newest on any target), NULL while untested. The other
-- columns are copies, kept in step by RecordResult and UpsertModels, so
-- that every list order is an index walk: status_rank is the status's
-- place in compat.Statuses (untested 7); untested and no_tokens put rows
-- without a value last whichever way a column is sorted. fail_key groups
-- results held against the model (fail, oom, timeout, crash) by root
-- cause: the signature, else the failure class (NULL for other statuses).
CREATE TABLE current (
	target        TEXT NOT NULL,
	model_id      TEXT NOT NULL REFERENCES models (id) ON UPDATE CASCADE ON DELETE CASCADE,
	result_id     INTEGER REFERENCES results (id) ON DELETE SET NULL,
	status        TEXT,
	status_rank   INTEGER NOT NULL DEFAULT 7,
	untested      INTEGER NOT NULL DEFAULT 1,
	tested_at     INTEGER NOT NULL DEFAULT 0,
	no_tokens     INTEGER NOT NULL DEFAULT 1,
	tokens_per_s  REAL NOT NULL DEFAULT 0,
	fail_key      TEXT,
	failure_class TEXT,
	op            TEXT,
	downloads     INTEGER NOT NULL DEFAULT 0,
	likes         INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (target, model_id)
) WITHOUT ROWID;
CREATE INDEX current_model      ON current (model_id);
CREATE INDEX current_result     ON current (result_id);
CREATE INDEX current_downloads  ON current (target, downloads DESC, model_id);
CREATE INDEX current_likes      ON current (target, likes DESC, model_id);
CREATE INDEX current_status     ON current (target, status_rank, downloads DESC, model_id);
CREATE INDEX current_tested     ON current (target, untested, tested_at DESC, model_id);
CREATE INDEX current_tested_asc ON current (target, untested, tested_at, model_id DESC);
CREATE INDEX current_tokens     ON current (target, no_tokens, tokens_per_s DESC, model_id);
CREATE INDEX current_tokens_asc ON current (target, no_tokens, tokens_per_s, model_id DESC);
CREATE INDEX current_failing    ON current (target, fail_key, downloads DESC, model_id) WHERE fail_key IS NOT NULL;

-- events are status changes (and flaky observations), for the feed.
CREATE TABLE events (
	id          INTEGER PRIMARY KEY,
	model_id    TEXT NOT NULL REFERENCES models (id) ON UPDATE CASCADE ON DELETE CASCADE,
	result_id   INTEGER REFERENCES results (id) ON DELETE SET NULL,
	target      TEXT NOT NULL,
	kind        TEXT NOT NULL,
	from_status TEXT NOT NULL DEFAULT '',
	to_status   TEXT NOT NULL,
	revision    TEXT NOT NULL DEFAULT '',
	runtime     TEXT NOT NULL, -- JSON compat.Runtime
	signature   TEXT,
	message     TEXT,
	at          INTEGER NOT NULL
);
CREATE INDEX events_time   ON events (at, id);
CREATE INDEX events_model  ON events (model_id, at, id);
CREATE INDEX events_result ON events (result_id);
