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
	sqlSchemaVersion = `SELECT ifnull(max(version), 0) FROM schema_migrations`
	// sqlWriteNothing needs the write lock and changes no row.
	sqlWriteNothing     = `UPDATE schema_migrations SET version = version WHERE version < 0`
	sqlRenewEpoch       = `UPDATE database_epoch SET epoch = lower(hex(randomblob(8))) WHERE id = 1`
	sqlMigrationApplied = `SELECT count(*) FROM schema_migrations WHERE version = ?`
	sqlRecordMigration  = `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`

	sqlTouch   = `UPDATE state SET changed_at = max(changed_at + 1, ?) WHERE id = 1`
	sqlChanged = `SELECT changed_at FROM state WHERE id = 1`

	sqlBackup    = `VACUUM INTO ?`
	sqlIntegrity = `PRAGMA integrity_check`
	// sqlQuickCheck reports at most 5 findings (a pragma takes no
	// parameters); one "ok" when none.
	sqlQuickCheck = `PRAGMA quick_check(5)`
	sqlOptimize   = `PRAGMA optimize`
)

// Models and aliases.
const (
	modelCols = `m.id, m.task, m.library, m.downloads, m.likes, m.gated, m.sha, m.tags, m.last_modified, m.readiness`

	// sqlUpsertModel writes a model; an unchanged row is left alone (no
	// write, updated_at kept).
	sqlUpsertModel = `INSERT INTO models (id, org, task, library, downloads, likes, gated, sha, tags, last_modified, first_seen, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)` + upsertModelSet
	// upsertModelSet is how a listed model's row replaces the one stored.
	// org is not set again: it follows from the id, which is the same, and
	// setting it would rewrite the row's entry in models_org.
	upsertModelSet = `
ON CONFLICT (id) DO UPDATE SET
	task = excluded.task, library = excluded.library, downloads = excluded.downloads,
	likes = excluded.likes, gated = excluded.gated, sha = excluded.sha, tags = excluded.tags,
	last_modified = excluded.last_modified, updated_at = excluded.updated_at
WHERE (task, library, downloads, likes, gated, sha, tags, last_modified)
	IS NOT (excluded.task, excluded.library, excluded.downloads, excluded.likes, excluded.gated, excluded.sha, excluded.tags, excluded.last_modified)`
	sqlModelExists = `SELECT count(*) FROM models WHERE id = ?`
	// sqlListedRow is what a listing sets of a model's row; sqlListedRows
	// the same of every model, with its id.
	sqlListedRow  = `SELECT task, library, downloads, likes, gated, sha, tags, last_modified FROM models WHERE id = ?`
	sqlListedRows = `SELECT id, task, library, downloads, likes, gated, sha, tags, last_modified FROM models`
	sqlAliases    = `SELECT alias FROM model_aliases`
	// sqlEnsureCurrent gives a model its row on each target of a JSON
	// array (?1), and keeps the rows' copies of downloads and likes in step.
	sqlEnsureCurrent = `INSERT INTO current (target, model_id, downloads, likes)
SELECT t.value, ?2, ?3, ?4 FROM json_each(?1) t WHERE true
ON CONFLICT (target, model_id) DO UPDATE SET downloads = excluded.downloads, likes = excluded.likes
WHERE (downloads, likes) IS NOT (excluded.downloads, excluded.likes)`
	// sqlCurrentDownloads and sqlCurrentLikes keep a model's current rows'
	// copies of one column in step.
	sqlCurrentDownloads = `UPDATE current SET downloads = ?2 WHERE model_id = ?1 AND downloads <> ?2`
	sqlCurrentLikes     = `UPDATE current SET likes = ?2 WHERE model_id = ?1 AND likes <> ?2`
	// sqlFillCurrent gives every model a row on a target (a target new to
	// this binary); it writes nothing when all have one.
	sqlFillCurrent = `INSERT INTO current (target, model_id, downloads, likes)
SELECT ?1, id, downloads, likes FROM models m
WHERE NOT EXISTS (SELECT 1 FROM current c WHERE c.target = ?1 AND c.model_id = m.id)`
	// sqlTalliedModels is how many models there are, and sqlTargetRows how
	// many current rows a target has, both as the tallies count them (a
	// model counts in one task tallies row, a current row in one status
	// tallies row): a few rows each, where counting reads an index of
	// every model.
	sqlTalliedModels = `SELECT ifnull(sum(models), 0) FROM task_tallies`
	sqlTargetRows    = `SELECT ifnull(sum(models), 0) FROM status_tallies WHERE target = ?`
	// These count a target's current rows anew.
	sqlDropStatusTallies  = `DELETE FROM status_tallies WHERE target = ?`
	sqlCountStatusTallies = `INSERT INTO status_tallies (target, status_rank, models, downloads)
SELECT target, status_rank, count(*), sum(downloads) FROM current WHERE target = ?1 GROUP BY status_rank`
	sqlDropFailTallies  = `DELETE FROM fail_tallies WHERE target = ?`
	sqlCountFailTallies = `INSERT INTO fail_tallies (target, fail_key, models, downloads)
SELECT target, fail_key, count(*), sum(downloads) FROM current WHERE target = ?1 AND fail_key IS NOT NULL GROUP BY fail_key`
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
	sqlResetCurrent = `UPDATE current SET result_id = NULL, status = NULL, status_rank = ?, untested = 1,
	tested_at = 0, no_tokens = 1, tokens_per_s = 0, fail_key = NULL, failure_class = NULL, op = NULL
WHERE model_id = ?`
	// sqlNewestPerTarget is a model's newest result on each target.
	sqlNewestPerTarget = `SELECT id, target, status, tested_at, tokens_per_s, signature, failure_class, op FROM (
	SELECT id, target, status, tested_at, tokens_per_s, signature, failure_class, op,
		row_number() OVER (PARTITION BY target ORDER BY tested_at DESC, id DESC) AS n
	FROM results WHERE model_id = ?
) WHERE n = 1`

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
	// resultCols are read from resultFrom.
	resultCols = `r.id, r.scan_id, r.target, r.status, r.stage, r.failure_class, r.op, r.reason, r.signature, r.message,
	r.mode, r.revision, r.tested_at, r.duration_s, r.runtime, r.metrics, r.stages, l.log_tail, r.task, r.repro,
	r.continuation, r.worker, r.worker_tested_at, r.devices_used, r.sharding, r.modes, r.precision_sensitive, r.tpu_ops`
	resultFrom = `results r LEFT JOIN result_logs l ON l.result_id = r.id`
	logJoin    = ` LEFT JOIN result_logs l ON l.result_id = r.id`
	// resultColsNoLog is resultCols without the log tail (and its join)
	// and the continuation, for lists.
	resultColsNoLog = `r.id, r.scan_id, r.target, r.status, r.stage, r.failure_class, r.op, r.reason, r.signature, r.message,
	r.mode, r.revision, r.tested_at, r.duration_s, r.runtime, r.metrics, r.stages, NULL, r.task, r.repro, NULL, r.worker,
	r.worker_tested_at, r.devices_used, r.sharding, r.modes, r.precision_sensitive, r.tpu_ops`

	sqlInsertResult = `INSERT INTO results (model_id, scan_id, target, status, stage, failure_class, op, reason, signature, message,
	mode, revision, tested_at, duration_s, runtime, runtime_key, torch, torch_tpu, transformers, harness,
	metrics, tokens_per_s, stages, task, repro, continuation, worker, worker_tested_at, devices_used, sharding,
	modes, train_status, precision_sensitive, tpu_ops, ops_trace)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING
RETURNING id`
	sqlInsertLog       = `INSERT INTO result_logs (result_id, log_tail) VALUES (?, ?)`
	sqlDuplicateInScan = `SELECT id FROM results
WHERE model_id = ? AND target = ? AND revision = ? AND runtime_key = ? AND scan_id = ?`
	sqlDuplicateUnscanned = `SELECT id FROM results
WHERE model_id = ? AND target = ? AND revision = ? AND runtime_key = ? AND tested_at = ? AND scan_id IS NULL`

	sqlGetCurrent = `SELECT result_id, status, tested_at FROM current WHERE target = ? AND model_id = ?`
	// sqlLastVerdict is the status of a model's newest result on a target
	// before a given one (tested_at ?3, id ?4) that is not an error.
	sqlLastVerdict = `SELECT status FROM results
WHERE model_id = ?1 AND target = ?2 AND status <> 'error' AND (tested_at < ?3 OR (tested_at = ?3 AND id < ?4))
ORDER BY tested_at DESC, id DESC LIMIT 1`
	// sqlLastTrain is the train status of a model's newest result on a
	// target before a given one that has a train verdict other than error.
	sqlLastTrain = `SELECT train_status FROM results
WHERE model_id = ?1 AND target = ?2 AND train_status IS NOT NULL AND train_status <> 'error'
	AND (tested_at < ?3 OR (tested_at = ?3 AND id < ?4))
ORDER BY tested_at DESC, id DESC LIMIT 1`
	// sqlSetCurrent points a model's row on a target at a result.
	sqlSetCurrent = `INSERT INTO current (target, model_id, result_id, status, status_rank, untested, tested_at,
	no_tokens, tokens_per_s, fail_key, failure_class, op, downloads, likes)
SELECT ?1, ?2, ?3, ?4, ?5, 0, ?6, ?7, ?8, ?9, ?10, ?11, downloads, likes FROM models WHERE id = ?2
ON CONFLICT (target, model_id) DO UPDATE SET
	result_id = excluded.result_id, status = excluded.status, status_rank = excluded.status_rank, untested = 0,
	tested_at = excluded.tested_at, no_tokens = excluded.no_tokens, tokens_per_s = excluded.tokens_per_s,
	fail_key = excluded.fail_key, failure_class = excluded.failure_class, op = excluded.op`

	sqlCurrentResult = `SELECT ` + resultCols + `
FROM current c JOIN results r ON r.id = c.result_id` + logJoin + `
WHERE c.model_id = ? AND c.target = ?`
	sqlCurrentResults = `SELECT ` + resultCols + `
FROM current c JOIN results r ON r.id = c.result_id` + logJoin + `
WHERE c.model_id = ? AND c.target <> ''
ORDER BY CASE c.target WHEN 'tpu' THEN 0 WHEN 'cpu' THEN 1 WHEN 'cuda' THEN 2 ELSE 3 END, c.target`
	sqlHistory = `SELECT ` + resultCols + `
FROM ` + resultFrom + ` WHERE r.model_id = ? ORDER BY r.tested_at DESC, r.id DESC LIMIT ?`
	sqlHistoryTarget = `SELECT ` + resultCols + `
FROM ` + resultFrom + ` WHERE r.model_id = ? AND r.target = ? ORDER BY r.tested_at DESC, r.id DESC LIMIT ?`

	// sqlTaskTallies is the models and their downloads per task (the
	// pipeline tag, else the newest result's) and library, with whether
	// they have a result and whether it refused their library.
	sqlTaskTallies = `SELECT task, library, tested, library_rejected, models, downloads FROM task_tallies
WHERE models > 0 ORDER BY 1, 2, 3, 4`
	// sqlLatestRuntime is the runtime of the newest result on a target
	// ('' = any): the newest of the current ones.
	sqlLatestRuntime = `SELECT r.runtime FROM current c JOIN results r ON r.id = c.result_id
WHERE c.target = ? AND c.untested = 0 ORDER BY c.tested_at DESC, c.model_id LIMIT 1`
)

