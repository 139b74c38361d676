-- 0011 (modes, issue 25): after main's 0010_shard, as the lead asked.

-- The verdict matrix (issue 25): JSON map[string]compat.Verdict of the
-- probe's ways of running the model (train, compiled, eager modes), NULL
-- in results from before it; train_status is its train verdict's status,
-- for the filters and the train regressions; precision_sensitive says the
-- numerics passed on tpu only at Precision.HIGHEST.
ALTER TABLE results ADD COLUMN modes TEXT;
ALTER TABLE results ADD COLUMN train_status TEXT;
ALTER TABLE results ADD COLUMN precision_sensitive INTEGER NOT NULL DEFAULT 0;
