package scan

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
	"github.com/google-pytorch/torchtpu-scanner/internal/scanlock"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

func fleetModels(prefix string, n int) []hub.ModelInfo {
	var out []hub.ModelInfo
	for i := range n {
		out = append(out, model(prefix+string(rune('a'+i)), "text-generation", "transformers"))
	}
	return out
}

// TestAFleetScanPastItsDeadlineEnds: --scan-timeout under --dispatch
// workers ends the scan interrupted (not left running beside the next),
// withdraws its queued jobs, lets the leased one finish (recorded once),
// and releases the one-scan lock.
func TestAFleetScanPastItsDeadlineEnds(t *testing.T) {
	f, _, iw := fleetFixture(t, fleetModels("d/", 4)...)
	f.s.ScanLock = filepath.Join(t.TempDir(), "scanner.db")
	iw.w.Devices = 1
	iw.hold = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go iw.run(ctx)
	sc, err := f.s.Run(ctx, Options{Mode: compat.ModeArch, Target: compat.TargetCPU, ScanTimeout: time.Second}, Hooks{})
	if !errors.Is(err, ErrScanTimeout) || sc.Status != store.ScanInterrupted || !strings.Contains(sc.Error, "--scan-timeout") {
		t.Fatalf("scan %+v, %v: want interrupted by its deadline", sc, err)
	}
	if c, _ := f.store.ScanJobs(ctx, sc.ID); c.Queued != 0 || c.Leased != 1 || c.Cancelled != 3 {
		t.Errorf("jobs after the deadline %+v: want the queued withdrawn, the leased one left to finish", c)
	}
	l, err := scanlock.TryLock(f.s.ScanLock)
	if err != nil {
		t.Fatalf("the scan lock is still held: %v", err)
	}
	l.Release()
	close(iw.hold) // the probe in flight finishes after the deadline
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { c, _ := f.store.ScanJobs(ctx, sc.ID); return c.Done == 1 })
	if h, _ := f.store.History(ctx, "d/a", "", 10); len(h) != 1 {
		t.Errorf("d/a: %d results, want its one", len(h))
	}
	// The next scan tests the rest.
	sc2, err := f.s.Run(ctx, Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{})
	if err != nil || sc2.Status != store.ScanDone || sc2.Probed != 3 || sc2.Unchanged != 1 {
		t.Errorf("the next scan %+v %v", sc2, err)
	}
	for _, m := range fleetModels("d/", 4) {
		if h, _ := f.store.History(ctx, m.ID, "", 10); len(h) != 1 {
			t.Errorf("%s: %d results, want exactly one", m.ID, len(h))
		}
	}
}

// TestAResumedScanKeepsItsDeadline: a scan resumed by the next server
// process keeps the deadline it started with.
func TestAResumedScanKeepsItsDeadline(t *testing.T) {
	f, _, _ := fleetFixture(t, fleetModels("k/", 2)...)
	ctx := context.Background()
	stop, cancel := context.WithCancel(ctx)
	go func() {
		waitQueued(t, f.store, 2)
		cancel()
	}()
	sc, err := f.s.Run(stop, Options{Mode: compat.ModeArch, Target: compat.TargetCPU, ScanTimeout: time.Second}, Hooks{})
	if !errors.Is(err, context.Canceled) || sc.Status != store.ScanRunning {
		t.Fatalf("stopped scan %+v %v", sc, err)
	}
	time.Sleep(1100 * time.Millisecond) // past the deadline, counted from its start
	start := time.Now()
	resumed, err := f.s.Resume(ctx, sc.ID, Hooks{})
	if !errors.Is(err, ErrScanTimeout) || resumed.Status != store.ScanInterrupted || time.Since(start) > 5*time.Second {
		t.Errorf("resumed past its deadline: %+v %v after %v", resumed, err, time.Since(start))
	}
}

