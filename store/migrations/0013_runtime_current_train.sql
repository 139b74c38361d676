-- 0013 (issue 28): a model's statuses on its runtimes, and their train
-- verdicts' (0012), are read from one index, without the table: the
-- listing's batch reads them for every changed model (sqlBatchRuntimes),
-- the tallier for every model a write touches (sqlStateRows). The index
-- on (model_id, status) no longer covered those reads once train_status
-- was added; this one does (runtime_id rides along as the table's key).
DROP INDEX runtime_current_model;
CREATE INDEX runtime_current_model ON runtime_current (model_id, status, train_status);
