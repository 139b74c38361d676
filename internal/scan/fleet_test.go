package scan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/dispatch"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// inProcessWorker leases jobs from d and answers each with a pass (or
// what answer says), recording what it was given.
type inProcessWorker struct {
	d      *dispatch.Dispatcher
	w      fleet.Worker
	answer func(fleet.Job) compat.Status
	// serving, when set, is the serving verdict posted with a job's result
	// (nil for none), as a worker with --vllm-python posts it.
	serving func(fleet.Job) *compat.ServingMeasured
	hold    chan struct{} // when set, a job waits for it before its result

	mu     sync.Mutex
	jobs   []fleet.Job
	posted []error // what each result post returned
}

func (iw *inProcessWorker) run(ctx context.Context) {
	for ctx.Err() == nil {
		resp, err := iw.d.Lease(ctx, fleet.LeaseRequest{Worker: iw.w, Max: iw.w.Devices, WaitS: 0.2})
		if err != nil {
			return
		}
		for _, l := range resp.Leases {
			iw.mu.Lock()
			iw.jobs = append(iw.jobs, l.Job)
			iw.mu.Unlock()
			if iw.hold != nil {
				select {
				case <-iw.hold:
				case <-ctx.Done(): // stopping: give the lease back, as a worker does
					_ = iw.d.Release(context.Background(), fleet.ReleaseRequest{WorkerID: iw.w.ID, LeaseID: l.ID, Reason: "stopping"})
					return
				}
			}
			st := compat.StatusPass
			if iw.answer != nil {
				st = iw.answer(l.Job)
			}
			res := compat.Result{Target: l.Job.Target, Status: st, Stage: compat.Ptr(compat.StageGenerate), Mode: compat.Ptr(l.Job.Mode),
				Revision: l.Job.Revision, TestedAt: time.Now().UTC(), Runtime: iw.w.Runtime}
			req := fleet.ResultRequest{LeaseID: l.ID, WorkerID: iw.w.ID, ModelID: l.Job.ModelID, Result: res}
			if iw.serving != nil {
				req.Serving = iw.serving(l.Job)
			}
			err := iw.d.Result(ctx, req)
			iw.mu.Lock()
			iw.posted = append(iw.posted, err)
			iw.mu.Unlock()
		}
	}
}

func (iw *inProcessWorker) leased() []fleet.Job {
	iw.mu.Lock()
	defer iw.mu.Unlock()
	return slices.Clone(iw.jobs)
}