// TestAFleetScanReplansAfterARollout: the workers of the planned runtime
// leave mid-scan and workers of a new runtime come; past the fleet wait
// the scan re-plans its queued jobs for the new runtime (saying so on its
// record) and completes, every model recorded once.
func TestAFleetScanReplansAfterARollout(t *testing.T) {
	models := fleetModels("r/", 5)
	f, d, old := fleetFixture(t, models...)
	f.s.FleetWait = 500 * time.Millisecond
	old.w.Devices = 1
	var taken atomic.Int32
	old.hold = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	octx, stopOld := context.WithCancel(ctx)
	go old.run(octx)
	go func() { // the old worker does two jobs, then is rolled out
		for range 2 {
			old.hold <- struct{}{}
			taken.Add(1)
		}
		testenv.Eventually(t, "the condition", 10*time.Second, func() bool { old.mu.Lock(); defer old.mu.Unlock(); return len(old.posted) == 2 })
		stopOld()
		if err := d.Leave(context.Background(), fleet.LeaveRequest{WorkerID: old.w.ID}); err != nil {
			t.Error(err)
		}
		newRT := f.prober.runtime
		newRT.Transformers = "5.24.0"
		nw := &inProcessWorker{d: d, w: fleet.Worker{ID: "w2", Host: "tpu-host-2", Target: compat.TargetCPU, Runtime: newRT,
			Devices: 2, MemoryBytes: 32 << 30}}
		go nw.run(ctx)
	}()
	sc, err := f.s.Run(ctx, Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{})
	if err != nil || sc.Status != store.ScanDone || sc.Done != 5 || sc.Probed != 5 {
		t.Fatalf("scan %+v %v", sc, err)
	}
	if !strings.Contains(sc.FleetNote, "re-planned") || sc.StalledSince != nil || sc.Runtime.Transformers != "5.24.0" {
		t.Errorf("scan record: note %q, stalled %v, runtime %+v", sc.FleetNote, sc.StalledSince, sc.Runtime)
	}
	byRuntime := map[string]int{}
	for _, m := range models {
		h, _ := f.store.History(ctx, m.ID, "", 10)
		if len(h) != 1 {
			t.Errorf("%s: %d results, want exactly one", m.ID, len(h))
			continue
		}
		byRuntime[h[0].Runtime.Transformers]++
	}
	if byRuntime["5.23.0"] != 2 || byRuntime["5.24.0"] != 3 {
		t.Errorf("results by transformers version %v: want 2 from before the rollout, 3 after", byRuntime)
	}
}

// TestAStalledScanWithoutAFleetEnds: with no worker of the target left,
// past the fleet wait the scan ends interrupted, saying why, and the
// service retries later (fleet.ErrNoWorkers).
func TestAStalledScanWithoutAFleetEnds(t *testing.T) {
	f, d, w := fleetFixture(t, fleetModels("s/", 2)...)
	f.s.FleetWait = 300 * time.Millisecond
	ctx := context.Background()
	go func() {
		waitQueued(t, f.store, 2)
		if err := d.Leave(ctx, fleet.LeaveRequest{WorkerID: w.w.ID}); err != nil {
			t.Error(err)
		}
	}()
	sc, err := f.s.Run(ctx, Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{})
	if !errors.Is(err, fleet.ErrStalled) || !errors.Is(err, fleet.ErrNoWorkers) || sc.Status != store.ScanInterrupted ||
		!strings.Contains(sc.Error, "no live worker") {
		t.Fatalf("scan %+v, %v: want interrupted, stalled without workers", sc, err)
	}
	if c, _ := f.store.ScanJobs(ctx, sc.ID); c.Open() != 0 {
		t.Errorf("jobs %+v: want none left open", c)
	}
}

