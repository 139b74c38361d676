package worker

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

func health(w *Worker) (int, Health) {
	rec := httptest.NewRecorder()
	w.HealthHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	var h Health
	_ = json.Unmarshal(rec.Body.Bytes(), &h)
	return rec.Code, h
}

// TestAMisconfiguredWorkerSaysWhatIsWrong: 401, 403 and 404 are not "server
// not reachable": the worker names the cause (no token, a wrong token, the
// work routes off, not a scanner at all), backs off, and its /healthz
// fails once that lasted longer than MisconfiguredAfter (a restart of the
// pod will not fix it, an operator must).
func TestAMisconfiguredWorkerSaysWhatIsWrong(t *testing.T) {
	notScanner := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notScanner.Close)
	local := http.NewServeMux()
	local.HandleFunc("GET /api/v1/workers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"dispatch":"local","workers":[]}`)
	})
	localServer := httptest.NewServer(local)
	t.Cleanup(localServer.Close)
	f := newFakeServer(t, 5*time.Second)
	for _, tc := range []struct {
		name, server, token, says string
	}{
		{"no token", f.srv.URL, "", "no worker token"},
		{"wrong token", f.srv.URL, "wrong", "wrong worker token"},
		{"not a scanner", notScanner.URL, testToken, "not a scanner server"},
		{"dispatch local", localServer.URL, testToken, "--dispatch local"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs proctest.Buffer
			p := &fakeProber{}
			w, err := New(Config{Server: tc.server, Token: tc.token, ID: "w-" + strings.ReplaceAll(tc.name, " ", "-"), Host: "h",
				Target: compat.TargetCPU, MisconfiguredAfter: 300 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))}, p, []Prober{p}, fakeFetcher{})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { done <- w.Run(ctx) }()
			testenv.Eventually(t, "the diagnosis in the log", 20*time.Second, func() bool { return strings.Contains(logs.String(), tc.says) })
			if code, h := health(w); code != http.StatusOK {
				t.Errorf("healthz before the bound: %d %+v", code, h)
			}
			testenv.Eventually(t, "healthz to fail", 20*time.Second, func() bool { code, _ := health(w); return code == http.StatusServiceUnavailable })
			if _, h := health(w); h.Status != "misconfigured" || !strings.Contains(h.Error, tc.says) {
				t.Errorf("healthz %+v: want misconfigured, saying %q", h, tc.says)
			}
			if strings.Contains(logs.String(), "server not reachable") {
				t.Errorf("the log says the server is not reachable:\n%s", logs.String())
			}
			// Backed off: a handful of attempts in the time, not a storm.
			if n := strings.Count(logs.String(), tc.says); n > 8 {
				t.Errorf("%d attempts logged in well under a minute: no back-off", n)
			}
			cancel()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return")
			}
		})
	}
}

// TestAServerOutageKeepsTheWorkerHealthy: a server that is down or
// restarting (connection refused, 503) is waited out, healthy.
func TestAServerOutageKeepsTheWorkerHealthy(t *testing.T) {
	f := newFakeServer(t, 5*time.Second)
	f.down.Store(true)
	p := &fakeProber{}
	w, err := New(Config{Server: f.srv.URL, Token: testToken, ID: "w", Host: "h", Target: compat.TargetCPU,
		MisconfiguredAfter: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}, p, []Prober{p}, fakeFetcher{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Run(ctx)
	time.Sleep(time.Second)
	if code, h := health(w); code != http.StatusOK || h.ServerUp {
		t.Errorf("healthz through an outage: %d %+v", code, h)
	}
}

// TestAStoppingWorkerSaysItLeaves: on SIGTERM, after its probes, a worker
// tells the server it is leaving.
func TestAStoppingWorkerSaysItLeaves(t *testing.T) {
	f := newFakeServer(t, 5*time.Second, job("org/a"))
	p := &fakeProber{delay: 10 * time.Millisecond}
	w, stop := startWorker(t, f, p, 1, time.Second, nil)
	testenv.Eventually(t, "the result", 20*time.Second, func() bool { acc, _, _, _ := f.snapshot(); return len(acc) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := f.leavers(); len(got) != 1 || got[0] != w.cfg.ID {
		t.Errorf("leavers %v, want [%s]", got, w.cfg.ID)
	}
}
