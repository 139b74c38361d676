-- 0017 (issue 36): the TorchTPU kernel table of each runtime, and each
-- result's prediction from it.

-- kernel_tables: which operators a torch_tpu implements, read once per
-- torch and torch_tpu versions (internal/harness/harness_kernels.py):
-- ops is the JSON {operator: "native" | "default" | "fallback"}; the counts
-- are copies of it, for /runtimes.
CREATE TABLE kernel_tables (
	id          INTEGER PRIMARY KEY,
	torch       TEXT NOT NULL,
	torch_tpu   TEXT NOT NULL,
	read_at     INTEGER NOT NULL,
	native      INTEGER NOT NULL,
	default_ops INTEGER NOT NULL,
	fallback    INTEGER NOT NULL,
	ops         TEXT NOT NULL,
	UNIQUE (torch, torch_tpu)
);

-- tpu_ops: JSON compat.TPUOps, the prediction of a result that did not run
-- on a TPU (NULL when none was made).
ALTER TABLE results ADD COLUMN tpu_ops TEXT;
