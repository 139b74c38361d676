package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

var rt = compat.Runtime{Torch: "2.15.0", Transformers: "5.23.0", Harness: "h", Device: "cpu", DeviceCount: 1}

func worker(id string, devices int) fleet.Worker {
	return fleet.Worker{ID: id, Host: "host-" + id, Target: compat.TargetCPU, Runtime: rt, Devices: devices, MemoryBytes: 8 << 30}
}

// fixture is a dispatcher over a fresh store with n models and a running
// scan (jobs not queued yet).
type fixture struct {
	d      *Dispatcher
	st     *store.SQLite
	scanID int64
	jobs   []store.NewJob

	mu      sync.Mutex
	results []store.JobOutcome
}

func newFixture(t *testing.T, n int, ttl time.Duration) *fixture {
	t.Helper()
	ctx := context.Background()
	st := storetest.MustOpen(t)
	f := &fixture{st: st}
	f.d = New(st, Config{LeaseTTL: ttl, Logger: slog.New(slog.DiscardHandler), Hooks: Hooks{Result: func(o store.JobOutcome) {
		f.mu.Lock()
		f.results = append(f.results, o)
		f.mu.Unlock()
	}}})
	var ups []store.ModelUpsert
	for i := range n {
		id := fmt.Sprintf("d/m%d", i)
		ups = append(ups, store.ModelUpsert{ID: id, SHA: "sha"})
		f.jobs = append(f.jobs, store.NewJob{Rank: i, RuntimeKey: rt.RetestKey(), Job: fleet.Job{ModelID: id, Revision: "sha",
			Target: compat.TargetCPU, Mode: compat.ModeArch, Files: []string{"config.json"}}})
	}
	if err := st.UpsertModels(ctx, ups); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.scanID, err = st.StartScan(ctx, store.Scan{Trigger: "test", Target: "cpu", Runtime: rt}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) outcomes() []store.JobOutcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.JobOutcome(nil), f.results...)
}

func result(l fleet.Lease, workerID string) fleet.ResultRequest {
	return fleet.ResultRequest{LeaseID: l.ID, WorkerID: workerID, ModelID: l.Job.ModelID, Result: compat.Result{
		Target: l.Job.Target, Status: compat.StatusPass, Revision: l.Job.Revision, TestedAt: time.Now().UTC(), Runtime: rt,
		Mode: compat.Ptr(l.Job.Mode),
	}}
}