// Events.
const (
	// The stage: the event's own (migration 0019: a serving change, which
	// has no result row), else its result's.
	eventCols = `e.id, e.model_id, e.target, e.kind, e.from_status, e.to_status, e.revision, e.runtime, e.signature, e.message, e.at,
	coalesce(e.stage, CASE WHEN e.kind IN ('train_regression', 'train_fix') THEN json_extract(r.modes, '$.train.stage') ELSE r.stage END), e.epoch,
	r.devices_used`
	// eventFrom joins an event to its result, for the stage it ended at and
	// the devices it ran on.
	eventFrom = ` FROM events e LEFT JOIN results r ON r.id = e.result_id`
	// An event is written in the database's epoch (migrations/0014_epoch.sql).
	sqlInsertEvent = `INSERT INTO events (model_id, result_id, target, kind, from_status, to_status, revision, runtime, signature, message, at, stage, epoch)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT epoch FROM database_epoch WHERE id = 1))
RETURNING id, epoch`
	sqlEvents      = `SELECT ` + eventCols + eventFrom + ` ORDER BY e.at DESC, e.id DESC LIMIT ?`
	sqlModelEvents = `SELECT ` + eventCols + eventFrom + ` WHERE e.model_id = ? ORDER BY e.at DESC, e.id DESC LIMIT ?`
)

