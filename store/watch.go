package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// This file keeps what watching and asking need (migrations/0007_watch.sql):
// the test requests anyone may make, and the deliveries of outgoing
// webhooks. Neither changes what the site's cached pages show, so their
// writes leave the change marker (Changed) alone.

// RequestState is where a test request stands.
type RequestState string

// Request states: queued until a scan claims it, running while that scan
// runs, then done (the model has a result) or failed.
const (
	RequestQueued  RequestState = "queued"
	RequestRunning RequestState = "running"
	RequestDone    RequestState = "done"
	RequestFailed  RequestState = "failed"
)

// ErrQueueFull is AddRequest's error when the open requests are at the cap.
var ErrQueueFull = errors.New("the request queue is full")

// TestRequest is one model someone asked to be tested.
type TestRequest struct {
	ID         int64
	ModelID    string
	State      RequestState
	CreatedAt  time.Time
	StartedAt  time.Time // zero until claimed
	FinishedAt time.Time // zero until done or failed
	ScanID     *int64    // the scan that ran it
	Status     compat.Status
	Message    string
	// Position is the request's place in the queue while queued (1: next),
	// 0 otherwise.
	Position int
}

// RequestFinish is how the scan of a claimed request ended.
type RequestFinish struct {
	State   RequestState // done, failed, or queued (back in the queue: the scan could not run)
	ScanID  int64        // 0: none
	Status  compat.Status
	Message string
}

// AddRequest queues a test of the model modelID, unless a request for it
// is open (queued or running): then it returns that one and created
// false. When limit requests are open already it fails with ErrQueueFull
// (the check and the insert are one transaction: the queue never holds
// more than limit).
func (s *SQLite) AddRequest(ctx context.Context, modelID string, limit int) (req TestRequest, created bool, err error) {
	if err := compat.ValidateModelID(modelID); err != nil {
		return req, false, fmt.Errorf("store: add request: %w: %v", ErrInvalid, err)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		if r, err := getRequest(ctx, tx, sqlOpenRequest, modelID); err == nil {
			req = r
			return false, nil
		} else if !errors.Is(err, ErrNotFound) {
			return false, err
		}
		var open int
		if err := tx.QueryRowContext(ctx, sqlCountOpenRequests).Scan(&open); err != nil {
			return false, err
		}
		if open >= limit {
			return false, fmt.Errorf("%w (%d open)", ErrQueueFull, open)
		}
		var id int64
		if err := tx.QueryRowContext(ctx, sqlAddRequest, modelID, unixNano(s.now())).Scan(&id); err != nil {
			return false, err
		}
		r, err := getRequest(ctx, tx, sqlGetRequest, id)
		req, created = r, true
		return false, err
	})
	if err != nil {
		return TestRequest{}, false, fmt.Errorf("store: add request %s: %w", modelID, err)
	}
	return req, created, nil
}

// GetRequest is request id with its place in the queue; ErrNotFound for
// an unknown id.
func (s *SQLite) GetRequest(ctx context.Context, id int64) (TestRequest, error) {
	r, err := getRequest(ctx, s.r, sqlGetRequest, id)
	if err != nil {
		return r, fmt.Errorf("store: get request %d: %w", id, err)
	}
	return r, nil
}

// OpenRequest is the open (queued or running) request for the model
// modelID (letter case aside); ErrNotFound when there is none.
func (s *SQLite) OpenRequest(ctx context.Context, modelID string) (TestRequest, error) {
	r, err := getRequest(ctx, s.r, sqlOpenRequest, modelID)
	if err != nil {
		return r, fmt.Errorf("store: open request %s: %w", modelID, err)
	}
	return r, nil
}

// OpenRequests is how many requests are open (queued or running).
func (s *SQLite) OpenRequests(ctx context.Context) (int, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, sqlCountOpenRequests).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: open requests: %w", err)
	}
	return n, nil
}

