-- 0012 (issue 25): a comparison of two runtimes lists the train verdict's
-- regressions and fixes apart from the inference's (compare.ClassifyTrain,
-- the feed's rule for a train event).

-- runtime_current copies the train verdict of each model's newest result
-- on each runtime (results.train_status, and its signature from the
-- verdict matrix), NULL when that result has none.
ALTER TABLE runtime_current ADD COLUMN train_status TEXT;
ALTER TABLE runtime_current ADD COLUMN train_signature TEXT;
UPDATE runtime_current SET train_status = r.train_status, train_signature = r.modes ->> '$.train.signature'
FROM results r
WHERE r.id = runtime_current.result_id AND r.train_status IS NOT NULL;

-- train_pairs count, for every two runtimes x < y (by id) and every two
-- train statuses, the models whose newest results on x and on y both have
-- a train verdict, with those statuses, and their downloads: with them a
-- comparison's headline counts its train lists. A model without a train
-- verdict on one of the two is in no row (and in no train list).
CREATE TABLE train_pairs (
	x_id      INTEGER NOT NULL REFERENCES runtimes (id) ON DELETE CASCADE,
	y_id      INTEGER NOT NULL REFERENCES runtimes (id) ON DELETE CASCADE,
	x_train   TEXT NOT NULL,
	y_train   TEXT NOT NULL,
	models    INTEGER NOT NULL,
	downloads INTEGER NOT NULL,
	PRIMARY KEY (x_id, y_id, x_train, y_train),
	CHECK (x_id < y_id)
) WITHOUT ROWID;
INSERT INTO train_pairs (x_id, y_id, x_train, y_train, models, downloads)
SELECT x.runtime_id, y.runtime_id, x.train_status, y.train_status, count(*), sum(m.downloads)
FROM runtime_current x
JOIN runtime_current y ON y.model_id = x.model_id AND y.runtime_id > x.runtime_id
JOIN models m ON m.id = x.model_id
WHERE x.train_status IS NOT NULL AND y.train_status IS NOT NULL
GROUP BY x.runtime_id, y.runtime_id, x.train_status, y.train_status;

-- compare_train_items are the models the kept comparisons' train lists
-- name (train_fixed, train_regressed; compare.TrainListed), as
-- compare_items are for the inference lists. train_items says a kept
-- comparison's train lists are built: the store builds those of the
-- comparisons kept before this migration (0) on open, with the one rule,
-- so this migration fills none.
ALTER TABLE compare_pairs ADD COLUMN train_items INTEGER NOT NULL DEFAULT 0;
CREATE TABLE compare_train_items (
	base_id  INTEGER NOT NULL,
	head_id  INTEGER NOT NULL,
	model_id TEXT NOT NULL REFERENCES models (id) ON UPDATE CASCADE ON DELETE CASCADE,
	kind     TEXT NOT NULL,
	PRIMARY KEY (base_id, head_id, model_id),
	FOREIGN KEY (base_id, head_id) REFERENCES compare_pairs (base_id, head_id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX compare_train_items_kind  ON compare_train_items (base_id, head_id, kind, model_id);
CREATE INDEX compare_train_items_model ON compare_train_items (model_id);
