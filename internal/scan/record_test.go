package scan

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
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
// its devices, each probe's time as the ProbeDone hook reports it; a scan
// whose clock did not move has none.
func TestDeviceBusyIsTheProbesShareOfTheDevices(t *testing.T) {
	for _, tt := range []struct {
		name string
		wall time.Duration
	}{{"wall of 100 s", 100 * time.Second}, {"no wall time", 0}} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, model("b/1", "text-generation", "transformers"), model("b/2", "text-generation", "transformers"))
			f.s.Now = (&stepClock{start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), step: tt.wall}).now
			var mu sync.Mutex
			var held time.Duration
			hooks := Hooks{ProbeDone: func(_ compat.Result, d time.Duration) { mu.Lock(); held += d; mu.Unlock() }}
			sc, err := f.s.Run(context.Background(), Options{Mode: compat.ModeArch, Target: compat.TargetCPU, Devices: 2}, hooks)
			if err != nil || sc.Probed != 2 {
				t.Fatalf("scan %+v %v", sc, err)
			}
			if tt.wall == 0 {
				if sc.DeviceBusy != nil {
					t.Errorf("device busy %v with no wall time, want none", *sc.DeviceBusy)
				}
				return
			}
			want := held.Seconds() / (tt.wall.Seconds() * 2)
			if sc.DeviceBusy == nil || math.Abs(*sc.DeviceBusy-want) > 1e-9 {
				t.Errorf("device busy %v, want %g (%v of probes over 2 devices × %v)", sc.DeviceBusy, want, held, tt.wall)
			}
		})
	}
}

// A finished scan whose last progress could not be written is still
// closed, and its error says so.
func TestAFinishedScanReportsItsUnwrittenProgress(t *testing.T) {
	f := newFixture(t, model("p/1", "text-generation", "transformers"))
	st := &failingProgress{SQLite: f.store}
	f.s.Store = st
	hooks := Hooks{ProbeDone: func(compat.Result, time.Duration) { st.failing.Store(true) }}
	sc, err := f.s.Run(context.Background(), Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, hooks)
	if !errors.Is(err, errProgress) {
		t.Errorf("err %v, want the progress failure", err)
	}
	if sc.Status != store.ScanDone || sc.FinishedAt == nil {
		t.Errorf("scan %+v: want it closed as done", sc)
	}
}
