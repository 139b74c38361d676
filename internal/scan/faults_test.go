package scan

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/scanlock"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// faultScanner is a scan over the real Hub client and the fake Hub, with
// the client's waits recorded instead of spent.
func faultScanner(t *testing.T, h *hubtest.Hub) (*Scanner, *fakeProber, *[]time.Duration) {
	t.Helper()
	var mu sync.Mutex
	var waits []time.Duration
	client, err := hub.New(hub.Options{
		Endpoint: h.URL(), CacheDir: filepath.Join(t.TempDir(), "hub"), Logger: quiet,
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return ctx.Err()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeProber{answers: map[string][]compat.Status{}, runtime: compat.Runtime{Torch: "t"}}
	return &Scanner{Hub: client, Prober: p, Store: storetest.MustOpen(t), CacheDir: t.TempDir(), Logger: quiet}, p, &waits
}

func faultRepos(n int) []hubtest.Repo {
	var repos []hubtest.Repo
	for i := range n {
		repos = append(repos, hubtest.Repo{
			ID: fmt.Sprintf("fault/m-%d", i), PipelineTag: "text-generation", Library: "transformers", Downloads: int64(100 - i),
			Files: map[string][]byte{"config.json": []byte(llamaConfig)},
		})
	}
	return repos
}

// TestScanThroughHubFaults runs whole scans while the Hub misbehaves: the
// scan rides out 429 storms, 5xx answers, slow and truncated transfers, and
// records every model; a listing that is not JSON fails the scan cleanly
// without blaming any model, and the next scan recovers.
func TestScanThroughHubFaults(t *testing.T) {
	tests := []struct {
		name   string
		faults func(h *hubtest.Hub)
		fails  bool
	}{
		{"429 storm on the listing", func(h *hubtest.Hub) { h.Fault("/api/models", hubtest.Status429(2).Times(4)) }, false},
		{"429 storm on downloads", func(h *hubtest.Hub) { h.Fault("/fault/", hubtest.Status429(1).Times(4)) }, false},
		{"5xx on the listing and downloads", func(h *hubtest.Hub) {
			h.Fault("/api/models", hubtest.Status5xx(502).Times(2))
			h.Fault("/fault/m-1/", hubtest.Status5xx(503).Times(3))
		}, false},
		{"slow answers", func(h *hubtest.Hub) { h.Fault("/fault/", hubtest.Slow(30*time.Millisecond).Times(-1)) }, false},
		{"truncated transfer", func(h *hubtest.Hub) { h.Fault("/fault/m-2/resolve/", hubtest.Truncate(5).Times(2)) }, false},
		{"malformed listing", func(h *hubtest.Hub) { h.Fault("/api/models", hubtest.MalformedJSON().Times(-1)) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := hubtest.New(t, faultRepos(4)...)
			tt.faults(h)
			s, _, waits := faultScanner(t, h)
			sc, err := s.Run(context.Background(), Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{})
			if tt.fails {
				if !errors.Is(err, ErrHub) || sc.Status != store.ScanFailed {
					t.Fatalf("err %v, scan %s: want a failed scan", err, sc.Status)
				}
				for i := range 4 {
					if _, err := s.Store.LatestResult(context.Background(), fmt.Sprintf("fault/m-%d", i), compat.TargetCPU); err == nil {
						t.Errorf("a model was recorded although the listing failed")
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			if sc.Done != 4 || sc.Probed != 4 {
				t.Fatalf("scan %+v", sc)
			}
			for i := range 4 {
				r, err := s.Store.LatestResult(context.Background(), fmt.Sprintf("fault/m-%d", i), compat.TargetCPU)
				if err != nil || r.Status != compat.StatusPass {
					t.Errorf("fault/m-%d: %v %v", i, r.Status, err)
				}
			}
			t.Logf("client waited %d times", len(*waits))
		})
	}
}

// TestScanTimeout: a scan past its --scan-timeout ends interrupted with an
// error that names the flag; the probe in flight is stopped and not
// blamed.
func TestScanTimeout(t *testing.T) {
	f := newFixture(t, model("a/1", "text-generation", "transformers"), model("a/2", "text-generation", "transformers"))
	f.prober.block = make(chan struct{}) // every probe hangs
	start := time.Now()
	sc, err := f.s.Run(context.Background(), Options{Mode: compat.ModeArch, ScanTimeout: 300 * time.Millisecond}, Hooks{})
	if !errors.Is(err, ErrScanTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrScanTimeout", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the scan took %s past a 300 ms deadline", took)
	}
	if sc.Status != store.ScanInterrupted || !strings.Contains(sc.Error, "--scan-timeout 300ms") {
		t.Errorf("scan %s %q, want interrupted naming --scan-timeout", sc.Status, sc.Error)
	}
	if got := f.status(t, "a/1"); got != compat.StatusUntested {
		t.Errorf("the probe cut by the deadline was recorded as %s", got)
	}
}

// TestServiceWaitsForAForeignScan: while another holder has the database's
// scan lock (another process's scanner scan), the service reports that
// scan as running (Foreign, with its scan id), keeps its own request
// queued without recording anything, and runs it once the lock is free.
func TestServiceWaitsForAForeignScan(t *testing.T) {
	f := newFixture(t, model("a/1", "text-generation", "transformers"))
	f.s.ScanLock = filepath.Join(t.TempDir(), "scanner.db")
	other, err := scanlock.TryLock(f.s.ScanLock) // another open file description: as another process
	if err != nil {
		t.Fatal(err)
	}
	other.SetScan(77)
	svc := NewService(f.s, Options{Mode: compat.ModeArch}, quiet)
	svc.LockPoll = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	if st := svc.State(); !st.Running || !st.Foreign || st.ScanID != 77 || st.Queued {
		t.Errorf("idle service beside a foreign scan: %+v", st)
	}
	if err := svc.Request("schedule"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // a few polls, and past the state's one-second memory
	if st := svc.State(); !st.Running || !st.Foreign || !st.Queued {
		t.Errorf("waiting: %+v, want the foreign scan running and ours queued", st)
	}
	if scans, _ := f.store.ListScans(ctx, 10); len(scans) != 0 {
		t.Errorf("%d scans recorded while another held the lock", len(scans))
	}
	other.Release()
	waitFor(t, func() bool { return f.status(t, "a/1") == compat.StatusPass })
	waitFor(t, func() bool { st := svc.State(); return !st.Running && !st.Foreign })
}