func fleetFixture(t *testing.T, models ...hub.ModelInfo) (*fixture, *dispatch.Dispatcher, *inProcessWorker) {
	t.Helper()
	f := newFixture(t, models...)
	d := dispatch.New(f.store, dispatch.Config{LeaseTTL: time.Minute, Logger: quiet})
	f.s.Fleet, f.s.FleetWait = d, 5*time.Second
	w := fleet.Worker{ID: "w1", Host: "tpu-host-1", Target: compat.TargetCPU, Runtime: f.prober.runtime, Devices: 2, MemoryBytes: 64 << 30}
	if _, err := d.Register(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return f, d, &inProcessWorker{d: d, w: w}
}

func TestAFleetScanQueuesWhatItWouldProbe(t *testing.T) {
	full := model("f/full", "text-generation", "transformers")
	full.Siblings = []hub.Sibling{{Name: "config.json", Size: 600}, {Name: "model.safetensors", Size: 1 << 20},
		{Name: "generation_config.json", Size: 100}, {Name: "tokenizer.json", Size: 2000}}
	full.FilesMetadata = true
	f, _, iw := fleetFixture(t,
		full,
		model("f/b", "text-generation", "transformers"),
		model("f/custom", "text-generation", "transformers", "custom_code"),
		model("f/c", "text-generation", "transformers"),
		model("f/d", "text-generation", "transformers"),
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go iw.run(ctx)
	var last Progress
	sc, err := f.s.Run(ctx, Options{Mode: compat.ModeAuto, Target: compat.TargetAuto}, Hooks{Progress: func(p Progress) { last = p }})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Status != store.ScanDone || sc.Planned != 5 || sc.Done != 5 || sc.Probed != 4 || sc.Target != "cpu" || sc.DeviceBusy != nil {
		t.Errorf("scan %+v", sc)
	}
	if last.Done != 5 || last.Probed != 4 {
		t.Errorf("last progress %+v", last)
	}
	if n := f.prober.count("f/b"); n != 0 || len(f.prober.calls) != 0 {
		t.Errorf("the server probed locally: %v", f.prober.calls)
	}
	jobs := iw.leased()
	var order []string
	for _, j := range jobs {
		order = append(order, j.ModelID)
	}
	if want := []string{"f/full", "f/b", "f/c", "f/d"}; !slices.Equal(order, want) {
		t.Errorf("leased %v, want %v (popularity order; the custom-code model is declined here)", order, want)
	}
	if len(jobs) > 0 {
		j := jobs[0]
		if j.Mode != compat.ModeFull || !slices.Equal(j.Files, []string{"config.json", "model.safetensors"}) ||
			!slices.Equal(j.InputFiles, hub.InputFiles(full.Siblings)) || len(j.InputFiles) == 0 ||
			!strings.Contains(j.PlanNote, "auto -> full") || !strings.Contains(j.PlanNote, "untested on cpu") ||
			j.MemoryBudgetBytes <= 0 || j.Revision != "sha-full" || j.Target != compat.TargetCPU || j.TimeoutS != 20*60 {
			t.Errorf("the full-mode job %+v", j)
		}
	}
	if got := f.hub.files["f/full"]; !slices.Equal(got, []string{"config.json"}) {
		t.Errorf("the server downloaded %v of f/full: weights are the workers' to fetch", got)
	}
	for _, id := range []string{"f/full", "f/b", "f/c", "f/d"} {
		r, err := f.store.LatestResult(ctx, id, compat.TargetCPU)
		if err != nil || r.Worker != "tpu-host-1" || r.ScanID == nil || *r.ScanID != sc.ID {
			t.Errorf("%s: %+v %v", id, r, err)
		}
	}
	if r, _ := f.store.LatestResult(ctx, "f/custom", compat.TargetCPU); r.Status != compat.StatusSkipped || r.Worker != "" {
		t.Errorf("custom: %+v", r)
	}
	// The second scan finds everything unchanged: nothing is queued.
	before := len(iw.leased())
	sc2, err := f.s.Run(ctx, Options{Mode: compat.ModeAuto, Target: compat.TargetAuto}, Hooks{})
	if err != nil || sc2.Unchanged != 5 || sc2.Probed != 0 || len(iw.leased()) != before {
		t.Errorf("second scan %+v %v; leased %d more", sc2, err, len(iw.leased())-before)
	}
}

func TestAFleetScanWithoutWorkersFailsAndIsRetried(t *testing.T) {
	f := newFixture(t, model("n/a", "text-generation", "transformers"))
	f.s.Fleet = dispatch.New(f.store, dispatch.Config{LeaseTTL: time.Minute, Logger: quiet})
	f.s.FleetWait = 100 * time.Millisecond
	sc, err := f.s.Run(context.Background(), Options{Target: compat.TargetTPU}, Hooks{})
	if !errors.Is(err, fleet.ErrNoWorkers) || sc.Status != store.ScanFailed {
		t.Fatalf("scan %+v, err %v", sc, err)
	}
	svc := NewService(f.s, Options{Target: compat.TargetTPU}, quiet)
	svc.RetryAfter = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go svc.Run(ctx)
	if err := svc.Request("manual"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool {
		scans, _ := f.store.ListScans(ctx, 10)
		return len(scans) >= 3 // the failed one above, the manual one, and a retry
	})
}

// A server stopping mid-scan leaves the jobs queued and the scan running;
// the next process resumes it, and the scan completes.
func TestAStoppedFleetScanIsResumed(t *testing.T) {
	f, _, iw := fleetFixture(t, model("r/a", "text-generation", "transformers"), model("r/b", "text-generation", "transformers"))
	iw.hold = make(chan struct{})
	wctx, stopWorker := context.WithCancel(context.Background())
	defer stopWorker()
	go iw.run(wctx)
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		testenv.Eventually(t, "the condition", 10*time.Second, func() bool {
			scans, _ := f.store.ListScans(context.Background(), 1)
			if len(scans) == 0 || len(iw.leased()) == 0 {
				return false
			}
			c, _ := f.store.ScanJobs(context.Background(), scans[0].ID)
			return c.Total == 2
		})
		stop() // the server shuts down once both jobs are queued, one leased
	}()
	sc, err := f.s.Run(ctx, Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{})
	if !errors.Is(err, context.Canceled) || sc.Status != store.ScanRunning {
		t.Fatalf("stopped scan %+v, %v: want it left running", sc, err)
	}
	if c, _ := f.store.ScanJobs(context.Background(), sc.ID); c.Open() != 2 {
		t.Fatalf("jobs after the stop: %+v", c)
	}
	// The worker finishes in the meantime; the next process resumes.
	close(iw.hold)
	resumed, err := f.s.Resume(context.Background(), sc.ID, Hooks{})
	if err != nil || resumed.Status != store.ScanDone || resumed.Done != 2 || resumed.Probed != 2 {
		t.Fatalf("resumed %+v, %v", resumed, err)
	}
	for _, id := range []string{"r/a", "r/b"} {
		if h, _ := f.store.History(context.Background(), id, "", 10); len(h) != 1 {
			t.Errorf("%s: %d results", id, len(h))
		}
	}
}

// A server stopping while the scan still plans interrupts it, as a local
// scan is, and withdraws its queued jobs: a resumed scan could not tell the
// models it never planned. A job a worker holds may still finish: its
// result is recorded, once.
func TestAFleetScanStoppedWhilePlanningIsInterrupted(t *testing.T) {
	f, _, iw := fleetFixture(t, model("p/a", "text-generation", "transformers"), model("p/b", "text-generation", "transformers"))
	f.hub.delays = map[string]time.Duration{"p/b": time.Hour} // p/b's config.json never comes
	iw.hold = make(chan struct{})
	wctx, stopWorker := context.WithCancel(context.Background())
	defer stopWorker()
	go iw.run(wctx)
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return len(iw.leased()) > 0 })
		stop()
	}()
	sc, err := f.s.Run(ctx, Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{})
	if !errors.Is(err, context.Canceled) || sc.Status != store.ScanInterrupted {
		t.Fatalf("scan %+v, %v: want interrupted", sc, err)
	}
	if c, _ := f.store.ScanJobs(context.Background(), sc.ID); c != (store.JobCounts{Total: 1, Leased: 1}) {
		t.Errorf("jobs %+v: want the leased one left to finish", c)
	}
	close(iw.hold) // the worker's result after the stop is taken, once
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { iw.mu.Lock(); defer iw.mu.Unlock(); return len(iw.posted) > 0 })
	if err := iw.posted[0]; err != nil {
		t.Errorf("the result after the stop: %v, want recorded", err)
	}
	if h, _ := f.store.History(context.Background(), "p/a", "", 10); len(h) != 1 {
		t.Errorf("p/a: %d results, want its one", len(h))
	}
}

