package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// fakeClock is a dispatcher's clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

var errBoom = errors.New("boom")

// failingStore fails the calls named in fail with errBoom and counts the
// fleet listings read.
type failingStore struct {
	Store
	fail map[string]bool

	mu      sync.Mutex
	workers int
}

func (s *failingStore) SeeWorker(ctx context.Context, w fleet.Worker, now time.Time) error {
	if s.fail["SeeWorker"] {
		return errBoom
	}
	return s.Store.SeeWorker(ctx, w, now)
}

func (s *failingStore) RenewLeases(ctx context.Context, workerID string, ids []string, now time.Time, ttl time.Duration) ([]string, []string, []fleet.QueueKey, error) {
	if s.fail["RenewLeases"] {
		return nil, nil, nil, errBoom
	}
	return s.Store.RenewLeases(ctx, workerID, ids, now, ttl)
}

func (s *failingStore) ExpireLeases(ctx context.Context, now time.Time) (store.Expired, error) {
	if s.fail["ExpireLeases"] {
		return store.Expired{}, errBoom
	}
	return s.Store.ExpireLeases(ctx, now)
}

func (s *failingStore) ForgetWorkers(ctx context.Context, seenBefore time.Time) (int, error) {
	if s.fail["ForgetWorkers"] {
		return 0, errBoom
	}
	return s.Store.ForgetWorkers(ctx, seenBefore)
}

func (s *failingStore) QueueStats(ctx context.Context) (store.QueueStats, error) {
	if s.fail["QueueStats"] {
		return store.QueueStats{}, errBoom
	}
	return s.Store.QueueStats(ctx)
}

func (s *failingStore) SetScanStall(ctx context.Context, scanID int64, since *time.Time, note string) error {
	if s.fail["SetScanStall"] {
		return errBoom
	}
	return s.Store.SetScanStall(ctx, scanID, since, note)
}

func (s *failingStore) Workers(ctx context.Context, limit int) ([]store.WorkerRecord, error) {
	s.mu.Lock()
	s.workers++
	s.mu.Unlock()
	return s.Store.Workers(ctx, limit)
}

func (s *failingStore) workerReads() int { s.mu.Lock(); defer s.mu.Unlock(); return s.workers }

var _ Store = (*failingStore)(nil)

// closed reports whether a channel of watch was closed (a change was
// announced to the scans and groups waiting on one).
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// woken reports whether a long poll was woken, and takes the wake-up.
func woken(p *poller) bool {
	select {
	case <-p.wake:
		return true
	default:
		return false
	}
}

// enqueue queues the fixture's jobs.
func (f *fixture) enqueue(t *testing.T) {
	t.Helper()
	if err := f.d.Enqueue(context.Background(), f.scanID, f.jobs); err != nil {
		t.Fatal(err)
	}
}