// ClaimRequests marks up to n queued requests running, oldest first, and
// returns them; none when the queue is empty.
func (s *SQLite) ClaimRequests(ctx context.Context, n int) ([]TestRequest, error) {
	var out []TestRequest
	err := s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		out = nil
		rows, err := tx.QueryContext(ctx, sqlQueuedRequests, n)
		if err != nil {
			return false, err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return false, err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, err
		}
		now := unixNano(s.now())
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, sqlClaimRequest, now, id); err != nil {
				return false, err
			}
			r, err := getRequest(ctx, tx, sqlGetRequest, id)
			if err != nil {
				return false, err
			}
			out = append(out, r)
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: claim requests: %w", err)
	}
	return out, nil
}

// FinishRequest records how request id's scan ended: done or failed, or
// queued again (its scan could not run; it keeps its place). ErrNotFound
// for an unknown id; ErrInvalid for another state.
func (s *SQLite) FinishRequest(ctx context.Context, id int64, f RequestFinish) error {
	var scanID sql.NullInt64
	if f.ScanID > 0 {
		scanID = sql.NullInt64{Int64: f.ScanID, Valid: true}
	}
	err := s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		var res sql.Result
		var err error
		switch f.State {
		case RequestDone, RequestFailed:
			res, err = tx.ExecContext(ctx, sqlFinishRequest, string(f.State), unixNano(s.now()), scanID, string(f.Status), f.Message, id)
		case RequestQueued:
			res, err = tx.ExecContext(ctx, sqlRequeueRequest, f.Message, id)
		default:
			return false, fmt.Errorf("%w: request state %q", ErrInvalid, f.State)
		}
		if err != nil {
			return false, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return false, err
		} else if n == 0 {
			return false, fmt.Errorf("request %d: %w", id, ErrNotFound)
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("store: finish request: %w", err)
	}
	return nil
}

// RequeueRequests puts the requests left running by an earlier process
// back in the queue, and says how many.
func (s *SQLite) RequeueRequests(ctx context.Context) (int, error) {
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		res, err := tx.ExecContext(ctx, sqlRequeueRunning)
		if err != nil {
			return false, err
		}
		n, err = res.RowsAffected()
		return false, err
	})
	if err != nil {
		return 0, fmt.Errorf("store: requeue requests: %w", err)
	}
	return int(n), nil
}

// getRequest reads one request (with its place in the queue) by the
// query's one argument.
func getRequest(ctx context.Context, q querier, query string, arg any) (TestRequest, error) {
	var (
		r                 TestRequest
		state, status     string
		created           int64
		started, finished sql.NullInt64
		scanID            sql.NullInt64
	)
	err := q.QueryRowContext(ctx, query, arg).Scan(&r.ID, &r.ModelID, &state, &created, &started, &finished, &scanID,
		&status, &r.Message, &r.Position)
	if err != nil {
		return r, notFound(err, "request")
	}
	r.State, r.Status = RequestState(state), compat.Status(status)
	r.CreatedAt, r.StartedAt, r.FinishedAt = fromNano(created), fromNullTime(started), fromNullTime(finished)
	if scanID.Valid {
		r.ScanID = &scanID.Int64
	}
	return r, nil
}

// NewDelivery is one change to POST to one webhook.
type NewDelivery struct {
	Endpoint string // watch.Webhook.Key
	EventID  int64
	Body     []byte
	// UID is the id it is sent with, the same on every try: its event's
	// (compat.Event.UID), unique across restores of the database.
	UID string
}

// Delivery is a pending delivery.
type Delivery struct {
	ID        int64
	Endpoint  string
	EventID   int64
	Body      []byte
	Attempts  int
	CreatedAt time.Time
	UID       string // "" for a delivery queued before UIDs: ID is its id
}

// SendID is the id the delivery is sent with (webhook-id), the same on
// every try: its UID, or for one queued before UIDs its row's id, as it
// was sent before.
func (d Delivery) SendID() string { return sendID(d.UID, d.ID) }

func sendID(uid string, id int64) string {
	if uid == "" {
		return strconv.FormatInt(id, 10)
	}
	return uid
}