// A fleet scan stores every listed model's readiness on the server at
// listing time, as a local scan does: from config.json for a model it
// queues (the server reads config.json for preflight), from the listing's
// summary and safetensors counts for one it declines; workers compute none.
func TestAFleetScanStoresReadiness(t *testing.T) {
	llama := model("r/llama", "text-generation", "transformers")
	gated := model("r/gated", "text-generation", "transformers")
	gated.Gated = true
	gated.Safetensors = map[string]int64{"BF16": 70000000000}
	f, _, iw := fleetFixture(t, llama, gated)
	f.hub.configs["r/llama"] = llama1BConfig
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go iw.run(ctx)
	if _, err := f.s.Run(ctx, Options{Mode: compat.ModeArch, Target: compat.TargetAuto}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if got := len(iw.leased()); got != 1 {
		t.Fatalf("leased %d jobs, want 1 (the llama)", got)
	}
	r := f.readiness(t, "r/llama")
	if r == nil || deref(r.ParamsSource) != readiness.SourceConfig || r.Params == nil || *r.Params != 1235814400 ||
		r.KVBytesPerToken == nil || *r.KVBytesPerToken != 32768 {
		t.Errorf("queued model's readiness: %+v", r)
	}
	r = f.readiness(t, "r/gated")
	if r == nil || r.Params == nil || *r.Params != 70000000000 || deref(r.ParamsSource) != readiness.SourceSafetensors {
		t.Errorf("gated model's readiness: %+v", r)
	}
}

// A scan and a resumed scan that hold the database's scan lock record their
// id in it without a warning (the warning is for a lock that cannot be
// written); a resumed scan warns of stored options it cannot read.
func TestScansNameThemselvesInTheScanLock(t *testing.T) {
	f, _, _ := fleetFixture(t)
	var buf bytes.Buffer
	f.s.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	f.s.ScanLock = filepath.Join(t.TempDir(), "scanner.db")
	ctx := context.Background()
	id, err := f.store.StartScan(ctx, store.Scan{Trigger: "cli", Status: store.ScanRunning, Target: "cpu", Params: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	// A scan an earlier process left to its (empty) queue.
	if sc, err := f.s.Resume(ctx, id, Hooks{}); err != nil || sc.Status != store.ScanDone {
		t.Fatalf("resumed %+v %v", sc, err)
	}
	sc, err := f.s.Run(ctx, Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{})
	if err != nil || sc.Status != store.ScanDone {
		t.Fatalf("scan %+v %v", sc, err)
	}
	if strings.Contains(buf.String(), "level=WARN") || strings.Contains(buf.String(), "level=ERROR") {
		t.Errorf("warnings of a healthy scan and resume:\n%s", buf.String())
	}
	// A resumed scan whose stored options cannot be read runs with the
	// defaults, and says so.
	if id, err = f.store.StartScan(ctx, store.Scan{Trigger: "cli", Status: store.ScanRunning, Target: "cpu", Params: "{"}); err != nil {
		t.Fatal(err)
	}
	if sc, err := f.s.Resume(ctx, id, Hooks{}); err != nil || sc.Status != store.ScanDone {
		t.Fatalf("resumed %+v %v", sc, err)
	}
	if !strings.Contains(buf.String(), `level=WARN msg="resume: the scan's options are unreadable"`) {
		t.Errorf("no warning of unreadable options:\n%s", buf.String())
	}
}

// failingProgress is a store whose UpdateScanProgress fails once failing
// is set.
type failingProgress struct {
	*store.SQLite
	failing atomic.Bool
}

var errProgress = errors.New("progress not written")

func (s *failingProgress) UpdateScanProgress(ctx context.Context, id int64, planned, done, probed, unchanged int) error {
	if s.failing.Load() {
		return errProgress
	}
	return s.SQLite.UpdateScanProgress(ctx, id, planned, done, probed, unchanged)
}

// A scan left to its queue by a stopping server returns its record as
// stored (the model decided before the stop counted done), and the error
// of the progress it could not write besides the stop's.
func TestAStoppedFleetScanReturnsItsStoredRecord(t *testing.T) {
	f, _, _ := fleetFixture(t, model("r/custom", "text-generation", "transformers", "custom_code"),
		model("r/a", "text-generation", "transformers"), model("r/b", "text-generation", "transformers"))
	st := &failingProgress{SQLite: f.store}
	f.s.Store = st
	ctx, stop := context.WithCancel(context.Background())
	go func() { // no worker runs: the jobs stay queued
		waitQueued(t, f.store, 2)
		st.failing.Store(true)
		stop()
	}()
	sc, err := f.s.Run(ctx, Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errProgress) {
		t.Errorf("err %v: want the stop and the progress failure", err)
	}
	if sc.Status != store.ScanRunning || sc.Planned != 3 || sc.Done != 1 {
		t.Errorf("stopped scan %+v: want it running, 3 planned, the custom-code skip done", sc)
	}
}

// fakeFleet offers one group of workers and queues every job; its wait
// reports counts once and returns waitErr; Withdraw answers withdrawn,
// withdrawErr.
type fakeFleet struct {
	g           fleet.Group
	counts      store.JobCounts
	waitErr     error
	withdrawn   int
	withdrawErr error
}

var (
	errWait     = errors.New("the queue could not be read")
	errWithdraw = errors.New("the queued jobs could not be withdrawn")
)

func (b *fakeFleet) Group(ctx context.Context, target compat.Target, wait time.Duration) (fleet.Group, []fleet.Group, error) {
	return b.g, nil, nil
}
func (b *fakeFleet) Enqueue(ctx context.Context, scanID int64, jobs []store.NewJob) error {
	return nil
}
func (b *fakeFleet) Wait(ctx context.Context, scanID int64, bound time.Duration, progress func(store.JobCounts)) error {
	progress(b.counts)
	return b.waitErr
}
func (b *fakeFleet) Replan(ctx context.Context, scanID int64, g fleet.Group, budgetOf func(devices int) int64, note string) (int, error) {
	return 0, nil
}
func (b *fakeFleet) Withdraw(ctx context.Context, scanID int64) (int, error) {
	return b.withdrawn, b.withdrawErr
}

// oneWorker is the group of f's one cpu worker.
func oneWorker(f *fixture) fleet.Group {
	return fleet.Group{Target: compat.TargetCPU, Runtime: f.prober.runtime, RuntimeKey: f.prober.runtime.RetestKey(),
		Workers: []string{"w1"}, Devices: 1, PerWorker: 1, MemoryBytes: 64 << 30}
}

// A fleet scan's progress counts the jobs the workers finished as done,
// failed ones too, and the finished ones as probed.
func TestAFleetScanCountsItsFinishedJobs(t *testing.T) {
	f := newFixture(t, model("j/a", "text-generation", "transformers"), model("j/b", "text-generation", "transformers"))
	f.s.Fleet = &fakeFleet{counts: store.JobCounts{Total: 2, Done: 1, Failed: 1}}
	f.s.Fleet.(*fakeFleet).g = oneWorker(f)
	var last Progress
	sc, err := f.s.Run(context.Background(), Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{Progress: func(p Progress) { last = p }})
	if err != nil || sc.Status != store.ScanDone {
		t.Fatalf("scan %+v %v", sc, err)
	}
	if sc.Planned != 2 || sc.Done != 2 || sc.Probed != 1 || last.Done != 2 || last.Probed != 1 {
		t.Errorf("scan %+v, last progress %+v: want 2 done (one failed job), 1 probed", sc, last)
	}
}

// A fleet scan that fails withdraws its queued jobs: how many is logged
// when there were any, and a failed withdrawal joins the scan's error.
func TestAFailedFleetScanWithdrawsItsJobs(t *testing.T) {
	for _, tt := range []struct {
		name      string
		withdrawn int
		err       error
		logged    string
	}{
		{"some withdrawn", 3, nil, `level=WARN msg="queued jobs withdrawn with their scan" scan_id=1 jobs=3`},
		{"none left", 0, nil, ""},
		{"withdrawal fails", 0, errWithdraw, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, model("w/a", "text-generation", "transformers"))
			f.s.Fleet = &fakeFleet{g: oneWorker(f), waitErr: errWait, withdrawn: tt.withdrawn, withdrawErr: tt.err}
			var buf bytes.Buffer
			f.s.Logger = slog.New(slog.NewTextHandler(&buf, nil))
			sc, err := f.s.Run(context.Background(), Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{})
			if !errors.Is(err, errWait) || sc.Status != store.ScanFailed {
				t.Fatalf("scan %+v, err %v: want it failed by the wait", sc, err)
			}
			if got := errors.Is(err, errWithdraw); got != (tt.err != nil) {
				t.Errorf("err %v: the withdrawal's failure in it %v, want %v", err, got, tt.err != nil)
			}
			logged := strings.Contains(buf.String(), "queued jobs withdrawn")
			if logged != (tt.logged != "") || !strings.Contains(buf.String(), tt.logged) {
				t.Errorf("withdrawal logged %v, want %q; log:\n%s", logged, tt.logged, buf.String())
			}
		})
	}
}

// TestAFleetScanGivesWay: a fleet scan that gives way (Options.Yield, as
// the service's requested probes do for a waiting scan) withdraws its
// queued jobs; the probes the workers hold finish and are recorded, and
// the scan ends then, with the rest untested.
func TestAFleetScanGivesWay(t *testing.T) {
	var models []hub.ModelInfo
	for i := range 6 {
		models = append(models, model(fmt.Sprintf("y/%d", i), "text-generation", "transformers"))
	}
	f, _, iw := fleetFixture(t, models...)
	iw.hold = make(chan struct{})
	iw.w.Devices = 1 // it leases one job at a time
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go iw.run(ctx)
	var give atomic.Bool
	type ran struct {
		sc  store.Scan
		err error
	}
	out := make(chan ran, 1)
	go func() {
		sc, err := f.s.Run(ctx, Options{Mode: compat.ModeArch, Yield: give.Load}, Hooks{})
		out <- ran{sc, err}
	}()
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return len(iw.leased()) == 1 }) // the worker holds a probe
	give.Store(true)
	time.Sleep(3 * yieldPoll)
	close(iw.hold) // the probes in flight finish
	var r ran
	select {
	case r = <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("the scan did not end after giving way")
	}
	if r.err != nil || r.sc.Status != store.ScanDone || r.sc.Probed != 1 {
		t.Errorf("scan %+v %v: want done with the probe in flight", r.sc, r.err)
	}
	if n := len(iw.leased()); n != 1 {
		t.Errorf("the worker leased %d jobs, want only the one it held when the scan gave way", n)
	}
	for i, m := range models {
		_, err := f.store.LatestResult(ctx, m.ID, compat.TargetCPU)
		if tested := err == nil; tested != (i < 1) {
			t.Errorf("%s tested %v (%v)", m.ID, tested, err)
		}
	}
}