// clocked is a fixture of one queued job whose dispatcher (TTL a minute)
// runs on a clock that moves when told and logs into the returned buffer.
func clocked(t *testing.T) (*fixture, *fakeClock, *proctest.Buffer) {
	t.Helper()
	f := newFixture(t, 1, time.Minute)
	clk := newClock()
	logs := &proctest.Buffer{}
	f.d = New(f.st, Config{LeaseTTL: time.Minute, Now: clk.now, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	f.enqueue(t)
	return f, clk, logs
}

// leaseOne leases one job to a new one-device worker id of d.
func leaseOne(t *testing.T, d *Dispatcher, id string) fleet.Lease {
	t.Helper()
	got, err := d.Lease(context.Background(), fleet.LeaseRequest{Worker: worker(id, 1), Max: 1})
	if err != nil || len(got.Leases) != 1 {
		t.Fatalf("lease to %s: %+v %v", id, got, err)
	}
	return got.Leases[0]
}

// TestNewDefaultsTheLeaseTTL: no lease TTL (or a negative one) is
// fleet.DefaultLeaseTTL, two minutes; any positive one is kept.
func TestNewDefaultsTheLeaseTTL(t *testing.T) {
	for ttl, want := range map[time.Duration]time.Duration{0: 2 * time.Minute, -time.Second: 2 * time.Minute,
		time.Nanosecond: time.Nanosecond, 5 * time.Second: 5 * time.Second} {
		if got := New(nil, Config{LeaseTTL: ttl}).LeaseTTL(); got != want {
			t.Errorf("LeaseTTL %v: dispatcher's %v, want %v", ttl, got, want)
		}
	}
}

// TestRegisterTellsTheTiming: a registered worker is told the lease TTL, a
// heartbeat every quarter of it, and the longest long poll (30 s); a worker
// may have up to 64 devices; one the store could not record is an error.
func TestRegisterTellsTheTiming(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 0, time.Minute)
	got, err := f.d.Register(ctx, worker("a", 1))
	if want := (fleet.RegisterResponse{LeaseTTLS: 60, HeartbeatS: 15, MaxWaitS: 30}); err != nil || got != want {
		t.Errorf("register: %+v %v, want %+v", got, err, want)
	}
	if _, err := f.d.Register(ctx, worker("big", 64)); err != nil {
		t.Errorf("a worker of 64 devices, the most: %v", err)
	}
	fs := &failingStore{Store: f.st, fail: map[string]bool{"SeeWorker": true}}
	d := New(fs, Config{Logger: slog.New(slog.DiscardHandler)})
	changed := d.watch()
	if got, err := d.Register(ctx, worker("b", 1)); !errors.Is(err, errBoom) || got != (fleet.RegisterResponse{}) {
		t.Errorf("register the store refused: %+v %v, want the store's error", got, err)
	}
	if closed(changed) {
		t.Error("a worker that was not recorded woke the waiting scans")
	}
}

// TestAnEmptyPollWakesNoWaiter: a long poll that finds nothing to lease,
// and a heartbeat that takes no lease back, change nothing: a scan's Wait
// and a Group waiting for workers sleep on (a hundred idle workers would
// otherwise make every waiting scan re-read its counts at each poll).
func TestAnEmptyPollWakesNoWaiter(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 0, time.Minute)
	changed := f.d.watch()
	if got, err := f.d.Lease(ctx, fleet.LeaseRequest{Worker: worker("a", 1), Max: 1}); err != nil || len(got.Leases) != 0 {
		t.Fatalf("lease from an empty queue: %+v %v", got, err)
	}
	if _, err := f.d.Heartbeat(ctx, fleet.HeartbeatRequest{WorkerID: "a"}); err != nil {
		t.Fatal(err)
	}
	if closed(changed) {
		t.Error("an empty poll or heartbeat woke the waiting scans")
	}
}

// TestHeartbeat: a heartbeat renews the worker's current leases until a
// TTL from now, says which it does not hold (logging them), accepts as
// many leases as a worker has devices (64) and no more, and answers
// empty lists, not null; a store error is the heartbeat's.
func TestHeartbeat(t *testing.T) {
	ctx := context.Background()
	f, clk, logs := clocked(t)
	l := leaseOne(t, f.d, "a")
	id := l.ID
	clk.add(10 * time.Second)
	hb, err := f.d.Heartbeat(ctx, fleet.HeartbeatRequest{WorkerID: "a", Leases: []string{id, "not-a-lease"}})
	if err != nil || len(hb.Renewed) != 1 || hb.Renewed[0] != id || len(hb.Lost) != 1 || hb.Lost[0] != "not-a-lease" ||
		!hb.ExpiresAt.Equal(clk.now().Add(time.Minute)) {
		t.Errorf("heartbeat: %+v %v; want %s renewed, not-a-lease lost, expiring a minute from now", hb, err, id)
	}
	if n := strings.Count(logs.String(), "heartbeat for lost leases"); n != 1 || !strings.Contains(logs.String(), "lost=1") {
		t.Errorf("%d warnings of lost leases, want one with lost=1:\n%s", n, logs.String())
	}
	if hb, err := f.d.Heartbeat(ctx, fleet.HeartbeatRequest{WorkerID: "a", Leases: []string{id}}); err != nil || len(hb.Renewed) != 1 || hb.Lost == nil || len(hb.Lost) != 0 {
		t.Errorf("heartbeat of the current lease: %+v %v", hb, err)
	}
	if hb, err := f.d.Heartbeat(ctx, fleet.HeartbeatRequest{WorkerID: "b"}); err != nil || hb.Renewed == nil || len(hb.Renewed) != 0 || hb.Lost == nil || len(hb.Lost) != 0 {
		t.Errorf("heartbeat without leases: %+v %v; want empty lists", hb, err)
	}
	if n := strings.Count(logs.String(), "heartbeat for lost leases"); n != 1 {
		t.Errorf("heartbeats that lost nothing warned of lost leases (%d warnings)", n)
	}
	for n, ok := range map[int]bool{maxDevices: true, maxDevices + 1: false} {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = "x"
		}
		hb, err := f.d.Heartbeat(ctx, fleet.HeartbeatRequest{WorkerID: "b", Leases: ids})
		if ok && (err != nil || len(hb.Lost) != n) {
			t.Errorf("heartbeat of %d leases: %+v %v; want each lost", n, hb, err)
		}
		if !ok && !errors.Is(err, ErrBadRequest) {
			t.Errorf("heartbeat of %d leases: %v; want ErrBadRequest", n, err)
		}
	}
	if _, err := f.d.Heartbeat(ctx, fleet.HeartbeatRequest{WorkerID: "b\x1b[2J"}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("a hostile worker id: %v", err)
	}
	fd := New(&failingStore{Store: f.st, fail: map[string]bool{"RenewLeases": true}}, Config{})
	if hb, err := fd.Heartbeat(ctx, fleet.HeartbeatRequest{WorkerID: "a", Leases: []string{id}}); !errors.Is(err, errBoom) {
		t.Errorf("heartbeat the store failed: %+v %v", hb, err)
	}
}