func TestTheLongPollWaitsForWork(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 3, time.Minute)
	w := worker("a", 2)
	start := time.Now()
	resp, err := f.d.Lease(ctx, fleet.LeaseRequest{Worker: w, Max: 2, WaitS: 0.3})
	if err != nil || len(resp.Leases) != 0 || resp.Leases == nil {
		t.Fatalf("empty queue: %+v %v (want an empty list)", resp, err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("returned after %v, before the wait", took)
	}
	// Jobs queued during the wait reach the waiting worker at once.
	go func() {
		time.Sleep(200 * time.Millisecond)
		if err := f.d.Enqueue(ctx, f.scanID, f.jobs); err != nil {
			t.Error(err)
		}
	}()
	start = time.Now()
	resp, err = f.d.Lease(ctx, fleet.LeaseRequest{Worker: w, Max: 2, WaitS: 20})
	if err != nil || len(resp.Leases) != 2 {
		t.Fatalf("%+v %v", resp, err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the poll took %v for work queued after 200 ms", took)
	}
	if resp.Leases[0].Job.ModelID != "d/m0" || resp.Leases[1].Job.ModelID != "d/m1" {
		t.Errorf("leases %s, %s: want popularity order", resp.Leases[0].Job.ModelID, resp.Leases[1].Job.ModelID)
	}
}

func TestCloseEndsTheLongPolls(t *testing.T) {
	f := newFixture(t, 0, time.Minute)
	done := make(chan error, 1)
	go func() {
		_, err := f.d.Lease(context.Background(), fleet.LeaseRequest{Worker: worker("a", 1), Max: 1, WaitS: 30})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	f.d.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("err %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the poll")
	}
}

func TestTheSweeperTakesLostLeasesBack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture(t, 1, 300*time.Millisecond)
	if err := f.d.Enqueue(ctx, f.scanID, f.jobs); err != nil {
		t.Fatal(err)
	}
	go f.d.Run(ctx)
	// Three workers lease the job in turn and die; nobody else polls, so
	// only the sweeper can take the leases back.
	for i := range fleet.MaxLostLeases {
		w := worker(fmt.Sprintf("w%d", i), 1)
		resp, err := f.d.Lease(ctx, fleet.LeaseRequest{Worker: w, Max: 1, WaitS: 10})
		if err != nil || len(resp.Leases) != 1 || resp.Leases[0].Attempt != i+1 {
			t.Fatalf("lease %d: %+v %v", i, resp, err)
		}
	}
	if err := f.d.Wait(ctx, f.scanID, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	c, _ := f.st.ScanJobs(ctx, f.scanID)
	out := f.outcomes()
	if c.Failed != 1 || len(out) != 1 || out[0].Result.Status != compat.StatusError || out[0].Result.Worker != "host-w2" {
		t.Errorf("counts %+v, outcomes %+v", c, out)
	}
	// The figures follow within a sweep.
	var snap Stats
	testenv.EventuallyShowing(t, "three lost leases and none open", 10*time.Second, func() bool {
		snap = f.d.Snapshot()
		return snap.Queue.LostLeases == 3 && len(snap.Queue.Open) == 0
	}, func() string { return fmt.Sprintf("snapshot %+v", snap) })
}

func TestResultsDrainTheScan(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 3, time.Minute)
	if err := f.d.Enqueue(ctx, f.scanID, f.jobs); err != nil {
		t.Fatal(err)
	}
	var seen []store.JobCounts
	var mu sync.Mutex
	waited := make(chan error, 1)
	go func() {
		waited <- f.d.Wait(ctx, f.scanID, time.Minute, func(c store.JobCounts) { mu.Lock(); seen = append(seen, c); mu.Unlock() })
	}()
	a := worker("a", 3)
	resp, err := f.d.Lease(ctx, fleet.LeaseRequest{Worker: a, Max: 3, WaitS: 1})
	if err != nil || len(resp.Leases) != 3 {
		t.Fatal(resp, err)
	}
	st, _ := f.d.Stats(ctx)
	if st.Live != 1 || st.Busy != 1 || st.Desired != 1 || len(st.Workers) != 1 || !st.Workers[0].Planned || st.Workers[0].Busy != 3 {
		t.Errorf("stats while leased: %+v", st)
	}
	for _, l := range resp.Leases {
		if err := f.d.Result(ctx, result(l, "a")); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.d.Result(ctx, result(resp.Leases[0], "a")); !errors.Is(err, fleet.ErrLeaseNotCurrent) {
		t.Errorf("a repeated result: %v", err)
	}
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the last result")
	}
	mu.Lock()
	last := seen[len(seen)-1]
	mu.Unlock()
	if last != (store.JobCounts{Total: 3, Done: 3}) {
		t.Errorf("last progress %+v", last)
	}
	st, _ = f.d.Stats(ctx)
	if st.Busy != 0 || st.Desired != 0 || st.Workers[0].JobsDone != 3 || st.Workers[0].Planned {
		t.Errorf("stats after: %+v", st)
	}
	if len(f.outcomes()) != 3 {
		t.Errorf("result hook saw %d", len(f.outcomes()))
	}
}

func TestGroupWaitsForAWorker(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 0, time.Minute)
	if _, _, err := f.d.Group(ctx, compat.TargetCPU, 200*time.Millisecond); !errors.Is(err, fleet.ErrNoWorkers) {
		t.Errorf("no worker: %v", err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		if _, err := f.d.Register(ctx, worker("late", 4)); err != nil {
			t.Error(err)
		}
	}()
	g, _, err := f.d.Group(ctx, compat.TargetAuto, 20*time.Second)
	if err != nil || g.Target != compat.TargetCPU || g.RuntimeKey != rt.RetestKey() || g.Devices != 4 || g.MemoryBytes != 8<<30 {
		t.Errorf("group %+v %v", g, err)
	}
}