// Scans.
const (
	scanCols = `id, triggered_by, status, target, params, started_at, finished_at, planned, done, probed, unchanged, error, device_busy, runtime,
	stalled_since, fleet_note`
	sqlStartScan = `INSERT INTO scans (triggered_by, status, target, params, started_at, planned, done, probed, unchanged, runtime)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	sqlScanProgress    = `UPDATE scans SET planned = ?, done = ?, probed = ?, unchanged = ? WHERE id = ?`
	sqlFinishScan      = `UPDATE scans SET status = ?, error = ?, device_busy = ?, finished_at = ? WHERE id = ?`
	sqlGetScan         = `SELECT ` + scanCols + ` FROM scans WHERE id = ?`
	sqlListScans       = `SELECT ` + scanCols + ` FROM scans ORDER BY id DESC LIMIT ?`
	sqlMarkInterrupted = `UPDATE scans SET status = 'interrupted', finished_at = ? WHERE id = ? AND status = 'running'`
	sqlScanOwner       = `UPDATE scans SET owner = ?, owner_seen = ? WHERE id = ?`
)

// Summary and failures.
const (
	// sqlStatusCounts is the models and their downloads per status rank on a target.
	sqlStatusCounts = `SELECT status_rank, models, downloads FROM status_tallies WHERE target = ? AND models > 0`
	// sqlFailureGroups is the models and their downloads per root cause
	// on a target (the fail tallies), most downloads first.
	sqlFailureGroups = `SELECT fail_key, models, downloads FROM fail_tallies
WHERE target = ? AND models > 0
ORDER BY downloads DESC, fail_key LIMIT ?`
	// sqlFailureExamples are a root cause's most downloaded models.
	sqlFailureExamples = `SELECT model_id, failure_class, op, status FROM current
WHERE target = ? AND fail_key = ? ORDER BY downloads DESC, model_id LIMIT ?`
	sqlTotalDownloads = `SELECT ifnull(sum(downloads), 0) FROM status_tallies WHERE target = ?`
)

// ListModels fragments: the page is chosen on current (and models, for
// filters on their columns) by an index walk; results are joined to the
// page's rows alone.
const (
	listPageHead = `WITH page AS MATERIALIZED (
SELECT c.model_id AS id%s
FROM current c%s
WHERE c.target = ?`
	listJoinModels = ` JOIN models m ON m.id = c.model_id`
	listPageTail   = `
ORDER BY %s
LIMIT ?)
SELECT page.id%s, ` + modelCols + `, ` + resultColsNoLog + `
FROM page JOIN models m ON m.id = page.id
JOIN current c ON c.target = ? AND c.model_id = page.id
LEFT JOIN results r ON r.id = c.result_id
ORDER BY %s`

	listWhereQ     = `c.model_id LIKE ? ESCAPE '\'`
	listWhereTask  = `m.task = ?`
	listWhereOrg   = `m.org = ?` // org is COLLATE NOCASE
	listStatusIn   = `c.status_rank IN (%s)`
	listTrainIn    = `c.result_id IN (SELECT id FROM results WHERE train_status IN (%s))`
	listModelID    = `c.model_id`
	listDownloads  = `c.downloads`
	listLikes      = `c.likes`
	listStatusRank = `c.status_rank`
	listUntested   = `c.untested`
	listTested     = `c.tested_at`
	listNoTokens   = `c.no_tokens`
	listTokens     = `c.tokens_per_s`
)
