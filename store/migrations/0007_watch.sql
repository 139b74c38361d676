-- 0007: watching and asking (issue 27). Test requests that anyone may
-- make (POST /api/v1/requests), run when the scan service is idle; and the
-- deliveries of outgoing webhooks, so that a restart loses none.

-- test_requests are the models people asked to be tested. A request is
-- queued, then running (claimed by a scan), then done (the scan recorded
-- a result for the model) or failed (it did not). At most one request per
-- model is open (queued or running). No client address is kept.
CREATE TABLE test_requests (
	id          INTEGER PRIMARY KEY,
	model_id    TEXT NOT NULL COLLATE NOCASE, -- the Hub's id for it (after renames)
	state       TEXT NOT NULL,                -- queued, running, done, failed
	created_at  INTEGER NOT NULL,
	started_at  INTEGER,
	finished_at INTEGER,
	scan_id     INTEGER REFERENCES scans (id) ON DELETE SET NULL,
	status      TEXT NOT NULL DEFAULT '',     -- the model's result status when done
	message     TEXT NOT NULL DEFAULT ''      -- why it failed
);
CREATE UNIQUE INDEX test_requests_open ON test_requests (model_id) WHERE state IN ('queued', 'running');
CREATE INDEX test_requests_queue ON test_requests (state, id);

-- webhook_cursor is the newest event (by id) whose deliveries are queued.
CREATE TABLE webhook_cursor (
	id       INTEGER PRIMARY KEY CHECK (id = 1),
	event_id INTEGER NOT NULL
);

-- webhook_deliveries are the changes to POST to each webhook: pending
-- until a 2xx answer (delivered) or a day old (expired). endpoint is a
-- hash of the webhook's URL (watch.Webhook.Key), never the URL; body is
-- the JSON payload as it is signed and sent, every time.
CREATE TABLE webhook_deliveries (
	id         INTEGER PRIMARY KEY,
	endpoint   TEXT NOT NULL,
	event_id   INTEGER NOT NULL,
	body       BLOB NOT NULL,
	state      TEXT NOT NULL,              -- pending, delivered, expired
	attempts   INTEGER NOT NULL DEFAULT 0,
	last_error TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	next_at    INTEGER NOT NULL,           -- the next try, while pending
	done_at    INTEGER,
	UNIQUE (endpoint, event_id)
);
CREATE INDEX webhook_due ON webhook_deliveries (endpoint, next_at, id) WHERE state = 'pending';
CREATE INDEX webhook_pending_age ON webhook_deliveries (created_at) WHERE state = 'pending';