// StartWebhookCursor returns the newest event whose deliveries are queued.
// The first time (no cursor yet) it starts at the newest event there is,
// so that webhooks hear of changes from now on, not of the past.
func (s *SQLite) StartWebhookCursor(ctx context.Context) (int64, error) {
	var cur int64
	err := s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		if _, err := tx.ExecContext(ctx, sqlStartCursor); err != nil {
			return false, err
		}
		return false, tx.QueryRowContext(ctx, sqlGetCursor).Scan(&cur)
	})
	if err != nil {
		return 0, fmt.Errorf("store: webhook cursor: %w", err)
	}
	return cur, nil
}

// EventsAfter returns at most limit events (0 = 100, capped at 1000)
// whose id is above afterID, oldest (by id) first.
func (s *SQLite) EventsAfter(ctx context.Context, afterID int64, limit int) ([]compat.Event, error) {
	evs, err := scanEvents(s.r.QueryContext(ctx, sqlEventsAfter, afterID, clampLimit(limit, 100)))
	if err != nil {
		return nil, fmt.Errorf("store: events after %d: %w", afterID, err)
	}
	return evs, nil
}

// QueueDeliveries stores deliveries (one per webhook and event; a second
// of the same is ignored) and moves the cursor to cursor, in one
// transaction: a change is queued for every webhook or for none.
func (s *SQLite) QueueDeliveries(ctx context.Context, cursor int64, ds []NewDelivery) error {
	err := s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		now := unixNano(s.now())
		for _, d := range ds {
			if _, err := tx.ExecContext(ctx, sqlQueueDelivery, d.Endpoint, d.EventID, d.Body, now, d.UID); err != nil {
				return false, err
			}
		}
		_, err := tx.ExecContext(ctx, sqlMoveCursor, cursor)
		return false, err
	})
	if err != nil {
		return fmt.Errorf("store: queue deliveries: %w", err)
	}
	return nil
}

// DueDeliveries returns at most limit pending deliveries of endpoint whose
// next try is due at now, oldest first.
func (s *SQLite) DueDeliveries(ctx context.Context, endpoint string, now time.Time, limit int) ([]Delivery, error) {
	rows, err := s.r.QueryContext(ctx, sqlDueDeliveries, endpoint, unixNano(now), clampLimit(limit, 50))
	if err != nil {
		return nil, fmt.Errorf("store: due deliveries: %w", err)
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		var d Delivery
		var created int64
		if err := rows.Scan(&d.ID, &d.Endpoint, &d.EventID, &d.Body, &d.Attempts, &created, &d.UID); err != nil {
			return nil, fmt.Errorf("store: due deliveries: %w", err)
		}
		d.CreatedAt = fromNano(created)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: due deliveries: %w", err)
	}
	return out, nil
}

// NextDelivery is when endpoint's next pending delivery is due; ok false
// when it has none.
func (s *SQLite) NextDelivery(ctx context.Context, endpoint string) (at time.Time, ok bool, err error) {
	var next sql.NullInt64
	if err := s.r.QueryRowContext(ctx, sqlNextDelivery, endpoint).Scan(&next); err != nil {
		return at, false, fmt.Errorf("store: next delivery: %w", err)
	}
	return fromNullTime(next), next.Valid, nil
}

// DeliveryDone marks delivery id delivered at at.
func (s *SQLite) DeliveryDone(ctx context.Context, id int64, at time.Time) error {
	return s.deliveryUpdate(ctx, "delivered", sqlDeliveryDone, unixNano(at), id)
}

// DeliveryFailed counts a failed try of delivery id, with why, and sets
// its next try.
func (s *SQLite) DeliveryFailed(ctx context.Context, id int64, next time.Time, why string) error {
	return s.deliveryUpdate(ctx, "failed", sqlDeliveryFailed, unixNano(next), why, id)
}

// DeliveryRefused ends delivery id at at without a delivery: the endpoint
// refused it for good (a 4xx answer other than 408 and 429), said why.
// It is no longer tried; the endpoint's other deliveries are not touched.
func (s *SQLite) DeliveryRefused(ctx context.Context, id int64, at time.Time, why string) error {
	return s.deliveryUpdate(ctx, "refused", sqlDeliveryRefused, unixNano(at), why, id)
}

