-- 0010 (modes, issue 25): asked for as 0011_modes.sql; numbered 0010 here so that the
-- versions stay consecutive after main's 0009_scale. The lead may renumber it at merge.

-- The verdict matrix (issue 25): JSON map[string]compat.Verdict of the
-- probe's ways of running the model (train, compiled, eager modes), NULL
-- in results from before it; train_status is its train verdict's status,
-- for the filters and the train regressions; precision_sensitive says the
-- numerics passed on tpu only at Precision.HIGHEST.
ALTER TABLE results ADD COLUMN modes TEXT;
ALTER TABLE results ADD COLUMN train_status TEXT;
ALTER TABLE results ADD COLUMN precision_sensitive INTEGER NOT NULL DEFAULT 0;
