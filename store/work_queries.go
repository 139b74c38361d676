package store

// The work queue's SQL (migrations/*_work_queue.sql; work.go).
const (
	sqlSeeWorker = `INSERT INTO workers (id, host, version, target, runtime_key, runtime, devices, memory_bytes, first_seen, last_seen, serving)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10)
ON CONFLICT (id) DO UPDATE SET host = excluded.host, version = excluded.version, target = excluded.target,
	runtime_key = excluded.runtime_key, runtime = excluded.runtime, devices = excluded.devices,
	memory_bytes = excluded.memory_bytes, last_seen = max(last_seen, excluded.last_seen), left_at = NULL,
	serving = excluded.serving`
	sqlTouchWorker = `UPDATE workers SET last_seen = max(last_seen, ?) WHERE id = ?`
	sqlWorkerDone  = `UPDATE workers SET jobs_done = jobs_done + 1, last_seen = max(last_seen, ?) WHERE id = ?`
	sqlListWorkers = `SELECT w.id, w.host, w.version, w.target, w.runtime, w.devices, w.memory_bytes,
	w.first_seen, w.last_seen, w.left_at, w.jobs_done, w.serving,
	(SELECT count(*) FROM jobs j WHERE j.state = 'leased' AND j.worker_id = w.id)
FROM workers w ORDER BY w.last_seen DESC, w.id LIMIT ?`

	sqlInsertJob = `INSERT INTO jobs (scan_id, rank, model_id, target, runtime_key, spec, state, updated_at, devices)
VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?)`
	// jobCols are read by scanJob.
	jobCols = `id, scan_id, model_id, runtime_key, spec, state, lease_id, worker_id, expires_at, attempts, lost, last_worker`
	// sqlNextJobs are the queued jobs a worker can hold (fleet.Holds: its
	// target, runtime and at most its devices), in queue order.
	sqlNextJobs = `SELECT ` + jobCols + ` FROM jobs
WHERE state = 'queued' AND target = ? AND runtime_key = ? AND devices <= ? ORDER BY scan_id, rank LIMIT ?`
	sqlJobByLease = `SELECT ` + jobCols + ` FROM jobs WHERE lease_id = ?`
	sqlDueJobs    = `SELECT ` + jobCols + ` FROM jobs WHERE state = 'leased' AND expires_at <= ? ORDER BY id`
	sqlSetJob     = `UPDATE jobs SET state = ?, lease_id = ?, worker_id = ?, expires_at = ?, attempts = ?, lost = ?,
	last_worker = ?, updated_at = ? WHERE id = ?`
	sqlScanRuntime = `SELECT runtime FROM scans WHERE id = ?`
	sqlScanJobs    = `SELECT state, count(*) FROM jobs WHERE scan_id = ? GROUP BY state`
	sqlOpenJobs    = `SELECT target, runtime_key, state, count(*) FROM jobs
WHERE state IN ('queued', 'leased') GROUP BY target, runtime_key, state`
	sqlLostLeases   = `SELECT coalesce(sum(lost), 0) FROM jobs`
	sqlOpenScanJobs = `SELECT ` + jobCols + ` FROM jobs WHERE scan_id = ? AND state IN ('queued', 'leased') ORDER BY id`
	// sqlQueuedScanJobs is a scan's queued jobs (withdrawn when it ends;
	// leased ones may finish).
	sqlQueuedScanJobs = `SELECT ` + jobCols + ` FROM jobs WHERE scan_id = ? AND state = 'queued' ORDER BY id`
	sqlScanStatus     = `SELECT status FROM scans WHERE id = ?`
	// sqlInFlightElsewhere is a model's leased jobs of scans that ended.
	sqlInFlightElsewhere = `SELECT ` + jobCols + ` FROM jobs
WHERE model_id = ? AND state = 'leased' AND scan_id <> ?2
	AND scan_id IN (SELECT id FROM scans WHERE status <> 'running')`
	sqlAdoptJob      = `UPDATE jobs SET scan_id = ?, rank = ? WHERE id = ?`
	sqlScanQueueKeys = `SELECT DISTINCT target, runtime_key, devices FROM jobs WHERE scan_id = ? AND state = 'queued' ORDER BY target, runtime_key, devices`
	sqlScanStall     = `UPDATE scans SET stalled_since = ?, fleet_note = ? WHERE id = ?`
	// sqlReplannedJobs is a scan's queued jobs of a target planned for
	// another runtime key than the fleet's; sqlReplanJob moves one.
	sqlReplannedJobs = `SELECT ` + jobCols + ` FROM jobs
WHERE scan_id = ? AND target = ? AND state = 'queued' AND runtime_key <> ? ORDER BY id`
	sqlReplanJob     = `UPDATE jobs SET runtime_key = ?, spec = ?, updated_at = ? WHERE id = ?`
	sqlReplanScan    = `UPDATE scans SET runtime = ?, stalled_since = NULL, fleet_note = ? WHERE id = ?`
	sqlForgetWorkers = `DELETE FROM workers WHERE last_seen < ?
	AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.state = 'leased' AND j.worker_id = workers.id)`
	sqlLeaveWorker = `UPDATE workers SET left_at = ? WHERE id = ?`
	// sqlRunningScansJobs is every running scan with its owner, its
	// owner's last renewal, how many of its jobs are open and how many it
	// has.
	sqlRunningScansJobs = `SELECT s.id, s.owner, s.owner_seen,
	(SELECT count(*) FROM jobs j WHERE j.scan_id = s.id AND j.state IN ('queued', 'leased')),
	(SELECT count(*) FROM jobs j WHERE j.scan_id = s.id)
FROM scans s WHERE s.status = 'running'`
	// sqlAdoptScan takes a running scan over from the owner found gone,
	// unless someone else did meanwhile.
	sqlAdoptScan  = `UPDATE scans SET owner = ?, owner_seen = ? WHERE id = ? AND status = 'running' AND owner = ?`
	sqlRenewOwner = `UPDATE scans SET owner_seen = ? WHERE id = ? AND status = 'running' AND owner = ?`
)
