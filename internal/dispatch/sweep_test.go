package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
)

// TestTheSweepTakesExpiredLeasesBack: a sweep with nothing expired logs
// nothing and wakes no one, but publishes the figures; one past a lease's
// expiry requeues the job, says so, and wakes its taker and the waiting
// scans.
func TestTheSweepTakesExpiredLeasesBack(t *testing.T) {
	ctx := context.Background()
	f, clk, logs := clocked(t)
	var published []Stats
	f.d.hooks.Stats = func(s Stats) { published = append(published, s) }
	leaseOne(t, f.d, "dies")
	p, done := f.d.addPoller(worker("taker", 1), 1)
	defer done()

	clk.add(time.Minute - time.Nanosecond) // the lease's last instant (it ends at its expiry)
	changed := f.d.watch()
	f.d.sweep(ctx)
	if strings.Contains(logs.String(), "leases expired") || closed(changed) || woken(p) {
		t.Errorf("a sweep that took nothing back logged it or woke someone (scans %v, poller %v):\n%s", closed(changed), woken(p), logs.String())
	}
	if len(published) != 1 || !published[0].At.Equal(clk.now()) || len(published[0].Queue.Open) != 1 || published[0].Queue.Open[0].Leased != 1 || f.d.Snapshot().At != published[0].At {
		t.Errorf("figures published %+v, snapshot %+v", published, f.d.Snapshot())
	}

	clk.add(time.Nanosecond)
	f.d.sweep(ctx)
	if !strings.Contains(logs.String(), "leases expired") || !strings.Contains(logs.String(), "requeued=1") || !closed(changed) || !woken(p) {
		t.Errorf("the expired lease: logged, scans woken %v, taker woken: see\n%s", closed(changed), logs.String())
	}
	if len(published) != 2 || len(published[1].Queue.Open) != 1 || published[1].Queue.Open[0].Queued != 1 || published[1].Queue.LostLeases != 1 {
		t.Errorf("figures after: %+v", published)
	}
}

// TestSweepErrorsAreLogged: a sweep whose store fails logs the failure,
// unless the sweep is ending (its context done); Workers returns it.
func TestSweepErrorsAreLogged(t *testing.T) {
	f := newFixture(t, 0, time.Minute)
	for _, call := range []string{"ExpireLeases", "ForgetWorkers", "QueueStats"} {
		var logs proctest.Buffer
		d := New(&failingStore{Store: f.st, fail: map[string]bool{call: true}}, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		d.sweep(ended)
		if logs.String() != "" {
			t.Errorf("%s: an ending sweep logged:\n%s", call, logs.String())
		}
		d.sweep(context.Background())
		if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "boom") {
			t.Errorf("%s: the failure was not logged:\n%s", call, logs.String())
		}
		if call == "QueueStats" {
			if ws, err := d.Workers(context.Background()); !errors.Is(err, errBoom) || ws != nil {
				t.Errorf("Workers: %v %v, want the store's error", ws, err)
			}
		}
	}
}

// TestAServedQueueIsNotStalled: queued jobs a live worker can take are not
// counted stalled; those of a runtime no live worker runs are.
func TestAServedQueueIsNotStalled(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 2, time.Minute)
	f.enqueue(t)
	other := worker("other", 1)
	other.Runtime.Torch = "2.16.0"
	if _, err := f.d.Register(ctx, other); err != nil {
		t.Fatal(err)
	}
	if st, err := f.d.Stats(ctx); err != nil || st.Stalled != 2 {
		t.Errorf("only another runtime's worker: stalled %d %v, want 2", st.Stalled, err)
	}
	if _, err := f.d.Register(ctx, worker("same", 1)); err != nil {
		t.Fatal(err)
	}
	if st, err := f.d.Stats(ctx); err != nil || st.Stalled != 0 || len(st.Queue.Open) != 1 || st.Queue.Open[0].Queued != 2 {
		t.Errorf("a live worker of the jobs' runtime: stalled %d of %+v, %v; want 0", st.Stalled, st.Queue.Open, err)
	}
}

// TestAStallIsBoundedExactly: a stall is recorded when first seen, is an
// error only once it lasted longer than its bound (not at the bound), and
// is cleared from the scan's record the moment a worker can take the jobs.
func TestAStallIsBoundedExactly(t *testing.T) {
	ctx := context.Background()
	f, clk, logs := clocked(t)
	start := clk.now()
	since, err := f.d.checkStall(ctx, f.scanID, nil, time.Minute)
	if err != nil || since == nil || !since.Equal(start) {
		t.Fatalf("first sight: %v %v, want stalled since now", since, err)
	}
	if sc, _ := f.st.GetScan(ctx, f.scanID); sc.StalledSince == nil || !sc.StalledSince.Equal(start) {
		t.Errorf("the scan's record: %v, want stalled since %v", sc.StalledSince, start)
	}
	clk.add(time.Minute)
	if s, err := f.d.checkStall(ctx, f.scanID, since, time.Minute); err != nil || s != since {
		t.Errorf("at the bound: %v %v, want still waiting", s, err)
	}
	clk.add(time.Nanosecond)
	if _, err := f.d.checkStall(ctx, f.scanID, since, time.Minute); !errors.Is(err, fleet.ErrStalled) {
		t.Errorf("past the bound: %v, want ErrStalled", err)
	}
	if _, err := f.d.Register(ctx, worker("same", 1)); err != nil {
		t.Fatal(err)
	}
	if s, err := f.d.checkStall(ctx, f.scanID, since, time.Minute); err != nil || s != nil {
		t.Errorf("a worker came: %v %v, want not stalled", s, err)
	}
	if sc, _ := f.st.GetScan(ctx, f.scanID); sc.StalledSince != nil || sc.FleetNote != "" {
		t.Errorf("the scan's record still says stalled since %v: %q", sc.StalledSince, sc.FleetNote)
	}
	if n := strings.Count(logs.String(), "have a live worker again"); n != 1 {
		t.Errorf("%d notes of the stall's end, want 1:\n%s", n, logs.String())
	}
	if s, err := f.d.checkStall(ctx, f.scanID, nil, time.Minute); err != nil || s != nil {
		t.Errorf("served, not stalled: %v %v", s, err)
	}
	if n := strings.Count(logs.String(), "have a live worker again"); n != 1 {
		t.Errorf("a scan that was not stalled was said to end its stall (%d notes)", n)
	}
}

