-- 0003: runtimes, for /runtimes, /compare and the feed's runtime items. A
-- runtime is a target and the versions that decide a retest (a results
-- row's target and runtime_key). Comparing two runtimes reads each model's
-- newest result on each, so that is kept here, like current, rather than
-- found among every result ever recorded at each read.

-- runtimes are the runtimes with results, with their first and newest
-- result times. version moves whenever the runtime's runtime_current rows
-- change (the triggers below), so that a comparison of two runtimes can be
-- cached until one of them changes, rather than until anything does.
CREATE TABLE runtimes (
	id           INTEGER PRIMARY KEY,
	target       TEXT NOT NULL,
	runtime_key  TEXT NOT NULL,
	torch        TEXT NOT NULL,
	torch_tpu    TEXT NOT NULL,
	transformers TEXT NOT NULL,
	harness      TEXT NOT NULL,
	first_seen   INTEGER NOT NULL,
	last_seen    INTEGER NOT NULL,
	version      INTEGER NOT NULL DEFAULT 0,
	UNIQUE (target, runtime_key)
);

-- runtime_current has one row per runtime and model with a result on it:
-- the model's newest result there (by tested_at, then id), with copies of
-- its status, signature and failure class, and of the model's downloads
-- (kept in step by UpsertModels), so that a runtime's pass rates are one
-- index walk.
CREATE TABLE runtime_current (
	runtime_id    INTEGER NOT NULL REFERENCES runtimes (id) ON DELETE CASCADE,
	model_id      TEXT NOT NULL REFERENCES models (id) ON UPDATE CASCADE ON DELETE CASCADE,
	result_id     INTEGER NOT NULL REFERENCES results (id) ON DELETE CASCADE,
	tested_at     INTEGER NOT NULL,
	status        TEXT NOT NULL,
	signature     TEXT,
	failure_class TEXT,
	downloads     INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (runtime_id, model_id)
) WITHOUT ROWID;
CREATE INDEX runtime_current_model  ON runtime_current (model_id);
CREATE INDEX runtime_current_result ON runtime_current (result_id);
CREATE INDEX runtime_current_status ON runtime_current (runtime_id, status, downloads);
CREATE TRIGGER runtime_current_insert AFTER INSERT ON runtime_current BEGIN
	UPDATE runtimes SET version = version + 1 WHERE id = NEW.runtime_id;
END;
CREATE TRIGGER runtime_current_update AFTER UPDATE ON runtime_current BEGIN
	UPDATE runtimes SET version = version + 1 WHERE id = NEW.runtime_id;
END;
CREATE TRIGGER runtime_current_delete AFTER DELETE ON runtime_current BEGIN
	UPDATE runtimes SET version = version + 1 WHERE id = OLD.runtime_id;
END;

-- The results recorded before this migration.
INSERT INTO runtimes (target, runtime_key, torch, torch_tpu, transformers, harness, first_seen, last_seen)
SELECT target, runtime_key, min(torch), min(torch_tpu), min(transformers), min(harness), min(tested_at), max(tested_at)
FROM results GROUP BY target, runtime_key;

INSERT INTO runtime_current (runtime_id, model_id, result_id, tested_at, status, signature, failure_class, downloads)
SELECT rt.id, x.model_id, x.id, x.tested_at, x.status, x.signature, x.failure_class, m.downloads
FROM (
	SELECT r.id, r.model_id, r.target, r.runtime_key, r.tested_at, r.status, r.signature, r.failure_class,
		row_number() OVER (PARTITION BY r.target, r.runtime_key, r.model_id ORDER BY r.tested_at DESC, r.id DESC) AS n
	FROM results r
) x
JOIN runtimes rt ON rt.target = x.target AND rt.runtime_key = x.runtime_key
JOIN models m ON m.id = x.model_id
WHERE x.n = 1;
