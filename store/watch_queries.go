package store

// The SQL of test requests and webhook deliveries (migrations/0007_watch.sql; watch.go).
const (
	// requestCols are read by getRequest; the last is the request's place
	// in the queue (0 unless queued).
	requestCols = `q.id, q.model_id, q.state, q.created_at, q.started_at, q.finished_at, q.scan_id, q.status, q.message,
	CASE WHEN q.state = 'queued' THEN (SELECT count(*) FROM test_requests o WHERE o.state = 'queued' AND o.id <= q.id) ELSE 0 END`
	sqlGetRequest        = `SELECT ` + requestCols + ` FROM test_requests q WHERE q.id = ?`
	sqlOpenRequest       = `SELECT ` + requestCols + ` FROM test_requests q WHERE q.model_id = ? AND q.state IN ('queued', 'running')`
	sqlCountOpenRequests = `SELECT count(*) FROM test_requests WHERE state IN ('queued', 'running')`
	sqlAddRequest        = `INSERT INTO test_requests (model_id, state, created_at) VALUES (?, 'queued', ?) RETURNING id`
	sqlQueuedRequests    = `SELECT id FROM test_requests WHERE state = 'queued' ORDER BY id LIMIT ?`
	sqlClaimRequest      = `UPDATE test_requests SET state = 'running', started_at = ? WHERE id = ? AND state = 'queued'`
	sqlFinishRequest     = `UPDATE test_requests SET state = ?, finished_at = ?, scan_id = ?, status = ?, message = ?
WHERE id = ? AND state IN ('queued', 'running')`
	sqlRequeueRequest = `UPDATE test_requests SET state = 'queued', started_at = NULL, message = ?
WHERE id = ? AND state IN ('queued', 'running')`
	sqlRequeueRunning = `UPDATE test_requests SET state = 'queued', started_at = NULL WHERE state = 'running'`

	sqlStartCursor = `INSERT INTO webhook_cursor (id, event_id) SELECT 1, coalesce(max(id), 0) FROM events WHERE true
ON CONFLICT (id) DO NOTHING`
	sqlGetCursor     = `SELECT event_id FROM webhook_cursor WHERE id = 1`
	sqlMoveCursor    = `UPDATE webhook_cursor SET event_id = max(event_id, ?) WHERE id = 1`
	sqlEventsAfter   = `SELECT ` + eventCols + eventFrom + ` WHERE e.id > ? ORDER BY e.id LIMIT ?`
	sqlQueueDelivery = `INSERT INTO webhook_deliveries (endpoint, event_id, body, state, created_at, next_at, uid)
VALUES (?1, ?2, ?3, 'pending', ?4, ?4, ?5) ON CONFLICT (endpoint, event_id) DO NOTHING`
	sqlDueDeliveries = `SELECT id, endpoint, event_id, body, attempts, created_at, uid FROM webhook_deliveries
WHERE endpoint = ? AND state = 'pending' AND next_at <= ? ORDER BY id LIMIT ?`
	sqlNextDelivery     = `SELECT min(next_at) FROM webhook_deliveries WHERE endpoint = ? AND state = 'pending'`
	sqlDeliveryDone     = `UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, done_at = ?, last_error = '' WHERE id = ? AND state = 'pending'`
	sqlDeliveryFailed   = `UPDATE webhook_deliveries SET attempts = attempts + 1, next_at = ?, last_error = ? WHERE id = ? AND state = 'pending'`
	sqlDeliveryRefused  = `UPDATE webhook_deliveries SET state = 'refused', attempts = attempts + 1, done_at = ?, last_error = ? WHERE id = ? AND state = 'pending'`
	sqlExpireDeliveries = `UPDATE webhook_deliveries SET state = 'expired', done_at = ?
WHERE state = 'pending' AND created_at < ? RETURNING endpoint`
	sqlDeliveryStates = `SELECT endpoint, state, count(*), min(CASE WHEN state = 'pending' THEN created_at END),
	min(CASE WHEN state = 'pending' THEN next_at END) FROM webhook_deliveries GROUP BY endpoint, state`
	// The newest error of a pending delivery's try, per endpoint.
	sqlDeliveryLastErrors = `SELECT endpoint, last_error FROM (SELECT endpoint, last_error,
	row_number() OVER (PARTITION BY endpoint ORDER BY next_at DESC, id DESC) AS n
	FROM webhook_deliveries WHERE state = 'pending' AND last_error <> '') WHERE n = 1`
	sqlRefusedDeliveries = `SELECT endpoint, uid, id, event_id, done_at, last_error FROM (SELECT *,
	row_number() OVER (PARTITION BY endpoint ORDER BY done_at DESC, id DESC) AS n
	FROM webhook_deliveries WHERE state = 'refused') WHERE n <= ? ORDER BY endpoint, done_at DESC, id DESC`
	sqlForgetDeliveries  = `DELETE FROM webhook_deliveries WHERE state <> 'pending' AND done_at < ?`
	sqlPendingDeliveries = `SELECT endpoint, count(*) FROM webhook_deliveries WHERE state = 'pending' GROUP BY endpoint`
)
