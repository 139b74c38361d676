package store

// All SQL of the store, apart from the schema in migrations/. ListModels
// assembles its query from the fragments at the end of this file.

// Migrations and state.
const (
	sqlCreateMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at INTEGER NOT NULL
)`
	sqlSchemaVersion    = `SELECT ifnull(max(version), 0) FROM schema_migrations`
	sqlMigrationApplied = `SELECT count(*) FROM schema_migrations WHERE version = ?`
	sqlRecordMigration  = `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`

	sqlTouch   = `UPDATE state SET changed_at = max(changed_at + 1, ?) WHERE id = 1`
	sqlChanged = `SELECT changed_at FROM state WHERE id = 1`

	sqlBackup    = `VACUUM INTO ?`
	sqlIntegrity = `PRAGMA integrity_check`
	sqlOptimize  = `PRAGMA optimize`
)

// Models and aliases.
const (
	modelCols = `m.id, m.task, m.library, m.downloads, m.likes, m.gated, m.sha, m.tags, m.last_modified`

	// sqlUpsertModel writes a model; an unchanged row is left alone (no
	// write, updated_at kept).
	sqlUpsertModel = `INSERT INTO models (id, org, task, library, downloads, likes, gated, sha, tags, last_modified, first_seen, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
	org = excluded.org, task = excluded.task, library = excluded.library, downloads = excluded.downloads,
	likes = excluded.likes, gated = excluded.gated, sha = excluded.sha, tags = excluded.tags,
	last_modified = excluded.last_modified, updated_at = excluded.updated_at
WHERE (task, library, downloads, likes, gated, sha, tags, last_modified)
	IS NOT (excluded.task, excluded.library, excluded.downloads, excluded.likes, excluded.gated, excluded.sha, excluded.tags, excluded.last_modified)`
	sqlModelExists = `SELECT count(*) FROM models WHERE id = ?`
	// sqlDropAlias removes an alias that has become a model's own id.
	sqlDropAlias   = `DELETE FROM model_aliases WHERE alias = ?`
	sqlUpsertAlias = `INSERT INTO model_aliases (alias, model_id) VALUES (?, ?)
ON CONFLICT (alias) DO UPDATE SET model_id = excluded.model_id WHERE model_id IS NOT excluded.model_id`

	// Merging an old id (now an alias) into the model it was renamed to.
	// Results that the new id already has (the same probe) stay behind and
	// go with the old row.
	sqlMergeResults = `UPDATE OR IGNORE results SET model_id = ? WHERE model_id = ?`
	sqlMergeEvents  = `UPDATE events SET model_id = ? WHERE model_id = ?`
	sqlMergeAliases = `UPDATE model_aliases SET model_id = ? WHERE model_id = ?`
	sqlDeleteModel  = `DELETE FROM models WHERE id = ?`
	sqlClearCurrent = `DELETE FROM current WHERE model_id = ?`
	// sqlRebuildCurrent sets a model's current rows from its results: the
	// newest per target, and the newest of all under target ''.
	sqlRebuildCurrent = `INSERT INTO current (model_id, target, result_id, status, tested_at, tokens_per_s)
SELECT model_id, target, id, status, tested_at, tokens_per_s FROM (
	SELECT model_id, target, id, status, tested_at, tokens_per_s,
		row_number() OVER (PARTITION BY target ORDER BY tested_at DESC, id DESC) AS n
	FROM results WHERE model_id = ?1
) WHERE n = 1
UNION ALL
SELECT * FROM (
	SELECT model_id, '', id, status, tested_at, tokens_per_s
	FROM results WHERE model_id = ?1 ORDER BY tested_at DESC, id DESC LIMIT 1
)`

	// sqlResolveModel finds a model's id: exact id, then alias (any case),
	// then id in any case.
	sqlResolveModel = `SELECT id FROM (
	SELECT id, 0 AS p FROM models WHERE id = ?1
	UNION ALL SELECT model_id, 1 FROM model_aliases WHERE alias = ?1
	UNION ALL SELECT id, 2 FROM models WHERE id = ?1 COLLATE NOCASE
) ORDER BY p, id LIMIT 1`
	sqlGetModel     = `SELECT ` + modelCols + ` FROM models m WHERE m.id = ?`
	sqlModelAliases = `SELECT alias FROM model_aliases WHERE model_id = ? ORDER BY alias`
)

// Results and current.
const (
	resultCols = `r.id, r.scan_id, r.target, r.status, r.stage, r.failure_class, r.op, r.reason, r.signature, r.message,
	r.mode, r.revision, r.tested_at, r.duration_s, r.runtime, r.metrics, r.stages, r.log_tail, r.task, r.repro`
	// resultColsNoLog is resultCols without the log tail, for lists.
	resultColsNoLog = `r.id, r.scan_id, r.target, r.status, r.stage, r.failure_class, r.op, r.reason, r.signature, r.message,
	r.mode, r.revision, r.tested_at, r.duration_s, r.runtime, r.metrics, r.stages, NULL, r.task, r.repro`

	sqlInsertResult = `INSERT INTO results (model_id, scan_id, target, status, stage, failure_class, op, reason, signature, message,
	mode, revision, tested_at, duration_s, runtime, runtime_key, torch, torch_tpu, transformers, harness,
	metrics, tokens_per_s, stages, log_tail, task, repro)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING
RETURNING id`
	sqlDuplicateInScan = `SELECT id FROM results
WHERE model_id = ? AND target = ? AND revision = ? AND runtime_key = ? AND scan_id = ?`
	sqlDuplicateUnscanned = `SELECT id FROM results
WHERE model_id = ? AND target = ? AND revision = ? AND runtime_key = ? AND tested_at = ? AND scan_id IS NULL`

	sqlGetCurrent = `SELECT result_id, status, tested_at FROM current WHERE model_id = ? AND target = ?`
	sqlSetCurrent = `INSERT INTO current (model_id, target, result_id, status, tested_at, tokens_per_s) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (model_id, target) DO UPDATE SET
	result_id = excluded.result_id, status = excluded.status, tested_at = excluded.tested_at, tokens_per_s = excluded.tokens_per_s`

	sqlCurrentResult = `SELECT ` + resultCols + `
FROM current c JOIN results r ON r.id = c.result_id WHERE c.model_id = ? AND c.target = ?`
	sqlCurrentResults = `SELECT ` + resultCols + `
FROM current c JOIN results r ON r.id = c.result_id WHERE c.model_id = ? AND c.target <> ''
ORDER BY CASE c.target WHEN 'tpu' THEN 0 WHEN 'cpu' THEN 1 WHEN 'cuda' THEN 2 ELSE 3 END, c.target`
	sqlHistory = `SELECT ` + resultCols + `
FROM results r WHERE r.model_id = ? ORDER BY r.tested_at DESC, r.id DESC LIMIT ?`
	sqlHistoryTarget = `SELECT ` + resultCols + `
FROM results r WHERE r.model_id = ? AND r.target = ? ORDER BY r.tested_at DESC, r.id DESC LIMIT ?`

	sqlLatestRuntime       = `SELECT runtime FROM results ORDER BY tested_at DESC, id DESC LIMIT 1`
	sqlLatestRuntimeTarget = `SELECT runtime FROM results WHERE target = ? ORDER BY tested_at DESC, id DESC LIMIT 1`
)

// Events.
const (
	eventCols      = `e.id, e.model_id, e.target, e.kind, e.from_status, e.to_status, e.revision, e.runtime, e.signature, e.message, e.at`
	sqlInsertEvent = `INSERT INTO events (model_id, result_id, target, kind, from_status, to_status, revision, runtime, signature, message, at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
RETURNING id`
	sqlEvents      = `SELECT ` + eventCols + ` FROM events e ORDER BY e.at DESC, e.id DESC LIMIT ?`
	sqlModelEvents = `SELECT ` + eventCols + ` FROM events e WHERE e.model_id = ? ORDER BY e.at DESC, e.id DESC LIMIT ?`
)

// Scans.
const (
	scanCols     = `id, triggered_by, status, target, params, started_at, finished_at, planned, done, probed, unchanged, error, device_busy, runtime`
	sqlStartScan = `INSERT INTO scans (triggered_by, status, target, params, started_at, planned, done, probed, unchanged, runtime)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	sqlScanProgress    = `UPDATE scans SET planned = ?, done = ?, probed = ?, unchanged = ? WHERE id = ?`
	sqlFinishScan      = `UPDATE scans SET status = ?, error = ?, device_busy = ?, finished_at = ? WHERE id = ?`
	sqlGetScan         = `SELECT ` + scanCols + ` FROM scans WHERE id = ?`
	sqlListScans       = `SELECT ` + scanCols + ` FROM scans ORDER BY id DESC LIMIT ?`
	sqlMarkInterrupted = `UPDATE scans SET status = 'interrupted', finished_at = ? WHERE status = 'running'`
)

// Summary and failures.
const (
	// sqlStatusCounts counts models and sums downloads per current status
	// on a target; NULL is untested.
	sqlStatusCounts = `SELECT c.status, count(*), ifnull(sum(m.downloads), 0)
FROM models m LEFT JOIN current c ON c.model_id = m.id AND c.target = ?
GROUP BY c.status`
	sqlTotalDownloads = `SELECT ifnull(sum(downloads), 0) FROM models`
	// sqlFailing lists the current results held against their models.
	sqlFailing = `SELECT c.model_id, m.downloads, r.signature, r.failure_class, r.op, c.status
FROM current c JOIN results r ON r.id = c.result_id JOIN models m ON m.id = c.model_id
WHERE c.target = ? AND c.status IN ('fail', 'oom', 'timeout', 'crash')
ORDER BY m.downloads DESC, m.id`
)

// ListModels fragments: the page is chosen by the inner query on models and
// current only (the sort keys live there), then joined to results.
const (
	listPageHead = `WITH page AS MATERIALIZED (
SELECT m.id AS id%s
FROM models m LEFT JOIN current c ON c.model_id = m.id AND c.target = ?`
	listPageTail = `
ORDER BY %s
LIMIT ?)
SELECT page.id%s, ` + modelCols + `, ` + resultColsNoLog + `
FROM page JOIN models m ON m.id = page.id
LEFT JOIN current c ON c.model_id = m.id AND c.target = ?
LEFT JOIN results r ON r.id = c.result_id
ORDER BY %s`

	listWhereQ     = `m.id LIKE ? ESCAPE '\'`
	listWhereTask  = `m.task = ?`
	listWhereOrg   = `m.org = ?` // org is COLLATE NOCASE
	listStatusRank = `CASE c.status WHEN 'pass' THEN 0 WHEN 'fail' THEN 1 WHEN 'oom' THEN 2 WHEN 'timeout' THEN 3 WHEN 'crash' THEN 4 WHEN 'skipped' THEN 5 WHEN 'error' THEN 6 ELSE 7 END`
	listTestedNull = `(c.tested_at IS NULL)`
	listTested     = `ifnull(c.tested_at, 0)`
	listTokensNull = `(c.tokens_per_s IS NULL)`
	listTokens     = `ifnull(c.tokens_per_s, 0.0)`
	listUntested   = `c.status IS NULL`
	listStatusIn   = `c.status IN (%s)`
	listModelID    = `m.id`
	listDownloads  = `m.downloads`
	listLikes      = `m.likes`
)
