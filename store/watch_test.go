package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func openWatch(t *testing.T) *SQLite {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRequestsQueueOnePerModelWithinTheCap(t *testing.T) {
	ctx := context.Background()
	s := openWatch(t)
	before, err := s.Changed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, created, err := s.AddRequest(ctx, "org/a", 3)
	if err != nil || !created || a.State != RequestQueued || a.Position != 1 || a.ModelID != "org/a" {
		t.Fatalf("first request: %+v created=%v %v", a, created, err)
	}
	// The same model, in another case: the open request, not a new one.
	again, created, err := s.AddRequest(ctx, "ORG/A", 3)
	if err != nil || created || again.ID != a.ID {
		t.Fatalf("second request for the model: %+v created=%v %v", again, created, err)
	}
	b, _, err := s.AddRequest(ctx, "org/b", 3)
	if err != nil || b.Position != 2 {
		t.Fatalf("b: %+v %v", b, err)
	}
	if _, _, err := s.AddRequest(ctx, "gpt2", 3); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AddRequest(ctx, "org/d", 3); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("a fourth open request with a cap of 3: %v", err)
	}
	if _, _, err := s.AddRequest(ctx, "../x", 3); !errors.Is(err, ErrInvalid) {
		t.Errorf("an invalid id: %v", err)
	}
	if n, err := s.OpenRequests(ctx); err != nil || n != 3 {
		t.Errorf("OpenRequests = %d, %v", n, err)
	}
	if after, _ := s.Changed(ctx); !after.Equal(before) {
		t.Error("a request moved the pages' change marker")
	}

	// Claiming takes the oldest first; the rest move up in the queue.
	claimed, err := s.ClaimRequests(ctx, 1)
	if err != nil || len(claimed) != 1 || claimed[0].ID != a.ID || claimed[0].State != RequestRunning || claimed[0].StartedAt.IsZero() {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	if got, _ := s.GetRequest(ctx, b.ID); got.Position != 1 {
		t.Errorf("b's place after a was claimed: %d", got.Position)
	}
	if got, _ := s.GetRequest(ctx, a.ID); got.Position != 0 {
		t.Errorf("a running request has a place in the queue: %d", got.Position)
	}
	// A running request still counts against the cap and still is the model's open request.
	if _, _, err := s.AddRequest(ctx, "org/d", 3); !errors.Is(err, ErrQueueFull) {
		t.Errorf("cap with one running: %v", err)
	}
	if got, err := s.OpenRequest(ctx, "org/a"); err != nil || got.ID != a.ID {
		t.Errorf("OpenRequest(org/a) = %+v, %v", got, err)
	}

	scanID, err := s.StartScan(ctx, Scan{Trigger: "request", Target: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRequest(ctx, a.ID, RequestFinish{State: RequestDone, ScanID: scanID, Status: compat.StatusPass}); err != nil {
		t.Fatal(err)
	}
	done, err := s.GetRequest(ctx, a.ID)
	if err != nil || done.State != RequestDone || done.Status != compat.StatusPass || done.ScanID == nil || *done.ScanID != scanID || done.FinishedAt.IsZero() {
		t.Fatalf("done: %+v %v", done, err)
	}
	if _, err := s.OpenRequest(ctx, "org/a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a done request is still open: %v", err)
	}
	// Done frees its place: a new request for the model is a new one.
	if r, created, err := s.AddRequest(ctx, "org/a", 3); err != nil || !created || r.ID == a.ID {
		t.Errorf("a new request after done: %+v %v %v", r, created, err)
	}
	if err := s.FinishRequest(ctx, a.ID, RequestFinish{State: RequestFailed}); !errors.Is(err, ErrNotFound) {
		t.Errorf("finishing a finished request: %v", err)
	}
	if err := s.FinishRequest(ctx, 9999, RequestFinish{State: RequestDone}); !errors.Is(err, ErrNotFound) {
		t.Errorf("finishing an unknown request: %v", err)
	}
	if err := s.FinishRequest(ctx, b.ID, RequestFinish{State: RequestRunning}); !errors.Is(err, ErrInvalid) {
		t.Errorf("finishing as running: %v", err)
	}
	if _, err := s.GetRequest(ctx, 9999); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown request: %v", err)
	}

	// Requests left running by a dead process go back to the queue, in their place.
	got, err := s.ClaimRequests(ctx, 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("claim the rest: %d %v", len(got), err)
	}
	if n, err := s.RequeueRequests(ctx); err != nil || n != 3 {
		t.Fatalf("requeue: %d %v", n, err)
	}
	if r, _ := s.GetRequest(ctx, b.ID); r.State != RequestQueued || r.Position != 1 || !r.StartedAt.IsZero() {
		t.Errorf("b requeued: %+v", r)
	}
	// Back in the queue with a message (the scan could not run).
	claimed, _ = s.ClaimRequests(ctx, 1)
	if err := s.FinishRequest(ctx, claimed[0].ID, RequestFinish{State: RequestQueued, Message: "hub unreachable"}); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.GetRequest(ctx, claimed[0].ID); r.State != RequestQueued || r.Position != 1 || r.Message != "hub unreachable" {
		t.Errorf("requeued by its scan: %+v", r)
	}
}

// TestTheRequestCapHoldsUnderConcurrency: many requests at once never open
// more than the cap.
func TestTheRequestCapHoldsUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	s := openWatch(t)
	const cap = 7
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted, full := 0, 0
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, created, err := s.AddRequest(ctx, fmt.Sprintf("org/m%d", i%30), cap)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, ErrQueueFull):
				full++
			case err != nil:
				t.Error(err)
			case created:
				accepted++
			}
		}()
	}
	wg.Wait()
	n, err := s.OpenRequests(ctx)
	if err != nil || n != cap || accepted != cap || full == 0 {
		t.Errorf("open %d (%v), accepted %d, refused as full %d; want %d open", n, err, accepted, full, cap)
	}
}

