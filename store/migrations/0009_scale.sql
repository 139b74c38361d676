-- 0007: tallies kept up to date on write, so that the site's aggregate
-- answers (the summary, the runtimes, a comparison's headline and its
-- pages) read a few rows whatever the number of models and runtimes. The
-- store keeps them in step with every write (tally.go: the change of each
-- model a write touches, before and after); this migration fills them from
-- the rows already stored. A tally row may fall to 0 models; readers skip
-- those.

-- runtime_current no longer copies the models' downloads: a listing that
-- moves a model's downloads rewrote one row per runtime the model has;
-- the runtime tallies below follow downloads instead. Its model index
-- covers the model's statuses, which the tallies read per model.
DROP INDEX runtime_current_status;
DROP INDEX runtime_current_model;
ALTER TABLE runtime_current DROP COLUMN downloads;
CREATE INDEX runtime_current_model ON runtime_current (model_id, status);

-- status_tallies count the current rows (and sum their copies of the
-- models' downloads) per target ('' = any) and status rank: the summary's
-- counts and pass rates.
CREATE TABLE status_tallies (
	target      TEXT NOT NULL,
	status_rank INTEGER NOT NULL,
	models      INTEGER NOT NULL,
	downloads   INTEGER NOT NULL,
	PRIMARY KEY (target, status_rank)
) WITHOUT ROWID;
INSERT INTO status_tallies (target, status_rank, models, downloads)
SELECT target, status_rank, count(*), sum(downloads) FROM current GROUP BY target, status_rank;

-- fail_tallies count the current rows held against their models (and sum
-- their downloads) per target and root cause (current.fail_key): the
-- failure groups.
CREATE TABLE fail_tallies (
	target    TEXT NOT NULL,
	fail_key  TEXT NOT NULL,
	models    INTEGER NOT NULL,
	downloads INTEGER NOT NULL,
	PRIMARY KEY (target, fail_key)
) WITHOUT ROWID;
INSERT INTO fail_tallies (target, fail_key, models, downloads)
SELECT target, fail_key, count(*), sum(downloads) FROM current WHERE fail_key IS NOT NULL GROUP BY target, fail_key;

-- task_tallies count the models and sum their downloads per task (the
-- pipeline tag, else the task of the newest result on any target) and
-- library, with whether they have a result and whether it refused their
-- library (skipped, unsupported_library): the coverage figure.
CREATE TABLE task_tallies (
	task             TEXT NOT NULL,
	library          TEXT NOT NULL,
	tested           INTEGER NOT NULL,
	library_rejected INTEGER NOT NULL,
	models           INTEGER NOT NULL,
	downloads        INTEGER NOT NULL,
	PRIMARY KEY (task, library, tested, library_rejected)
) WITHOUT ROWID;
INSERT INTO task_tallies (task, library, tested, library_rejected, models, downloads)
SELECT CASE WHEN m.task <> '' THEN m.task ELSE ifnull(r.task, '') END,
	m.library, r.id IS NOT NULL, ifnull(r.status = 'skipped' AND r.reason = 'unsupported_library', 0),
	count(*), ifnull(sum(m.downloads), 0)
FROM current c JOIN models m ON m.id = c.model_id LEFT JOIN results r ON r.id = c.result_id
WHERE c.target = ''
GROUP BY 1, 2, 3, 4;

-- fit_tallies count the models whose readiness knows min_devices
-- (generation '') and, per TPU generation, those that need one device.
CREATE TABLE fit_tallies (
	generation TEXT PRIMARY KEY,
	models     INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO fit_tallies (generation, models)
SELECT '', count(*) FROM models WHERE readiness ->> '$.min_devices' IS NOT NULL;
INSERT INTO fit_tallies (generation, models)
SELECT d.key, count(*) FROM models m, json_each(m.readiness, '$.min_devices') d
WHERE m.readiness ->> '$.min_devices' IS NOT NULL AND d.value = 1
GROUP BY d.key;

-- runtime_tallies count, per runtime and status of the models' newest
-- results there, the models and their downloads: the runtimes' pass rates.
CREATE TABLE runtime_tallies (
	runtime_id INTEGER NOT NULL REFERENCES runtimes (id) ON DELETE CASCADE,
	status     TEXT NOT NULL,
	models     INTEGER NOT NULL,
	downloads  INTEGER NOT NULL,
	PRIMARY KEY (runtime_id, status)
) WITHOUT ROWID;
INSERT INTO runtime_tallies (runtime_id, status, models, downloads)
SELECT rc.runtime_id, rc.status, count(*), sum(m.downloads)
FROM runtime_current rc JOIN models m ON m.id = rc.model_id
GROUP BY rc.runtime_id, rc.status;

-- runtime_pairs count, for every two runtimes x < y (by id) and every two
-- statuses, the models with that status of their newest result on x and
-- that on y, and their downloads. With the runtime tallies (the models on
-- one of the two only are the rest) they give any comparison's headline.
CREATE TABLE runtime_pairs (
	x_id      INTEGER NOT NULL REFERENCES runtimes (id) ON DELETE CASCADE,
	y_id      INTEGER NOT NULL REFERENCES runtimes (id) ON DELETE CASCADE,
	x_status  TEXT NOT NULL,
	y_status  TEXT NOT NULL,
	models    INTEGER NOT NULL,
	downloads INTEGER NOT NULL,
	PRIMARY KEY (x_id, y_id, x_status, y_status),
	CHECK (x_id < y_id)
) WITHOUT ROWID;
INSERT INTO runtime_pairs (x_id, y_id, x_status, y_status, models, downloads)
SELECT x.runtime_id, y.runtime_id, x.status, y.status, count(*), sum(m.downloads)
FROM runtime_current x
JOIN runtime_current y ON y.model_id = x.model_id AND y.runtime_id > x.runtime_id
JOIN models m ON m.id = x.model_id
GROUP BY x.runtime_id, y.runtime_id, x.status, y.status;

-- compare_pairs are the comparisons whose lists are kept: each runtime
-- and the one before it on its target (the feed's, and the comparison
-- the site shows by default). compare_items are the models those lists
-- name (fixed, regressed, new, still failing; compare.Listed), so that a
-- page of a list is read without classifying every model. The store
-- settles both with the runtimes' order at every write and on open, so
-- this migration leaves them empty.
CREATE TABLE compare_pairs (
	base_id INTEGER NOT NULL REFERENCES runtimes (id) ON DELETE CASCADE,
	head_id INTEGER NOT NULL REFERENCES runtimes (id) ON DELETE CASCADE,
	PRIMARY KEY (base_id, head_id)
) WITHOUT ROWID;
CREATE TABLE compare_items (
	base_id  INTEGER NOT NULL,
	head_id  INTEGER NOT NULL,
	model_id TEXT NOT NULL REFERENCES models (id) ON UPDATE CASCADE ON DELETE CASCADE,
	kind     TEXT NOT NULL,
	PRIMARY KEY (base_id, head_id, model_id),
	FOREIGN KEY (base_id, head_id) REFERENCES compare_pairs (base_id, head_id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX compare_items_kind  ON compare_items (base_id, head_id, kind, model_id);
CREATE INDEX compare_items_model ON compare_items (model_id);