func TestBadRequestsAreRefused(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 1, time.Minute)
	good := worker("a", 2)
	for name, w := range map[string]fleet.Worker{
		"no id":           {Host: "h", Target: "cpu", Devices: 1},
		"no host":         {ID: "x", Target: "cpu", Devices: 1},
		"auto target":     {ID: "x", Host: "h", Target: "auto", Devices: 1},
		"no devices":      {ID: "x", Host: "h", Target: "cpu"},
		"control chars":   {ID: "x\n", Host: "h", Target: "cpu", Devices: 1},
		"too many device": {ID: "x", Host: "h", Target: "cpu", Devices: 65},
		// Every string a worker supplies is capped and checked like a
		// Hub's: its runtime by the result's own rule.
		"1 MB device name": {ID: "x", Host: "h", Target: "cpu", Devices: 1, Runtime: compat.Runtime{Device: strings.Repeat("d", 1<<20)}},
		"ESC in torch":     {ID: "x", Host: "h", Target: "cpu", Devices: 1, Runtime: compat.Runtime{Torch: "2.15\x1b[2J"}},
		"long harness":     {ID: "x", Host: "h", Target: "cpu", Devices: 1, Runtime: compat.Runtime{Harness: strings.Repeat("h", 4096)}},
		"bidi host":        {ID: "x", Host: "h\u202e", Target: "cpu", Devices: 1},
		"C1 in version":    {ID: "x", Host: "h", Target: "cpu", Devices: 1, Version: "v\u0085"},
		"long id":          {ID: strings.Repeat("i", 161), Host: "h", Target: "cpu", Devices: 1},
	} {
		if _, err := f.d.Register(ctx, w); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: register %v", name, err)
		}
		if _, err := f.d.Lease(ctx, fleet.LeaseRequest{Worker: w, Max: 1}); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: lease %v", name, err)
		}
	}
	for name, req := range map[string]fleet.LeaseRequest{
		"max over 64":      {Worker: good, Max: 65},
		"max 0":            {Worker: good},
		"a negative wait":  {Worker: good, Max: 1, WaitS: -1},
		"a wait over 30 s": {Worker: good, Max: 1, WaitS: 30.5},
		"a non-ASCII host": {Worker: fleet.Worker{ID: "x", Host: "hé", Target: "cpu", Devices: 1}, Max: 1},
		"a non-ASCII device": {Worker: fleet.Worker{ID: "x", Host: "h", Target: "cpu", Devices: 1,
			Runtime: compat.Runtime{Device: "TPU v6e lite"}}, Max: 1},
	} {
		if _, err := f.d.Lease(ctx, req); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: lease %v", name, err)
		}
	}
	if err := f.d.Leave(ctx, fleet.LeaveRequest{WorkerID: "wörker"}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("leave of a non-ASCII worker id: %v", err)
	}
	if _, err := f.d.Heartbeat(ctx, fleet.HeartbeatRequest{WorkerID: ""}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("heartbeat without a worker: %v", err)
	}
	if err := f.d.Release(ctx, fleet.ReleaseRequest{WorkerID: "a", LeaseID: "x", Reason: strings.Repeat("r", 1<<20)}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("a release with a 1 MB reason: %v", err)
	}
	ws, _ := f.st.Workers(ctx, 0)
	if len(ws) != 0 {
		t.Errorf("%d refused workers were recorded (%s first)", len(ws), ws[0].ID)
	}
}

// TestLeaseMaxIsCappedAtTheDevices: a max over the worker's devices (up
// to 64, the document's maximum) is its devices, not a refusal.
func TestLeaseMaxIsCappedAtTheDevices(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 4, time.Minute)
	if err := f.d.Enqueue(ctx, f.scanID, f.jobs); err != nil {
		t.Fatal(err)
	}
	got, err := f.d.Lease(ctx, fleet.LeaseRequest{Worker: worker("two", 2), Max: 64})
	if err != nil || len(got.Leases) != 2 {
		t.Errorf("max 64 on 2 devices: %d leases, %v; want 2", len(got.Leases), err)
	}
}
