package web

import (
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/requests"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// isJSONError: an answer of status with a JSON {"error": …} body.
func isJSONError(t *testing.T, what string, r response, status int) {
	t.Helper()
	if r.status != status || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Errorf("%s: %d %s, want %d application/json: %.200s", what, r.status, r.header.Get("Content-Type"), status, r.body)
		return
	}
	if e := decode[struct{ Error string }](t, r); e.Error == "" {
		t.Errorf("%s: body %.200s, want {\"error\": …}", what, r.body)
	}
}

// TestLongRequestLineAnswersJSON: a query string over the read buffer
// (the request line alone) answers 431 as JSON under /api/, like a long
// header (issue 37: it was the HTML page).
func TestLongRequestLineAnswersJSON(t *testing.T) {
	addr := listenOnLoopback(t, newTestServer(t, 1, 1, Config{}))
	for _, target := range []string{
		"/api/v1/models?q=" + strings.Repeat("a", 9<<10),
		"/api/v1/compare?cursor=" + strings.Repeat("b", 10<<10),
		"/api/v1/models?" + strings.Repeat("x=1&", 3<<10),
	} {
		r := rawResponse(t, addr, "GET "+target+" HTTP/1.1\r\nHost: x\r\n\r\n")
		isJSONError(t, target[:24], r, http.StatusRequestHeaderFieldsTooLarge)
	}
	r := rawResponse(t, addr, "GET /?q="+strings.Repeat("a", 9<<10)+" HTTP/1.1\r\nHost: x\r\n\r\n")
	if r.status != http.StatusRequestHeaderFieldsTooLarge || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Errorf("a page's long query: %d %s, want 431 text/html", r.status, r.header.Get("Content-Type"))
	}
}

// TestUnknownMethodIs405: a method no route takes (QUERY) answers like any
// method the path does not take, 405 JSON with Allow, through the one error
// mapper (issue 37: fiber's 400 text/plain); a path no route has is 404.
func TestUnknownMethodIs405(t *testing.T) {
	ts := newTestServer(t, 1, 1, Config{})
	for _, c := range []struct{ path, allow string }{
		{"/api/v1/models", "GET, HEAD"},
		{"/api/v1/scans", "GET, HEAD, POST"},
		{"/", "GET, HEAD"},
	} {
		r := ts.do(t, "QUERY", c.path, nil)
		isJSONError(t, "QUERY "+c.path, r, http.StatusMethodNotAllowed)
		if got := r.header.Get("Allow"); got != c.allow {
			t.Errorf("QUERY %s: Allow %q, want %q", c.path, got, c.allow)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("QUERY %s: no security headers: %v", c.path, r.header)
		}
		if !strings.Contains(r.body, `\"QUERY\"`) {
			t.Errorf("QUERY %s: %s, want the method named", c.path, r.body)
		}
	}
	isJSONError(t, "QUERY /api/v1/nothing", ts.do(t, "QUERY", "/api/v1/nothing", nil), http.StatusNotFound)
}

// TestWrongMethodIs405: a method a route does not take is 405 with Allow
// (issue 37: 404), as JSON; a path no route has stays 404.
func TestWrongMethodIs405(t *testing.T) {
	ts := newTestServer(t, 1, 1, Config{})
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodDelete, "/api/v1/models", "GET, HEAD"},
		{http.MethodPut, "/api/v1/models/" + ts.ids[0], "GET, HEAD"},
		{http.MethodPost, "/api/v1/summary", "GET, HEAD"},
		{http.MethodPatch, "/api/v1/scans", "GET, HEAD, POST"},
		{http.MethodPost, "/feed.json", "GET, HEAD"},
		{http.MethodDelete, "/", "GET, HEAD"},
		{http.MethodTrace, "/api/v1/models?task=%20x", "GET, HEAD"}, // 405 before the parameters are read
	} {
		r := ts.do(t, c.method, c.path, nil)
		isJSONError(t, c.method+" "+c.path, r, http.StatusMethodNotAllowed)
		if got := r.header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}
	isJSONError(t, "DELETE /api/v1/nothing", ts.do(t, http.MethodDelete, "/api/v1/nothing", nil), http.StatusNotFound)
}