func addEvents(t *testing.T, s *SQLite, id string, statuses ...compat.Status) []int64 {
	t.Helper()
	ctx := context.Background()
	if err := s.UpsertModels(ctx, []ModelUpsert{{ID: id, SHA: "sha"}}); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i, st := range statuses {
		out, err := s.RecordResult(ctx, id, compat.Result{Target: compat.TargetCPU, Status: st, Revision: "sha",
			TestedAt: time.Date(2026, 12, 1, 0, i, 0, 0, time.UTC), Runtime: compat.Runtime{Torch: "t", Harness: "h"}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Event != nil {
			ids = append(ids, out.Event.ID)
		}
	}
	return ids
}

func TestDeliveriesQueueOncePerEventAndEndpoint(t *testing.T) {
	ctx := context.Background()
	s := openWatch(t)
	old := addEvents(t, s, "org/old", compat.StatusPass, compat.StatusFail)
	if len(old) != 2 {
		t.Fatalf("events %v", old)
	}
	// The first cursor starts at the newest event: the past is not sent.
	cur, err := s.StartWebhookCursor(ctx)
	if err != nil || cur != old[1] {
		t.Fatalf("cursor %d %v, want %d", cur, err, old[1])
	}
	if evs, err := s.EventsAfter(ctx, cur, 0); err != nil || len(evs) != 0 {
		t.Fatalf("events after the cursor: %v %v", evs, err)
	}
	fresh := addEvents(t, s, "org/new", compat.StatusFail, compat.StatusPass, compat.StatusFail)
	evs, err := s.EventsAfter(ctx, cur, 0)
	if err != nil || len(evs) != 3 || evs[0].ID != fresh[0] || evs[2].ID != fresh[2] || evs[1].Kind != compat.EventFix {
		t.Fatalf("events after: %+v %v", evs, err)
	}
	var ds []NewDelivery
	for _, e := range evs {
		for _, ep := range []string{"ep1", "ep2"} {
			ds = append(ds, NewDelivery{Endpoint: ep, EventID: e.ID, Body: []byte(fmt.Sprintf(`{"event":%d}`, e.ID))})
		}
	}
	if err := s.QueueDeliveries(ctx, evs[2].ID, ds); err != nil {
		t.Fatal(err)
	}
	// Queued again (a crash between queueing and moving on): nothing doubles.
	if err := s.QueueDeliveries(ctx, evs[1].ID, ds[:2]); err != nil {
		t.Fatal(err)
	}
	if cur, _ := s.StartWebhookCursor(ctx); cur != evs[2].ID {
		t.Errorf("the cursor moved back to %d", cur)
	}
	pending, err := s.PendingDeliveries(ctx)
	if err != nil || pending["ep1"] != 3 || pending["ep2"] != 3 {
		t.Fatalf("pending %v %v", pending, err)
	}
	now := time.Now()
	due, err := s.DueDeliveries(ctx, "ep1", now, 10)
	if err != nil || len(due) != 3 || due[0].EventID != evs[0].ID || string(due[0].Body) != fmt.Sprintf(`{"event":%d}`, evs[0].ID) {
		t.Fatalf("due %+v %v", due, err)
	}
	if err := s.DeliveryFailed(ctx, due[0].ID, now.Add(time.Hour), "connection refused"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeliveryDone(ctx, due[1].ID, now); err != nil {
		t.Fatal(err)
	}
	due, _ = s.DueDeliveries(ctx, "ep1", now, 10)
	if len(due) != 1 || due[0].EventID != evs[2].ID {
		t.Fatalf("due after one failed and one delivered: %+v", due)
	}
	// The next due is the untried one (due since it was queued), not the failed one's retry.
	if next, ok, err := s.NextDelivery(ctx, "ep1"); err != nil || !ok || next.After(now) {
		t.Errorf("next delivery %v %v %v", next, ok, err)
	}
	later, _ := s.DueDeliveries(ctx, "ep1", now.Add(2*time.Hour), 10)
	if len(later) != 2 || later[0].Attempts != 1 {
		t.Errorf("due in two hours: %+v", later)
	}
	// Expiry gives up what is pending and older than the bound, per endpoint.
	exp, err := s.ExpireDeliveries(ctx, now.Add(time.Minute), now.Add(-24*time.Hour))
	if err != nil || exp["ep1"] != 2 || exp["ep2"] != 3 {
		t.Fatalf("expired %v %v", exp, err)
	}
	if pending, _ := s.PendingDeliveries(ctx); len(pending) != 0 {
		t.Errorf("pending after expiry: %v", pending)
	}
	if _, ok, _ := s.NextDelivery(ctx, "ep1"); ok {
		t.Error("a next delivery after expiry")
	}
	// And forgets finished ones that ended before the second bound.
	if _, err := s.ExpireDeliveries(ctx, now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM webhook_deliveries`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("%d rows left after forgetting (%v)", rows, err)
	}
}

func TestTheWebhookCursorStartsAtZeroOnAnEmptyDatabase(t *testing.T) {
	s := openWatch(t)
	ctx := context.Background()
	if cur, err := s.StartWebhookCursor(ctx); err != nil || cur != 0 {
		t.Fatalf("cursor %d %v", cur, err)
	}
	ids := addEvents(t, s, "org/x", compat.StatusFail)
	// The cursor stays where it was: the new event is after it.
	if cur, _ := s.StartWebhookCursor(ctx); cur != 0 {
		t.Errorf("cursor moved to %d by itself", cur)
	}
	if evs, _ := s.EventsAfter(ctx, 0, 0); len(evs) != 1 || evs[0].ID != ids[0] {
		t.Errorf("events after 0: %+v", evs)
	}
}

// TestDeliveryReport: a refused delivery is no longer pending or due, and
// the report counts each endpoint's deliveries by state, says when the
// oldest pending was queued and when the next is due, names the newest
// failed try's error, and lists the newest refusals first, at most as
// many as asked.
func TestDeliveryReport(t *testing.T) {
	ctx := context.Background()
	s := openWatch(t)
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return t0 })
	evs := addEvents(t, s, "org/a", compat.StatusPass, compat.StatusFail, compat.StatusPass, compat.StatusFail, compat.StatusPass)
	var ds []NewDelivery
	for i, id := range evs {
		ds = append(ds, NewDelivery{Endpoint: "ep1", EventID: id, Body: []byte(`{}`), UID: fmt.Sprintf("e-%d", i)})
	}
	ds = append(ds, NewDelivery{Endpoint: "ep2", EventID: evs[0], Body: []byte(`{}`)}) // queued before UIDs: sent by its number
	if err := s.QueueDeliveries(ctx, evs[len(evs)-1], ds); err != nil {
		t.Fatal(err)
	}
	due, err := s.DueDeliveries(ctx, "ep1", t0, 10)
	if err != nil || len(due) != 5 {
		t.Fatalf("due %v %v", due, err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.DeliveryRefused(ctx, due[0].ID, t0.Add(time.Minute), "answered 400 Bad Request"))
	must(s.DeliveryRefused(ctx, due[1].ID, t0.Add(2*time.Minute), "answered 404 Not Found"))
	must(s.DeliveryRefused(ctx, due[1].ID, t0.Add(3*time.Minute), "twice")) // no longer pending: no change
	must(s.DeliveryDone(ctx, due[2].ID, t0))
	must(s.DeliveryFailed(ctx, due[3].ID, t0.Add(time.Hour), "answered 503 Service Unavailable"))
	must(s.DeliveryFailed(ctx, due[4].ID, t0.Add(2*time.Hour), "no answer within the timeout"))
	if again, _ := s.DueDeliveries(ctx, "ep1", t0.Add(3*time.Hour), 10); len(again) != 2 {
		t.Errorf("due after: %v, want the two failed ones only", again)
	}
	rep, err := s.DeliveryReport(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := rep["ep1"]
	if r == nil || r.Pending != 2 || r.Delivered != 1 || r.Refused != 2 || r.Expired != 0 || !r.OldestPending.Equal(t0) ||
		!r.NextTry.Equal(t0.Add(time.Hour)) || r.LastError != "no answer within the timeout" {
		t.Fatalf("ep1 %+v", r)
	}
	if len(r.RecentRefused) != 1 || r.RecentRefused[0].UID != "e-1" || r.RecentRefused[0].Why != "answered 404 Not Found" ||
		!r.RecentRefused[0].At.Equal(t0.Add(2*time.Minute)) || r.RecentRefused[0].EventID != evs[1] {
		t.Errorf("ep1 refused %+v, want the newest (e-1, 404) only", r.RecentRefused)
	}
	if p := rep["ep2"]; p == nil || p.Pending != 1 || p.LastError != "" || len(p.RecentRefused) != 0 {
		t.Errorf("ep2 %+v", p)
	}
	d2, _ := s.DueDeliveries(ctx, "ep2", t0, 10)
	if len(d2) != 1 || d2[0].SendID() != fmt.Sprint(d2[0].ID) || due[0].SendID() != "e-0" {
		t.Errorf("send ids %v %v", d2, due[0].SendID())
	}
	must(s.DeliveryRefused(ctx, d2[0].ID, t0, "answered 410 Gone"))
	if rep, _ := s.DeliveryReport(ctx, 5); rep["ep2"].RecentRefused[0].UID != fmt.Sprint(d2[0].ID) || len(rep["ep1"].RecentRefused) != 2 {
		t.Errorf("report %+v %+v", rep["ep2"], rep["ep1"])
	}
}