// TestAScanRenewsItsOwner: a running scan renews its owner's claim, and
// stops when it ends.
func TestAScanRenewsItsOwner(t *testing.T) {
	f := newFixture(t, model("o/a", "text-generation", "transformers"))
	cs := &renewCounter{SQLite: f.store}
	f.s.Store, f.s.OwnerBeat = cs, 20*time.Millisecond
	f.prober.delay = 300 * time.Millisecond
	if _, err := f.s.Run(context.Background(), Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	n := cs.n.Load()
	if n < 5 {
		t.Errorf("renewed %d times in a 300 ms scan at 20 ms", n)
	}
	time.Sleep(100 * time.Millisecond)
	if after := cs.n.Load(); after != n {
		t.Errorf("renewed %d more times after the scan ended", after-n)
	}
}

type renewCounter struct {
	*store.SQLite
	n    atomic.Int32
	fail error // when set, every renewal fails with it
}

func (c *renewCounter) RenewScanOwner(ctx context.Context, id int64) error {
	c.n.Add(1)
	if c.fail != nil {
		return c.fail
	}
	return c.SQLite.RenewScanOwner(ctx, id)
}

// TestSIGTERMIsNotAFailure: a scan stopped by shutdown is logged as
// interrupted, never as level=ERROR "scan failed".
func TestSIGTERMIsNotAFailure(t *testing.T) {
	f, _, iw := fleetFixture(t, fleetModels("t/", 2)...)
	f.hub.delays = map[string]time.Duration{"t/b": time.Hour} // still planning when stopped
	iw.hold = make(chan struct{})
	var buf proctest.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	svc := NewService(f.s, Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.Run(ctx); close(done) }()
	wctx, stopWorker := context.WithCancel(context.Background())
	defer stopWorker()
	go iw.run(wctx)
	if err := svc.Request("manual"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return len(iw.leased()) > 0 })
	cancel()
	<-done
	out := buf.String()
	if strings.Contains(out, "level=ERROR") || !strings.Contains(out, "scan interrupted by shutdown") {
		t.Errorf("log after SIGTERM:\n%s", out)
	}
}

// waitQueued waits until the newest scan has queued n jobs.
func waitQueued(t *testing.T, st *store.SQLite, n int) {
	t.Helper()
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool {
		scans, _ := st.ListScans(context.Background(), 1)
		if len(scans) == 0 {
			return false
		}
		c, _ := st.ScanJobs(context.Background(), scans[0].ID)
		return c.Total == n
	})
}

// With OwnerBeat unset a scan renews its claim every store.OwnerBeat
// (10 s): a scan of a fraction of a second renews it never.
func TestAScanRenewsAtTheDefaultBeat(t *testing.T) {
	f := newFixture(t, model("o/a", "text-generation", "transformers"))
	cs := &renewCounter{SQLite: f.store}
	f.s.Store = cs
	f.prober.delay = 100 * time.Millisecond
	if _, err := f.s.Run(context.Background(), Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if n := cs.n.Load(); n != 0 {
		t.Errorf("renewed %d times in a short scan, want none before %v", n, store.OwnerBeat)
	}
}

// A renewal that fails while the scan runs is logged; one that succeeds is
// not.
func TestAFailedOwnerRenewalIsLogged(t *testing.T) {
	for _, fail := range []bool{false, true} {
		f := newFixture(t, model("o/a", "text-generation", "transformers"))
		cs := &renewCounter{SQLite: f.store}
		if fail {
			cs.fail = store.ErrNotOwner
		}
		var buf proctest.Buffer
		f.s.Store, f.s.OwnerBeat, f.s.Logger = cs, 10*time.Millisecond, slog.New(slog.NewTextHandler(&buf, nil))
		f.prober.delay = 150 * time.Millisecond
		if _, err := f.s.Run(context.Background(), Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{}); err != nil {
			t.Fatal(err)
		}
		if cs.n.Load() == 0 {
			t.Fatalf("fail %v: no renewal in a 150 ms scan at 10 ms", fail)
		}
		if warned := strings.Contains(buf.String(), `level=WARN msg="scan owner not renewed"`); warned != fail {
			t.Errorf("renewals failing %v: warned %v; log:\n%s", fail, warned, buf.String())
		}
	}
}
