-- 0019: a serving probe that judged nothing no longer replaces the judged
-- verdict before it (issue 40's follow-up). serving_results keeps, per
-- model, its newest judged verdict (judged = 1: pass, fail, oom, timeout,
-- crash; compat.ServingMeasured.Judged) and its newest probe that judged
-- nothing (judged = 0: the scanner's error, or skipped for want of a CPU
-- reference); the store's read shows the judged one, and the other when it
-- is newer.
CREATE TABLE serving_results_0020 (
	model_id    TEXT NOT NULL REFERENCES models (id) ON UPDATE CASCADE ON DELETE CASCADE,
	judged      INTEGER NOT NULL CHECK (judged IN (0, 1)),
	runtime_key TEXT NOT NULL,
	status      TEXT NOT NULL,
	measured_at INTEGER NOT NULL, -- unix nanoseconds
	result      TEXT NOT NULL,    -- serving.Measured as JSON
	PRIMARY KEY (model_id, judged)
) WITHOUT ROWID;
INSERT INTO serving_results_0020 (model_id, judged, runtime_key, status, measured_at, result)
SELECT model_id, status IN ('pass', 'fail', 'oom', 'timeout', 'crash'), runtime_key, status, measured_at, result FROM serving_results;
DROP TABLE serving_results;
ALTER TABLE serving_results_0020 RENAME TO serving_results;

-- A serving change names the stage its probe ended at (env, load,
-- generate) for a verdict other than pass: it has no result row to take
-- the stage from, as the inference's events do (eventFrom's join).
ALTER TABLE events ADD COLUMN stage TEXT;

-- A fleet worker's serving probe (fleet.Worker.Serving, JSON: the
-- vllm-torchtpu version its --vllm-python reports); NULL: it runs none.
ALTER TABLE workers ADD COLUMN serving TEXT;
