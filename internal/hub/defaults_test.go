package hub

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// modelServer answers model info for any id, after failing the first fail
// requests with 503, and records the User-Agent of each request.
func modelServer(t *testing.T, fail int) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var agents []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents = append(agents, r.Header.Get("User-Agent"))
		n := len(agents)
		mu.Unlock()
		if n <= fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"id":"x/y","sha":"` + strings.Repeat("a", 40) + `"}`))
	}))
	t.Cleanup(s.Close)
	return s, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), agents...)
	}
}

// TestUserAgent: every request names the scanner, or what the caller chose.
func TestUserAgent(t *testing.T) {
	for _, tt := range []struct{ set, want string }{
		{"", "torchtpu-scanner"},
		{"my-mirror-checker/2.0", "my-mirror-checker/2.0"},
	} {
		s, agents := modelServer(t, 0)
		c, err := New(Options{Endpoint: s.URL, UserAgent: tt.set})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ModelInfo(context.Background(), "x/y", ""); err != nil {
			t.Fatal(err)
		}
		if got := agents(); len(got) != 1 || got[0] != tt.want {
			t.Errorf("UserAgent %q: the server saw %q, want %q", tt.set, got, tt.want)
		}
	}
}

// TestDefaultRetryWaits: without Options.Backoff, a retry waits about a
// second (1 s ± 25%), then about two.
func TestDefaultRetryWaits(t *testing.T) {
	s, agents := modelServer(t, 2)
	var waits []time.Duration
	c, err := New(Options{Endpoint: s.URL, Sleep: func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ModelInfo(context.Background(), "x/y", ""); err != nil {
		t.Fatal(err)
	}
	if len(agents()) != 3 || len(waits) != 2 {
		t.Fatalf("%d requests, waits %v; want 3 requests and 2 waits", len(agents()), waits)
	}
	for i, base := range []time.Duration{time.Second, 2 * time.Second} {
		if d := waits[i]; d < base*3/4 || d > base*5/4 {
			t.Errorf("wait %d: %v, want %v ± 25%%", i+1, d, base)
		}
	}
}

// TestSleepCtx: the default Sleep waits d, returns at once for d <= 0, and
// reports a done context whatever d is.
func TestSleepCtx(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for range 200 { // the select would pick a ready timer half of the time
		if err := sleepCtx(done, 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("sleep 0 on a done context: %v, want context.Canceled", err)
		}
	}
	if err := sleepCtx(done, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("sleep 1h on a done context: %v", err)
	}
	if err := sleepCtx(context.Background(), -time.Second); err != nil {
		t.Fatalf("negative sleep: %v", err)
	}
	start := time.Now()
	if err := sleepCtx(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Errorf("sleep 20ms returned after %v", took)
	}
}