// TestAskWithTheHubUnreachable: POST /api/v1/requests answers within 5 s
// when the Hub cannot be reached (issue 37: 13-16 s, the Hub client's
// retries), 503 JSON with reason hub_unavailable and a Retry-After.
func TestAskWithTheHubUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	ln.Close() // every dial is refused
	client, err := hub.New(hub.Options{Endpoint: endpoint, CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.MustOpen(t)
	desk, err := requests.New(requests.Config{Store: db, Hub: client, QueueCap: 10, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, 0, 0, Config{Store: db, Requests: desk})
	start := time.Now()
	r := ts.ask(t, "org/real", nil)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the answer took %v, want at most 5 s", took)
	}
	isJSONError(t, "POST /api/v1/requests", r, http.StatusServiceUnavailable)
	if e := decode[struct{ Reason string }](t, r); e.Reason != string(requests.ReasonHubUnavailable) {
		t.Errorf("reason %q, want %q", e.Reason, requests.ReasonHubUnavailable)
	}
	if r.header.Get("Retry-After") != httpx.UnavailableRetry {
		t.Errorf("Retry-After %q, want %s", r.header.Get("Retry-After"), httpx.UnavailableRetry)
	}
}

// TestInexactParametersAreRefused: the API and the feeds refuse a documented
// parameter given empty or padded with spaces (issue 37: ?target= was taken as "any" on summary,
// runtimes, failures, compare and the feeds, which the OpenAPI document
// refuses); the table and the CSV export take it as "any", as the filter
// form sends it.
func TestInexactParametersAreRefused(t *testing.T) {
	ts := newTestServer(t, 20, 40, Config{})
	for _, target := range []string{
		"/api/v1/summary?target=", "/api/v1/runtimes?target=", "/api/v1/failures?target=",
		"/api/v1/compare?base=", "/api/v1/compare?head=%20", "/api/v1/compare?cursor=",
		"/api/v1/models?target=", "/api/v1/models?status=", "/api/v1/models?q=", "/api/v1/models/" + ts.ids[0] + "?target=",
		"/api/v1/scans?limit=", "/feed.json?target=", "/feed.atom?kind=", "/feed.json?model=",
	} {
		r := ts.get(t, target)
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, "is empty") {
			t.Errorf("%s: %d %.200s, want 400 naming the empty parameter", target, r.status, r.body)
		}
	}
	for _, target := range []string{"/api/v1/models?org=%20org01", "/feed.json?org=org01%20", "/api/v1/summary?target=tpu%09"} {
		r := ts.get(t, target)
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, "spaces around") {
			t.Errorf("%s: %d %.200s, want 400 for the spaces", target, r.status, r.body)
		}
	}
	if r := ts.get(t, "/feed.atom?target=x"); r.status != http.StatusBadRequest || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Errorf("/feed.atom?target=x: %d %s, want 400 JSON", r.status, r.header.Get("Content-Type"))
	}
	// The CSV export trims ?org=, but counts its length as the document does, spaces included.
	if r := ts.get(t, "/export.csv?org="+strings.Repeat("%20", 97)); r.status != http.StatusBadRequest {
		t.Errorf("/export.csv?org= of 97 spaces: %d, want 400 (the document's maxLength is 96)", r.status)
	}
	for _, target := range []string{"/?target=&status=", "/export.csv?target=&status=", "/export.csv?org=%20org01%20", "/api/v1/summary?unknown="} {
		if r := ts.get(t, target); r.status != http.StatusOK {
			t.Errorf("%s: %d, want 200", target, r.status)
		}
	}
}

// TestLimitsHaveAMaximum: ?limit= above 1000 (the document's maximum) is
// refused, not cut to it.
func TestLimitsHaveAMaximum(t *testing.T) {
	ts := newTestServer(t, 5, 5, Config{})
	for _, path := range []string{"/api/v1/models", "/api/v1/failures", "/api/v1/scans", "/api/v1/compare"} {
		if r := ts.get(t, path+"?limit=1001"); r.status != http.StatusBadRequest {
			t.Errorf("%s?limit=1001: %d, want 400", path, r.status)
		}
		if r := ts.get(t, path+"?limit=99999999999999999999999"); r.status != http.StatusBadRequest {
			t.Errorf("%s?limit=1e23: %d, want 400", path, r.status)
		}
	}
}
