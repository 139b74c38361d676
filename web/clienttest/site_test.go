//go:build clients

// Package clienttest checks the served site with real, independent clients
// that no one here wrote: schemathesis against the OpenAPI document,
// feedparser and a JSON Feed 1.1 schema on the feeds, the Nu Html Checker
// and axe-core (in Debian's Chromium) on every kind of page, rsvg and the
// shields.io endpoint schema on the badges. The database is made by the
// project's own generator (storetest.SeedRuntimes) and served by web.New,
// offline. It lives behind the build tag "clients":
//
//	scripts/tools.sh   # installs the pinned tools, prints their folder
//	SCANNER_TOOLS=$(scripts/tools.sh) go test -tags clients ./web/clienttest
//
// (make test-clients does both.) Each check fails on any error the tool
// reports; without a tool the check skips, and fails under
// SCANNER_TEST_REQUIRE_ALL=1.
package clienttest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/dispatch"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/requests"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
	"github.com/google-pytorch/torchtpu-scanner/web"
)

// The tokens of the served site's write routes.
const (
	adminToken  = "clienttest-admin-token"
	workerToken = "clienttest-worker-token"
)

// Size of the generated database: every page kind and filter has rows.
const (
	nModels   = 120
	nResults  = 600
	nRuntimes = 3
)

// site is the served database: its base URL and model ids.
type site struct {
	base    string
	ids     []string
	request int64 // a queued test request's id
}

// fakeScans is the scheduler the site drives: a scan request is queued
// once, then 409 until the test ends.
type fakeScans struct {
	mu     sync.Mutex
	queued bool
}

func (f *fakeScans) RequestScan(string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queued {
		return web.ErrScanQueued
	}
	f.queued = true
	return nil
}

func (f *fakeScans) State() web.ScanState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return web.ScanState{Queued: f.queued}
}

// serve starts the site over a generated database with every optional
// route on (scan requests, test requests against a fake Hub, the worker
// protocol), until the test ends.
func serve(t *testing.T) site {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "scanner.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ids, err := storetest.SeedRuntimes(ctx, db, nModels, nResults, nRuntimes)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	llama := map[string]any{"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama"}
	h := hubtest.New(t, hubtest.Repo{ID: "org/known", PipelineTag: "text-generation", Library: "transformers", Config: llama,
		Files: map[string][]byte{"config.json": []byte(`{"model_type": "llama"}`)}})
	client, err := hub.New(hub.Options{Endpoint: h.URL(), CacheDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	desk, err := requests.New(requests.Config{Store: db, Hub: client, QueueCap: 1000, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	// A queued test request, for the request page.
	req, _, err := desk.Ask(ctx, "org/known")
	if err != nil {
		t.Fatal(err)
	}
	fleet := dispatch.New(db, dispatch.Config{Logger: quiet, MaxHold: time.Second}) // a long poll holds 1 s here
	srv, err := web.New(web.Config{
		Store: db, Scans: &fakeScans{}, AdminToken: adminToken, Work: fleet, WorkerToken: workerToken,
		Requests: desk, Version: "clienttest", APIRate: -1, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Listen(ln) }()
	t.Cleanup(func() {
		fleet.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return site{base: "http://" + ln.Addr().String(), ids: ids, request: req.ID}
}

// tools is the folder scripts/tools.sh installed the clients in
// ($SCANNER_TOOLS); a check without it skips (fails under make test).
func tools(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SCANNER_TOOLS")
	if dir == "" {
		testenv.Missing(t, "the clients' checks need SCANNER_TOOLS=$(scripts/tools.sh)")
	}
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		testenv.Missing(t, "SCANNER_TOOLS=%s is not a complete tools folder (scripts/tools.sh makes one): %v", dir, err)
	}
	return dir
}

// run runs a tool (every path it is given absolute) and fails the test with its output when it fails.
func run(t *testing.T, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	out, err := runOnce(t, timeout, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, clip(out))
	}
	return out
}

// runOnce runs name in a folder of its own and returns what it printed.
func runOnce(t *testing.T, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = t.TempDir() // what a tool leaves behind (schemathesis' .schemathesis/) stays out of the clone
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// crashedItself reports whether a Python tool's failing run died of its
// own exception (a traceback, and no report of the checks' failures)
// rather than reporting what it checked: schemathesis 4.32.5 did so, rarely
// (a KeyError, a SystemError), on runs that passed when repeated.
func crashedItself(out string) bool {
	return strings.Contains(out, "Traceback (most recent call last)") && !strings.Contains(out, "= FAILURES =")
}

// clip is s, or its first and last 20 000 bytes when it is longer.
func clip(s string) string {
	if len(s) > 40000 {
		return s[:20000] + "\n…\n" + s[len(s)-20000:]
	}
	return s
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// pages are the site's page kinds, one URL each (paths under base).
func (s site) pages() map[string]string {
	return map[string]string{
		"table":           "/",
		"table-filtered":  "/?status=fail&target=tpu&sort=tokens_per_s",
		"model":           "/models/" + s.ids[0],
		"model-untested":  "/models/" + s.ids[9],
		"model-one-part":  "/models/" + s.ids[49],
		"model-unknown":   "/models/org/not-here",
		"runtimes":        "/runtimes",
		"compare":         "/compare",
		"methodology":     "/methodology",
		"not-found":       "/no/such/page",
		"request":         "/requests/" + strconv.FormatInt(s.request, 10),
		"request-unknown": "/requests/999999",
	}
}

// get fetches base+path and returns its body; a status other than want
// fails the test.
func get(t *testing.T, url string, want int) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %d, want %d: %.300s", url, resp.StatusCode, want, b)
	}
	return b
}

// TestClients serves one generated database and runs each client on it.
func TestClients(t *testing.T) {
	dir := tools(t)
	s := serve(t)
	t.Run("schemathesis", func(t *testing.T) { checkSchemathesis(t, dir, s) })
	t.Run("feeds", func(t *testing.T) { checkFeeds(t, dir, s) })
	t.Run("nu", func(t *testing.T) { checkNu(t, dir, s) })
	t.Run("badges", func(t *testing.T) { checkBadges(t, dir, s) })
	t.Run("axe", func(t *testing.T) { checkAxe(t, dir, s) })
}