// TestAHeartbeatThatRequeuesWakesTheTaker: a heartbeat takes expired leases
// back (any worker's); the long polls that can take the job, and the
// waiting scans, are woken then.
func TestAHeartbeatThatRequeuesWakesTheTaker(t *testing.T) {
	ctx := context.Background()
	f, clk, _ := clocked(t)
	leaseOne(t, f.d, "dies")
	p, done := f.d.addPoller(worker("taker", 1), 1)
	defer done()
	clk.add(time.Minute + time.Second)
	changed := f.d.watch()
	if _, err := f.d.Heartbeat(ctx, fleet.HeartbeatRequest{WorkerID: "other"}); err != nil {
		t.Fatal(err)
	}
	if !woken(p) || !closed(changed) {
		t.Error("the job a heartbeat took back woke neither its taker nor the waiting scans")
	}
}

// TestReleaseRequeuesAndWakes: a lease given back goes to the queue and
// wakes a poller that can take it; a lease the worker does not hold is
// refused (fleet.ErrLeaseNotCurrent) and changes nothing.
func TestReleaseRequeuesAndWakes(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 1, time.Minute)
	f.enqueue(t)
	l := leaseOne(t, f.d, "a")
	p, done := f.d.addPoller(worker("b", 1), 1)
	defer done()
	changed := f.d.watch()
	if err := f.d.Release(ctx, fleet.ReleaseRequest{WorkerID: "b", LeaseID: l.ID, Reason: "stopping"}); !errors.Is(err, fleet.ErrLeaseNotCurrent) {
		t.Errorf("another worker's release: %v", err)
	}
	if woken(p) || closed(changed) {
		t.Error("a refused release woke a poller or the waiting scans")
	}
	if err := f.d.Release(ctx, fleet.ReleaseRequest{WorkerID: "a", LeaseID: l.ID, Reason: "stopping"}); err != nil {
		t.Fatal(err)
	}
	if !woken(p) || !closed(changed) {
		t.Error("the job given back woke neither the poller that can take it nor the waiting scans")
	}
	if again, err := f.d.Lease(ctx, fleet.LeaseRequest{Worker: worker("b", 1), Max: 1}); err != nil || len(again.Leases) != 1 {
		t.Errorf("the released job was not leased again: %+v %v", again, err)
	}
}

// TestWithdrawWakesOnlyWhenItEndsJobs: withdrawing a scan's queued jobs
// wakes its Wait; withdrawing nothing wakes no one.
func TestWithdrawWakesOnlyWhenItEndsJobs(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 2, time.Minute)
	f.enqueue(t)
	changed := f.d.watch()
	if n, err := f.d.Withdraw(ctx, f.scanID); err != nil || n != 2 || !closed(changed) {
		t.Errorf("withdraw: %d %v, woke the scans %v; want 2 and a wake-up", n, err, closed(changed))
	}
	changed = f.d.watch()
	if n, err := f.d.Withdraw(ctx, f.scanID); err != nil || n != 0 || closed(changed) {
		t.Errorf("withdraw again: %d %v, woke the scans %v; want 0 and none", n, err, closed(changed))
	}
}