func (s *SQLite) deliveryUpdate(ctx context.Context, what, query string, args ...any) error {
	err := s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		_, err := tx.ExecContext(ctx, query, args...)
		return false, err
	})
	if err != nil {
		return fmt.Errorf("store: delivery %s: %w", what, err)
	}
	return nil
}

// ExpireDeliveries gives up the pending deliveries created before before
// and returns how many per endpoint; it also forgets finished deliveries
// that ended before forget.
func (s *SQLite) ExpireDeliveries(ctx context.Context, before, forget time.Time) (map[string]int, error) {
	out := map[string]int{}
	err := s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		clear(out)
		rows, err := tx.QueryContext(ctx, sqlExpireDeliveries, unixNano(s.now()), unixNano(before))
		if err != nil {
			return false, err
		}
		for rows.Next() {
			var ep string
			if err := rows.Scan(&ep); err != nil {
				rows.Close()
				return false, err
			}
			out[ep]++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, err
		}
		_, err = tx.ExecContext(ctx, sqlForgetDeliveries, unixNano(forget))
		return false, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: expire deliveries: %w", err)
	}
	return out, nil
}

// PendingDeliveries is how many deliveries each endpoint has pending.
func (s *SQLite) PendingDeliveries(ctx context.Context) (map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, sqlPendingDeliveries)
	if err != nil {
		return nil, fmt.Errorf("store: pending deliveries: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var ep string
		var n int
		if err := rows.Scan(&ep, &n); err != nil {
			return nil, fmt.Errorf("store: pending deliveries: %w", err)
		}
		out[ep] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: pending deliveries: %w", err)
	}
	return out, nil
}

// DeliveryStats is what the database holds of one endpoint's deliveries
// (finished ones are kept a week): the operator's view of a webhook.
type DeliveryStats struct {
	Pending, Delivered, Refused, Expired int
	OldestPending                        time.Time // zero: none pending
	NextTry                              time.Time // zero: none pending
	LastError                            string    // the newest failed try's, among the pending
	// RecentRefused are the newest deliveries the endpoint refused for
	// good, newest first.
	RecentRefused []RefusedDelivery
}

// RefusedDelivery is a delivery the endpoint refused for good.
type RefusedDelivery struct {
	UID     string // the id it was sent with
	EventID int64
	At      time.Time
	Why     string
}

// DeliveryReport is each endpoint's DeliveryStats, with at most recent
// refused deliveries each.
func (s *SQLite) DeliveryReport(ctx context.Context, recent int) (map[string]*DeliveryStats, error) {
	out := map[string]*DeliveryStats{}
	get := func(ep string) *DeliveryStats {
		if out[ep] == nil {
			out[ep] = &DeliveryStats{}
		}
		return out[ep]
	}
	fail := func(err error) (map[string]*DeliveryStats, error) {
		return nil, fmt.Errorf("store: delivery report: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, sqlDeliveryStates)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var ep, state string
		var n int
		var oldest, next sql.NullInt64
		if err := rows.Scan(&ep, &state, &n, &oldest, &next); err != nil {
			return fail(err)
		}
		st := get(ep)
		switch state {
		case "pending":
			st.Pending, st.OldestPending, st.NextTry = n, fromNullTime(oldest), fromNullTime(next)
		case "delivered":
			st.Delivered = n
		case "refused":
			st.Refused = n
		case "expired":
			st.Expired = n
		}
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	rows.Close()
	rows, err = s.r.QueryContext(ctx, sqlDeliveryLastErrors)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var ep, why string
		if err := rows.Scan(&ep, &why); err != nil {
			return fail(err)
		}
		get(ep).LastError = why
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	rows.Close()
	rows, err = s.r.QueryContext(ctx, sqlRefusedDeliveries, max(recent, 0))
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var ep string
		var r RefusedDelivery
		var id int64
		var at sql.NullInt64
		if err := rows.Scan(&ep, &r.UID, &id, &r.EventID, &at, &r.Why); err != nil {
			return fail(err)
		}
		r.UID = sendID(r.UID, id)
		r.At = fromNullTime(at)
		st := get(ep)
		st.RecentRefused = append(st.RecentRefused, r)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return out, nil
}