// TestAStallThatCannotBeRecordedIsAnError: the store refusing the stall's
// record ends the wait with its error, rather than a stall nobody sees.
func TestAStallThatCannotBeRecordedIsAnError(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 1, time.Minute)
	f.enqueue(t)
	d := New(&failingStore{Store: f.st, fail: map[string]bool{"SetScanStall": true}}, Config{Logger: slog.New(slog.DiscardHandler)})
	if err := d.Wait(ctx, f.scanID, time.Minute, nil); !errors.Is(err, errBoom) {
		t.Errorf("Wait: %v, want the store's error", err)
	}
}

// TestALeasedScanDoesNotReadTheFleet: a scan whose jobs are all leased has
// nothing a worker must take, so waiting on it does not read the fleet
// listing (up to 500 workers) at every change.
func TestALeasedScanDoesNotReadTheFleet(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 1, time.Minute)
	fs := &failingStore{Store: f.st}
	d := New(fs, Config{LeaseTTL: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err := d.Enqueue(ctx, f.scanID, f.jobs); err != nil {
		t.Fatal(err)
	}
	leaseOne(t, d, "a")
	if s, err := d.checkStall(ctx, f.scanID, nil, time.Minute); err != nil || s != nil || fs.workerReads() != 0 {
		t.Errorf("checkStall: %v %v after %d fleet reads; want not stalled, none", s, err, fs.workerReads())
	}
}

// TestSweepInterval: Run sweeps every eighth of the lease TTL, never more
// often than every 100 ms nor less often than every 15 s.
func TestSweepInterval(t *testing.T) {
	for ttl, want := range map[time.Duration]time.Duration{
		time.Minute:            7500 * time.Millisecond,
		2 * time.Second:        250 * time.Millisecond,
		800 * time.Millisecond: 100 * time.Millisecond,
		400 * time.Millisecond: 100 * time.Millisecond,
		120 * time.Second:      15 * time.Second,
		10 * time.Minute:       15 * time.Second,
	} {
		if got := sweepInterval(ttl); got != want {
			t.Errorf("lease TTL %v: a sweep every %v, want %v", ttl, got, want)
		}
	}
}

// TestTheSweepForgetsWorkersGoneAWeek: a worker not heard from for longer
// than fleet.ForgetAfter leaves the fleet's listing at the next sweep that
// forgets (at most one an hour), which says so; a failed forget is logged
// (unless the sweep is ending) and tried again at the next sweep.
func TestTheSweepForgetsWorkersGoneAWeek(t *testing.T) {
	ctx := context.Background()
	f, clk, logs := clocked(t)
	leaseOne(t, f.d, "gone")
	if err := f.st.SeeWorker(ctx, worker("idle", 1), clk.now()); err != nil { // holds no lease
		t.Fatal(err)
	}
	f.d.sweep(ctx) // forgets nothing, and waits an hour before it tries again
	if ws, _ := f.d.Workers(ctx); len(ws) != 2 || strings.Contains(logs.String(), "forgotten") {
		t.Fatalf("workers %+v after the first sweep:\n%s", ws, logs.String())
	}
	clk.add(fleet.ForgetAfter + time.Nanosecond)
	changed := f.d.watch()
	f.d.sweep(ctx) // takes the lease back, then forgets its holder and the idle one
	if ws, _ := f.d.Workers(ctx); len(ws) != 0 || !strings.Contains(logs.String(), "workers forgotten") ||
		!strings.Contains(logs.String(), "workers=2") || !closed(changed) {
		t.Fatalf("workers %+v a week on (scans woken %v):\n%s", ws, closed(changed), logs.String())
	}
	// A worker last seen over a week ago turns up (a clock put right): kept
	// until an hour after the last forget.
	old := worker("old", 1)
	if err := f.st.SeeWorker(ctx, old, clk.now().Add(-fleet.ForgetAfter-time.Second)); err != nil {
		t.Fatal(err)
	}
	clk.add(time.Hour - time.Nanosecond)
	f.d.sweep(ctx)
	if ws, _ := f.d.Workers(ctx); len(ws) != 1 {
		t.Fatalf("forgot again within the hour: %+v", ws)
	}
	clk.add(time.Nanosecond)
	f.d.sweep(ctx)
	if ws, _ := f.d.Workers(ctx); len(ws) != 0 {
		t.Fatalf("not forgotten an hour after the last forget: %+v", ws)
	}

	var flogs proctest.Buffer
	d := New(&failingStore{Store: f.st, fail: map[string]bool{"ForgetWorkers": true}},
		Config{Now: clk.now, Logger: slog.New(slog.NewTextHandler(&flogs, nil))})
	ended, cancel := context.WithCancel(ctx)
	cancel()
	d.forget(ended, clk.now())
	if flogs.String() != "" {
		t.Errorf("an ending forget logged:\n%s", flogs.String())
	}
	d.forget(ctx, clk.now())
	if !strings.Contains(flogs.String(), "forget workers") || !d.forgotAt.IsZero() {
		t.Errorf("a failed forget: logged %q, forgotAt %v (want it tried again)", flogs.String(), d.forgotAt)
	}
}
