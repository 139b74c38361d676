package scan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// stepClock is a scanner's clock that reads start on its first call and
// start+step on every later one.
type stepClock struct {
	mu    sync.Mutex
	calls int
	start time.Time
	step  time.Duration
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.calls == 1 {
		return c.start
	}
	return c.start.Add(c.step)
}

// DeviceBusy is the probes' device time over the scan's wall time times
// its devices, each probe's time as the ProbeDone hook reports it, times
// the devices it held (a sharded probe holds both); a scan whose clock did
// not move has none.
func TestDeviceBusyIsTheProbesShareOfTheDevices(t *testing.T) {
	for _, tt := range []struct {
		name    string
		wall    time.Duration
		sharded bool // one model that needs both devices (bigLlama), else two of one each
	}{{"wall of 100 s", 100 * time.Second, false}, {"a sharded probe", 100 * time.Second, true}, {"no wall time", 0, false}} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, model("b/1", "text-generation", "transformers"), model("b/2", "text-generation", "transformers"))
			opts, per := Options{Mode: compat.ModeArch, Target: compat.TargetCPU, Devices: 2}, 1.0
			if tt.sharded {
				f = newFixture(t, model("b/big", "text-generation", "transformers"))
				f.hub.configs["b/big"] = bigLlama
				opts.DeviceMemory, per = 3<<20, 2
			}
			f.s.Now = (&stepClock{start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), step: tt.wall}).now
			var mu sync.Mutex
			var held time.Duration
			hooks := Hooks{ProbeDone: func(_ compat.Result, d time.Duration) { mu.Lock(); held += d; mu.Unlock() }}
			sc, err := f.s.Run(context.Background(), opts, hooks)
			if err != nil || sc.Probed != len(f.hub.models) {
				t.Fatalf("scan %+v %v", sc, err)
			}
			if tt.wall == 0 {
				if sc.DeviceBusy != nil {
					t.Errorf("device busy %v with no wall time, want none", *sc.DeviceBusy)
				}
				return
			}
			want := held.Seconds() * per / (tt.wall.Seconds() * 2)
			if sc.DeviceBusy == nil || math.Abs(*sc.DeviceBusy-want) > 1e-9 {
				t.Errorf("device busy %v, want %g (%v of probes over 2 devices × %v)", sc.DeviceBusy, want, held, tt.wall)
			}
		})
	}
}

// A finished scan whose last progress could not be written is still
// closed, and its error says so; the model's progress that could not be
// written is logged.
func TestAFinishedScanReportsItsUnwrittenProgress(t *testing.T) {
	f := newFixture(t, model("p/1", "text-generation", "transformers"))
	st := &failingProgress{SQLite: f.store}
	var buf bytes.Buffer
	f.s.Store, f.s.Logger = st, slog.New(slog.NewTextHandler(&buf, nil))
	hooks := Hooks{ProbeDone: func(compat.Result, time.Duration) { st.failing.Store(true) }}
	sc, err := f.s.Run(context.Background(), Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, hooks)
	if !errors.Is(err, errProgress) {
		t.Errorf("err %v, want the progress failure", err)
	}
	if sc.Status != store.ScanDone || sc.FinishedAt == nil {
		t.Errorf("scan %+v: want it closed as done", sc)
	}
	if n := strings.Count(buf.String(), `level=ERROR msg="scan progress" err="progress not written"`); n != 1 {
		t.Errorf("the model's unwritten progress logged %d times, want once; log:\n%s", n, buf.String())
	}
}

