-- 0016 (issue 40): the measured serving probe's newest verdict per model
-- (internal/serving/measure, run by a scan with --vllm-python): its own
-- table and its own runtime key (vllm-torchtpu~torch~torch_tpu~libtpu),
-- never a row of results (the inference verdict stays as it was).
CREATE TABLE serving_results (
	model_id    TEXT PRIMARY KEY REFERENCES models (id) ON UPDATE CASCADE ON DELETE CASCADE,
	runtime_key TEXT NOT NULL,
	status      TEXT NOT NULL,
	measured_at INTEGER NOT NULL, -- unix nanoseconds
	result      TEXT NOT NULL     -- serving.Measured as JSON
) WITHOUT ROWID;
