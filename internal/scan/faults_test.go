package scan

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/scanlock"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
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

// served counts the requests whose path starts with prefix that the fake
// Hub answered with status.
func served(h *hubtest.Hub, method, prefix string, status int) int {
	n := 0
	for _, r := range h.Requests() {
		if r.Method == method && strings.HasPrefix(r.Path, prefix) && r.Status == status {
			n++
		}
	}
	return n
}

// waitsWithin checks the client's waits against bounds, in order: the
// backoff is 1, 2, 4 s with ±25% jitter; a 429 whose RateLimit header says
// the window resets in t s waits t+1 s (huggingface_hub's rule).
func waitsWithin(t *testing.T, waits []time.Duration, bounds ...[2]time.Duration) {
	t.Helper()
	if len(waits) != len(bounds) {
		t.Fatalf("the client waited %v; want %d waits", waits, len(bounds))
	}
	for i, b := range bounds {
		if waits[i] < b[0] || waits[i] > b[1] {
			t.Errorf("wait %d was %v, want within [%v, %v] (all: %v)", i, waits[i], b[0], b[1], waits)
		}
	}
}

func exactly(d time.Duration) [2]time.Duration { return [2]time.Duration{d, d} }

// backoff is the range of the client's backoff before try n+1.
func backoff(n int) [2]time.Duration {
	d := time.Second << (n - 1)
	return [2]time.Duration{d * 3 / 4, d * 5 / 4}
}

// TestScanThroughHubFaults runs whole scans while the Hub misbehaves: the
// scan rides out 429 storms, 5xx answers, slow and truncated transfers, and
// records every model; each case checks that its faults were served and
// that the client waited as promised. A listing that is not JSON fails the
// scan cleanly without blaming any model, and the next scan recovers.
func TestScanThroughHubFaults(t *testing.T) {
	const listing, files = "/api/models", "/fault/"
	tests := []struct {
		name   string
		faults func(h *hubtest.Hub)
		fails  bool
		check  func(t *testing.T, h *hubtest.Hub, waits []time.Duration)
	}{
		{"429 storm on the listing", func(h *hubtest.Hub) { h.Fault(listing, hubtest.Status429(2).Times(4)) }, false,
			func(t *testing.T, h *hubtest.Hub, waits []time.Duration) {
				if n := served(h, "GET", listing, 429); n != 4 {
					t.Errorf("%d listing answers were 429, want 4", n)
				}
				waitsWithin(t, waits, exactly(3*time.Second), exactly(3*time.Second), exactly(3*time.Second), exactly(3*time.Second))
			}},
		{"429 storm on downloads", func(h *hubtest.Hub) { h.Fault(files, hubtest.Status429(1).Times(4)) }, false,
			func(t *testing.T, h *hubtest.Hub, waits []time.Duration) {
				if n := served(h, "HEAD", files, 429) + served(h, "GET", files, 429); n != 4 {
					t.Errorf("%d file answers were 429, want 4", n)
				}
				// Each 429 (r=0;t=1) is retried after t+1 = 2 s. Downloads run
				// side by side: one that starts inside that window is paced
				// until it ends (under 2 s), as often as the timing has it.
				retries := 0
				for _, w := range waits {
					switch {
					case w == 2*time.Second:
						retries++
					case w <= 0 || w > 2*time.Second:
						t.Errorf("a wait of %v: neither a 429's 2 s nor pacing within its window (all: %v)", w, waits)
					}
				}
				if retries != 4 {
					t.Errorf("the client waited %v: %d waits of 2 s, want one per 429 (4)", waits, retries)
				}
			}},
		{"5xx on the listing and downloads", func(h *hubtest.Hub) {
			h.Fault(listing, hubtest.Status5xx(502).Times(2))
			h.Fault("/fault/m-1/", hubtest.Status5xx(503).Times(3))
		}, false, func(t *testing.T, h *hubtest.Hub, waits []time.Duration) {
			if n := served(h, "GET", listing, 502); n != 2 {
				t.Errorf("%d listing answers were 502, want 2", n)
			}
			if n := served(h, "HEAD", "/fault/m-1/", 503) + served(h, "GET", "/fault/m-1/", 503); n != 3 {
				t.Errorf("%d answers for m-1 were 503, want 3", n)
			}
			// The listing comes first, then m-1's three retries, each backoff doubling.
			waitsWithin(t, waits, backoff(1), backoff(2), backoff(1), backoff(2), backoff(3))
		}},
		{"slow answers", func(h *hubtest.Hub) { h.Fault(files, hubtest.Slow(30*time.Millisecond).Times(-1)) }, false,
			func(t *testing.T, h *hubtest.Hub, waits []time.Duration) {
				if n := served(h, "HEAD", files, 200) + served(h, "GET", files, 200); n < 8 {
					t.Errorf("%d slow file answers, want a HEAD and a GET for each of 4 models", n)
				}
				waitsWithin(t, waits) // slow is not broken: no retry
			}},
		{"truncated transfer", func(h *hubtest.Hub) { h.Fault("/fault/m-2/resolve/", hubtest.Truncate(5).Times(2)) }, false,
			func(t *testing.T, h *hubtest.Hub, waits []time.Duration) {
				// Each cut after 5 bytes is resumed from the bytes already on disk.
				var ranges []string
				for _, r := range h.Requests() {
					if r.Method == "GET" && strings.HasPrefix(r.Path, "/fault/m-2/resolve/") {
						ranges = append(ranges, fmt.Sprintf("%q %d", r.Range, r.Status))
					}
				}
				if want := []string{`"" 200`, `"bytes=5-" 206`, `"bytes=10-" 206`}; !slices.Equal(ranges, want) {
					t.Errorf("m-2 GETs (Range, status) %v, want %v", ranges, want)
				}
			}},
		{"malformed listing", func(h *hubtest.Hub) { h.Fault(listing, hubtest.MalformedJSON()) }, true, nil},
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
				// The fault was one answer: the next scan recovers.
				sc, err = s.Run(context.Background(), Options{Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{})
			}
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			if sc.Done != 4 || sc.Probed != 4 || sc.Status != store.ScanDone {
				t.Fatalf("scan %+v", sc)
			}
			for i := range 4 {
				r, err := s.Store.LatestResult(context.Background(), fmt.Sprintf("fault/m-%d", i), compat.TargetCPU)
				if err != nil || r.Status != compat.StatusPass {
					t.Errorf("fault/m-%d: %v %v", i, r.Status, err)
				}
			}
			if tt.check != nil {
				tt.check(t, h, *waits)
			}
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
	// Through many polls and past the state's one-second memory, every
	// look (even one while ours retries the lock) sees the foreign scan.
	for end := time.Now().Add(1100 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if st := svc.State(); !st.Running || !st.Foreign || !st.Queued {
			t.Fatalf("waiting: %+v, want the foreign scan running and ours queued", st)
		}
	}
	if scans, _ := f.store.ListScans(ctx, 10); len(scans) != 0 {
		t.Errorf("%d scans recorded while another held the lock", len(scans))
	}
	other.Release()
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return f.status(t, "a/1") == compat.StatusPass })
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { st := svc.State(); return !st.Running && !st.Foreign })
}