// The pipeline prepares models ahead within its documented bounds. With 2
// devices whose probes never end, 2 jobs probe and 2 wait for a device (at
// most twice the devices asked for or running), the scheduler holds a 5th,
// the queue 2 per device (4) and the feeder a 10th; ahead of those, the
// window lets fetchers (4) + lookahead per device (2 × 2) more be
// prepared: 18 models fetched, and no more.
func TestThePipelinePreparesWithinItsWindow(t *testing.T) {
	var models []hub.ModelInfo
	for i := range 30 {
		models = append(models, model(fmt.Sprintf("w/m%02d", i), "text-generation", "transformers"))
	}
	f := newFixture(t, models...)
	f.prober.block = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.s.Run(ctx, Options{Mode: compat.ModeArch, Target: compat.TargetCPU, Devices: 2, Limit: 30}, Hooks{})
	}()
	defer func() { cancel(); <-done }()
	fetched := func() int {
		f.hub.mu.Lock()
		defer f.hub.mu.Unlock()
		return len(f.hub.downloads)
	}
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return fetched() >= 18 })
	time.Sleep(200 * time.Millisecond)
	if n := fetched(); n != 18 {
		t.Errorf("%d models fetched while the devices are held, want 18", n)
	}
}

// failingWrites is a store whose result, flaky-event and readiness writes
// fail with err when it is set.
type failingWrites struct {
	*store.SQLite
	err error
}

func (s *failingWrites) RecordResult(ctx context.Context, id string, r compat.Result) (store.RecordOutcome, error) {
	if s.err != nil {
		return store.RecordOutcome{}, s.err
	}
	return s.SQLite.RecordResult(ctx, id, r)
}

func (s *failingWrites) RecordFlaky(ctx context.Context, id string, seen compat.Result, kept compat.Status) error {
	if s.err != nil {
		return s.err
	}
	return s.SQLite.RecordFlaky(ctx, id, seen, kept)
}

func (s *failingWrites) SetReadiness(ctx context.Context, u store.ReadinessUpdate) error {
	if s.err != nil {
		return s.err
	}
	return s.SQLite.SetReadiness(ctx, u)
}

// A model's outcome or readiness that cannot be written is logged (the
// scan goes on); written, nothing is logged of it. The flaky change is a
// pass, a fail, then a pass on the rerun.
func TestUnwrittenOutcomesAreLogged(t *testing.T) {
	for _, fail := range []bool{false, true} {
		f := newFixture(t, model("o/m", "text-generation", "transformers"))
		f.prober.answers["o/m"] = []compat.Status{compat.StatusPass, compat.StatusFail, compat.StatusPass}
		ctx := context.Background()
		if _, err := f.s.Run(ctx, Options{Mode: compat.ModeArch}, Hooks{}); err != nil {
			t.Fatal(err)
		}
		st := &failingWrites{SQLite: f.store}
		if fail {
			st.err = errors.New("disk full")
		}
		var buf bytes.Buffer
		f.s.Store, f.s.Logger = st, slog.New(slog.NewTextHandler(&buf, nil))
		if _, err := f.s.Run(ctx, Options{Mode: compat.ModeArch, Force: true}, Hooks{}); err != nil {
			t.Fatal(err)
		}
		f.s.Store = st // a third scan: fail, confirmed, so a result is written
		f.prober.answers["o/m"] = []compat.Status{compat.StatusFail}
		if _, err := f.s.Run(ctx, Options{Mode: compat.ModeArch, Force: true}, Hooks{}); err != nil {
			t.Fatal(err)
		}
		for _, line := range []string{
			`level=ERROR msg="record flaky" model=o/m err="disk full"`,
			`level=ERROR msg="record result" model=o/m err="disk full"`,
			`level=WARN msg="store readiness" model=o/m err="disk full"`,
		} {
			if got := strings.Contains(buf.String(), line); got != fail {
				t.Errorf("writes failing %v: %s logged %v; log:\n%s", fail, line, got, buf.String())
			}
		}
		for _, what := range []string{`msg="record flaky"`, `msg="record result"`, `msg="store readiness"`} {
			if !fail && strings.Contains(buf.String(), what) {
				t.Errorf("a written outcome logged as unwritten: %s; log:\n%s", what, buf.String())
			}
		}
	}
}
