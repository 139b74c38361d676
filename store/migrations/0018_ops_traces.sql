-- 0018 (issue 36): the ops each result traced, kept, so that a new kernel
-- table re-judges the stored predictions (results.tpu_ops) and /ops can
-- judge them against any kept table.

-- op_traces: JSON compat.OpsTrace (forward, generate, train: the op names
-- after tpu_ops.json's renaming, without the notes), once per distinct
-- trace (most models of one architecture trace the same ops); digest is
-- the SHA-256 of that JSON, in hex.
CREATE TABLE op_traces (
	id     INTEGER PRIMARY KEY,
	digest TEXT NOT NULL UNIQUE,
	trace  TEXT NOT NULL
);

-- ops_trace: the result's trace (NULL for a tpu result, a run not traced,
-- and every result stored before 0018, whose tpu_ops stays as judged then).
ALTER TABLE results ADD COLUMN ops_trace INTEGER REFERENCES op_traces (id);
CREATE INDEX results_ops_trace ON results (ops_trace) WHERE ops_trace IS NOT NULL;