// A fleet scan asks for the serving probe (fleet.Job.Serve) on the jobs
// a local scan would run it after: full mode, declared served by the
// pinned release; a worker's verdict is stored as a local one.
func TestAFleetScanAsksForTheServingProbe(t *testing.T) {
	withWeights := func(id, arch string) hub.ModelInfo {
		m := model(id, "text-generation", "transformers")
		m.Config = map[string]any{"architectures": []any{arch}, "model_type": "llama"}
		m.Siblings = []hub.Sibling{{Name: "config.json", Size: 600}, {Name: "model.safetensors", Size: 1 << 20}}
		m.FilesMetadata = true
		return m
	}
	archOnly := model("f/arch-llama", "text-generation", "transformers")
	archOnly.Config = map[string]any{"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama"}
	f, _, iw := fleetFixture(t, withWeights("f/llama", "LlamaForCausalLM"), withWeights("f/custom", "CustomForCausalLM"), archOnly)
	f.hub.configs["f/custom"] = `{"architectures":["CustomForCausalLM"],"model_type":"custom"}`
	f.s.Serving = func(context.Context) (serving.Registry, error) {
		return serving.Registry{Version: serving.Version, Archs: map[string]compat.ServingKind{"LlamaForCausalLM": compat.ServingGeneration}}, nil
	}
	iw.serving = func(j fleet.Job) *compat.ServingMeasured {
		if !j.Serve {
			return nil
		}
		return &compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: "pass", TensorParallelSize: 1, MaxModelLen: 256,
			MeasuredAt: time.Now().UTC()}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go iw.run(ctx)
	if _, err := f.s.Run(ctx, Options{Mode: compat.ModeAuto, Target: compat.TargetAuto, Force: true}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	serve := map[string]bool{}
	for _, j := range iw.leased() {
		serve[j.ModelID+" "+string(j.Mode)] = j.Serve
	}
	if want := map[string]bool{"f/llama full": true, "f/custom full": false, "f/arch-llama arch": false}; !maps.Equal(serve, want) {
		t.Errorf("jobs' Serve %v, want %v (full mode and declared served only)", serve, want)
	}
	if m, err := f.store.ServingResult(ctx, "f/llama"); err != nil || m.Status != "pass" {
		t.Errorf("f/llama's serving verdict from the worker: %+v %v", m, err)
	}
	for _, id := range []string{"f/custom", "f/arch-llama"} {
		if _, err := f.store.ServingResult(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s has a serving verdict: %v", id, err)
		}
	}
}
