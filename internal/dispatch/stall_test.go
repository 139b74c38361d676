package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// TestAStalledScanSaysSo: when no live worker can take a scan's queued jobs
// (the fleet rolled out to another runtime), Wait says so at once (log,
// the scan's record, the stalled figure) and, past the bound, returns an
// error wrapping fleet.ErrStalled instead of waiting without end.
func TestAStalledScanSaysSo(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 2, time.Minute)
	var logs proctest.Buffer
	f.d = New(f.st, Config{LeaseTTL: time.Minute, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	newRT := compat.Runtime{Torch: "2.16.0", Transformers: "5.23.0", Harness: "h", Device: "cpu", DeviceCount: 1}
	nw := worker("new", 4)
	nw.Runtime = newRT
	if _, err := f.d.Register(ctx, nw); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Enqueue(ctx, f.scanID, f.jobs); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- f.d.Wait(ctx, f.scanID, 2*time.Second, nil) }()
	testenv.Eventually(t, "the stall on the scan's record", 10*time.Second, func() bool {
		sc, _ := f.st.GetScan(ctx, f.scanID)
		return sc.StalledSince != nil && strings.Contains(sc.FleetNote, rt.RetestKey())
	})
	if st, _ := f.d.Stats(ctx); st.Stalled != 2 {
		t.Errorf("stalled figure %d, want the 2 queued jobs", st.Stalled)
	}
	err := within(t, done, 20*time.Second, "Wait to give up on a stalled scan")
	if !errors.Is(err, fleet.ErrStalled) || !strings.Contains(err.Error(), rt.RetestKey()) {
		t.Errorf("Wait: %v; want ErrStalled naming the runtime", err)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("Wait gave up after %v, before its bound", took)
	}
	if !strings.Contains(logs.String(), "no live worker can take the scan's queued jobs") {
		t.Errorf("nothing logged:\n%s", logs.String())
	}
}

// TestAStallEndsWhenAWorkerComes: a worker of the jobs' runtime arriving
// within the bound clears the stall; Wait goes on waiting for the results.
func TestAStallEndsWhenAWorkerComes(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 1, time.Minute)
	if err := f.d.Enqueue(ctx, f.scanID, f.jobs); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.d.Wait(ctx, f.scanID, time.Minute, nil) }()
	testenv.Eventually(t, "the stall", 10*time.Second, func() bool { sc, _ := f.st.GetScan(ctx, f.scanID); return sc.StalledSince != nil })
	w := worker("a", 1)
	resp, err := f.d.Lease(ctx, fleet.LeaseRequest{Worker: w, Max: 1})
	if err != nil || len(resp.Leases) != 1 {
		t.Fatal(resp, err)
	}
	testenv.Eventually(t, "the stall cleared", 10*time.Second, func() bool { sc, _ := f.st.GetScan(ctx, f.scanID); return sc.StalledSince == nil })
	if err := f.d.Result(ctx, result(resp.Leases[0], "a")); err != nil {
		t.Fatal(err)
	}
	if err := within(t, done, 10*time.Second, "Wait to return"); err != nil {
		t.Errorf("Wait: %v", err)
	}
}

// TestReplanWakesTheNewRuntime: re-planned jobs reach the waiting workers
// of the runtime they were moved to.
func TestReplanWakesTheNewRuntime(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 1, time.Minute)
	defer f.d.Close()
	if err := f.d.Enqueue(ctx, f.scanID, f.jobs); err != nil {
		t.Fatal(err)
	}
	nw := worker("new", 1)
	nw.Runtime.Torch = "2.16.0"
	got := make(chan int, 1)
	go func() {
		resp, _ := f.d.Lease(ctx, fleet.LeaseRequest{Worker: nw, Max: 1, WaitS: 30})
		got <- len(resp.Leases)
	}()
	time.Sleep(200 * time.Millisecond)
	g := fleet.Group{Target: compat.TargetCPU, Runtime: nw.Runtime, RuntimeKey: nw.Runtime.RetestKey()}
	if n, err := f.d.Replan(ctx, f.scanID, g, func(int) int64 { return 1 << 30 }, "re-planned"); err != nil || n != 1 {
		t.Fatalf("replan %d %v", n, err)
	}
	if n := within(t, got, 10*time.Second, "the re-planned job to wake the new runtime's worker"); n != 1 {
		t.Errorf("the new runtime's worker got %d leases", n)
	}
}

// TestALeavingWorkerIsNoLongerPlannedFor: a worker that says it is leaving
// is not live, at once.
func TestALeavingWorkerIsNoLongerPlannedFor(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 0, time.Minute)
	if _, err := f.d.Register(ctx, worker("a", 2)); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Leave(ctx, fleet.LeaveRequest{WorkerID: "a"}); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.d.Stats(ctx); st.Live != 0 || len(st.Workers) != 1 || st.Workers[0].Live {
		t.Errorf("stats after the leave: %+v", st)
	}
	if _, _, err := f.d.Group(ctx, compat.TargetCPU, 0); !errors.Is(err, fleet.ErrNoWorkers) {
		t.Errorf("group after the leave: %v", err)
	}
	if err := f.d.Leave(ctx, fleet.LeaveRequest{WorkerID: "x\x1b"}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("a hostile worker id: %v", err)
	}
	if err := f.d.Leave(ctx, fleet.LeaveRequest{WorkerID: "nobody"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an unknown worker: %v", err)
	}
}
