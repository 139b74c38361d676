package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/knownissues"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/internal/watch"
	"github.com/google-pytorch/torchtpu-scanner/web"
)

// TestServe runs serve on a free port against a fake Hub: it says where it
// serves, answers /healthz with its version, queues the first scan of an
// empty database only when scheduling is on, serves the worker protocol
// only under --dispatch workers, and stops serving when its context ends,
// returning nil.
func TestServe(t *testing.T) {
	h := hubtest.New(t)
	addrRE := regexp.MustCompile(`msg=serving addr=(\S+)`)
	for _, tc := range []struct{ noSchedule, workers bool }{{true, false}, {false, false}, {true, true}} {
		noSchedule := tc.noSchedule
		cfg := testConfig(t)
		cfg.Addr, cfg.HubEndpoint, cfg.NoSchedule, cfg.WorkerToken = "127.0.0.1:0", h.URL(), noSchedule, "wt"
		if tc.workers {
			cfg.Dispatch = config.DispatchWorkers
		}
		a, logs := newApp(t, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Serve(ctx) }()
		t.Cleanup(cancel) // a test that fails stops serve too
		var addr string
		testenv.EventuallyShowing(t, fmt.Sprintf("no-schedule %v: serve to say where it serves", noSchedule), 30*time.Second, func() bool {
			if m := addrRE.FindStringSubmatch(logs.String()); m != nil {
				addr = m[1]
			}
			return addr != ""
		}, logs.String)
		wantSchedule := `schedule="0 */6 * * *"`
		if noSchedule {
			wantSchedule = "schedule=off"
		}
		if !strings.Contains(logs.String(), wantSchedule) {
			t.Errorf("no-schedule %v: log lacks %s:\n%s", noSchedule, wantSchedule, logs)
		}
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("GET /healthz: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"version":"v-test"`) {
			t.Errorf("/healthz: %d %s", resp.StatusCode, body)
		}
		// The worker protocol: refused without the token under --dispatch workers, absent otherwise.
		resp, err = http.Post("http://"+addr+fleet.PathRegister, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{true: http.StatusUnauthorized, false: http.StatusNotFound}[tc.workers]; resp.StatusCode != want {
			t.Errorf("workers %v: POST %s without a token: %d, want %d", tc.workers, fleet.PathRegister, resp.StatusCode, want)
		}
		if !noSchedule {
			testenv.Eventually(t, "scheduling on, empty database: a startup scan", 30*time.Second, func() bool {
				scans, err := a.Store.ListScans(context.Background(), 5)
				return err == nil && len(scans) > 0 && scans[0].Trigger == "startup"
			})
		}
		if strings.Contains(logs.String(), "first scan not queued") {
			t.Errorf("the first scan was queued, but the log says:\n%s", logs)
		}
		if noSchedule {
			if scans, err := a.Store.ListScans(context.Background(), 5); err != nil || len(scans) != 0 {
				t.Errorf("--no-schedule: scans %+v (%v), want none", scans, err)
			}
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("no-schedule %v: serve returned %v, want nil", noSchedule, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no-schedule %v: serve did not stop in 30 s", noSchedule)
		}
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			t.Errorf("no-schedule %v: still serving after serve returned", noSchedule)
		}
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

// TestWatchWiring: serve's known issues, test-request desk and webhooks go
// into the web server's config (and the webhooks' sender into the scan's
// progress) when configured, each logged; nothing of them when not.
func TestWatchWiring(t *testing.T) {
	cfg := testConfig(t)
	var err error
	if cfg.KnownIssues, err = knownissues.Parse([]byte(`{"oom": {"title": "Out of memory", "url": "http://tracker.example/oom", "state": "open"}}`)); err != nil {
		t.Fatal(err)
	}
	if cfg.Webhooks, err = watch.ParseWebhooks([]byte(`[{"name": "ci", "url": "http://127.0.0.1:9/hook", "secret": "0123456789abcdef0123"}]`)); err != nil {
		t.Fatal(err)
	}
	cfg.RequestRate, cfg.RequestQueue, cfg.RequestShare = 7, 3, 0.25
	a, logs := newApp(t, cfg)
	defer a.Close()
	var wcfg web.Config
	sender, err := a.watch(context.Background(), &wcfg)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	if a.Service.RequestShare != 0.25 {
		t.Errorf("the service's request share %v, want --request-share's 0.25", a.Service.RequestShare)
	}
	if sender == nil || wcfg.Requests == nil || wcfg.KnownIssues.Len() != 1 || wcfg.RequestRate != 7 || a.Scanner.Hooks.Progress == nil {
		t.Errorf("sender %v, requests %v, known issues %d, request rate %v, progress hook set %v",
			sender, wcfg.Requests, wcfg.KnownIssues.Len(), wcfg.RequestRate, a.Scanner.Hooks.Progress != nil)
	}
	for _, want := range []string{"known issues on", "entries=1", "webhooks without --public-url", "webhooks on", "webhooks=[ci]"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs.String(), "queued again") {
		t.Errorf("no test request was left running, but:\n%s", logs)
	}

	cfg = testConfig(t)
	cfg.RequestQueue, cfg.PublicURL = 0, "https://scanner.example"
	a, logs = newApp(t, cfg)
	defer a.Close()
	wcfg = web.Config{}
	if sender, err := a.watch(context.Background(), &wcfg); err != nil || sender != nil || wcfg.Requests != nil || a.Scanner.Hooks.Progress != nil {
		t.Errorf("nothing configured: sender %v (%v), requests %v, progress hook set %v", sender, err, wcfg.Requests, a.Scanner.Hooks.Progress != nil)
	}
	for _, not := range []string{"known issues on", "webhooks"} {
		if strings.Contains(logs.String(), not) {
			t.Errorf("nothing configured, but the log says %q:\n%s", not, logs)
		}
	}
}

// TestServeHealth: a worker's health endpoint serves until stopped, says
// where, logs no error for its own stop, and a port it cannot have is an
// error naming it.
func TestServeHealth(t *testing.T) {
	var logs proctest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "fine") })
	stop, err := serveHealth("127.0.0.1:0", h, log)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`msg="worker health on" addr=(\S+)`).FindStringSubmatch(logs.String())
	if m == nil {
		stop()
		t.Fatalf("no address logged:\n%s", logs.String())
	}
	resp, err := http.Get("http://" + m[1] + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "fine" {
		t.Errorf("health body %q", body)
	}
	if _, err := serveHealth(m[1], h, log); err == nil || !strings.Contains(err.Error(), "worker health listener "+m[1]) {
		t.Errorf("a second listener on %s: %v", m[1], err)
	}
	stop()
	if resp, err := http.Get("http://" + m[1] + "/healthz"); err == nil {
		resp.Body.Close()
		t.Error("still serving after stop")
	}
	time.Sleep(50 * time.Millisecond) // the serving goroutine returns after Shutdown
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("stop logged an error:\n%s", logs.String())
	}
}

// TestServeHealthStopWaits: stop lets a health request in flight finish
// (within its 2 s) before it returns.
func TestServeHealthStopWaits(t *testing.T) {
	var logs proctest.Buffer
	entered, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "fine")
	})
	stop, err := serveHealth("127.0.0.1:0", h, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`addr=(\S+)`).FindStringSubmatch(logs.String())
	if m == nil {
		stop()
		t.Fatalf("no address logged:\n%s", logs.String())
	}
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + m[1] + "/healthz")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- string(b)
	}()
	<-entered
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Error("stop returned while a request was in flight")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if b := <-got; b != "fine" {
		t.Errorf("the request in flight got %q", b)
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not return after the request finished")
	}
}
