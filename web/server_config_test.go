package web

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// New keeps what Config gives (version, logger) and fills in only what it
// leaves out.
func TestNewKeepsConfiguredVersionAndLogger(t *testing.T) {
	const token = "s3cret-token"
	var logs bytes.Buffer
	ts := newTestServer(t, 1, 1, Config{AdminToken: token, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	// newTestServer sets Version "test".
	if h := decode[map[string]string](t, ts.get(t, "/healthz")); h["version"] != "test" {
		t.Errorf("healthz version %q, want the configured test", h["version"])
	}
	if r := ts.get(t, "/"); !strings.Contains(r.body, "Scanner test ·") {
		t.Errorf("page footer does not name the configured version")
	}
	if r := ts.do(t, http.MethodPost, "/api/v1/scans", map[string]string{"Authorization": "Bearer " + token}); r.status != 202 {
		t.Fatalf("scan request: %d %s", r.status, r.body)
	}
	if !strings.Contains(logs.String(), "scan requested") {
		t.Errorf("the configured logger did not get the scan request: %q", logs.String())
	}

	s, err := New(Config{Store: ts.db, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	dev := &testServer{Server: s}
	if h := decode[map[string]string](t, dev.get(t, "/healthz")); h["version"] != "dev" {
		t.Errorf("healthz version without one configured %q, want dev", h["version"])
	}
}

// APIRate: negative turns the limiter off; 0 means the default limit (a
// burst of DefaultAPIBurst, then 429).
func TestNewAPIRateDefaults(t *testing.T) {
	statuses := func(ts *testServer, n int) (ok, limited int) {
		for range n {
			switch ts.get(t, "/api/v1/summary").status {
			case http.StatusOK:
				ok++
			case http.StatusTooManyRequests:
				limited++
			}
		}
		return ok, limited
	}
	off := newTestServer(t, 1, 1, Config{APIRate: -1})
	if ok, limited := statuses(off, 200); ok != 200 || limited != 0 {
		t.Errorf("APIRate -1: %d ok, %d limited of 200, want no limit", ok, limited)
	}
	s, err := New(Config{Store: off.db, Logger: discard}) // APIRate 0, APIBurst 0
	if err != nil {
		t.Fatal(err)
	}
	def := &testServer{Server: s}
	ok, limited := statuses(def, 300)
	if ok < 120 || limited == 0 {
		t.Errorf("default limit: %d ok, %d limited of 300, want a burst of 120 then 429", ok, limited)
	}
}

// Without BodyLimit a request body over DefaultBodyLimit (64 KiB) is
// refused with 413; one under it is read.
func TestNewDefaultBodyLimit(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{AdminToken: "t"})
	// fasthttp enforces the limit while reading: a real connection.
	ln, err := netListen(t)
	if err != nil {
		t.Fatal(err)
	}
	go ts.Listen(ln)
	defer ts.Shutdown(context.Background())
	// The request is written by hand: a client that sends all of an oversize
	// body races the server's 413 and close (a reset instead of an answer).
	// Only the header is sent when the body is over the limit, as the
	// server must refuse it from its Content-Length alone.
	post := func(n int) int {
		req := fmt.Sprintf("POST /api/v1/scans HTTP/1.1\r\nHost: scanner\r\nAuthorization: Bearer t\r\n"+
			"Content-Length: %d\r\nConnection: close\r\n\r\n", n)
		if n <= DefaultBodyLimit {
			req += strings.Repeat("x", n)
		}
		return rawStatus(t, ln.Addr().String(), req)
	}
	if code := post(100 << 10); code != http.StatusRequestEntityTooLarge {
		t.Errorf("100 KiB body: %d, want 413", code)
	}
	if code := post(1 << 10); code != http.StatusAccepted {
		t.Errorf("1 KiB body: %d, want 202", code)
	}
}

// The server drops slow or idle connections: a client cannot hold one open
// forever (0 would mean no timeout), nor is a slow but honest one cut off
// within a second.
func TestNewConnectionTimeouts(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	cfg := ts.app.Config()
	for name, d := range map[string]time.Duration{"read": cfg.ReadTimeout, "write": cfg.WriteTimeout, "idle": cfg.IdleTimeout} {
		if d < time.Second || d > 10*time.Minute {
			t.Errorf("%s timeout %v, want between 1 s and 10 min", name, d)
		}
	}
}
