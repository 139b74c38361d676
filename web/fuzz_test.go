package web

import (
	"io"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// maxFuzzURI keeps the request line within the server's 8 KiB read buffer
// (request line plus the Host header App.Test adds); longer lines never
// reach a handler.
const maxFuzzURI = 7 << 10

// FuzzRequest sends arbitrary paths and query strings through every route:
// the server must never panic, never answer 5xx, and never echo raw markup
// from the request into an HTML page.
func FuzzRequest(f *testing.F) {
	for _, seed := range []string{
		"/", "/?q=llama&status=pass&sort=tokens_per_s&order=asc", "/?status=nonsense", "/models/org/model-00001",
		"/models/../../etc/passwd", "/models/%2e%2e/%2e%2e/etc/passwd", "/badge/gpt2.svg?style=for-the-badge&label=<b>",
		"/badge/org/x.json?target=tpu", "/api/v1/models?limit=-1", "/api/v1/models?limit=99999999999999999999",
		"/api/v1/models?cursor=%ff%fe", "/api/v1/models/<script>alert(1)</script>", "/api/v1/scans/abc",
		"/api/v1/scans/99999999999999999999", "/feed.json", "/export.csv?q==cmd|' /C calc'!A0", "/static/../../go.mod",
		"/api/v1/failures?target=auto", "/models/" + strings.Repeat("a", 5000),
	} {
		f.Add(seed)
	}
	db := storetest.MustOpen(f)
	storetest.MustSeed(f, db, 20, 60)
	s, err := New(Config{Store: db, Scans: &fakeScans{}, Logger: discard, Metrics: metrics.NewRegistry(), APIRate: -1, Version: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		u, err := url.ParseRequestURI(target)
		if err != nil || strings.ContainsAny(target, " \t\r\n#") {
			return // not something an HTTP client can send
		}
		if len(u.RequestURI()) > maxFuzzURI {
			return // refused with 431 before routing (TestListenAndShutdown)
		}
		req := httptest.NewRequest("GET", u.RequestURI(), nil)
		resp, err := s.app.Test(req, -1)
		if err != nil {
			t.Fatalf("GET %q: %v", target, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Fatalf("GET %q: %d %s", target, resp.StatusCode, body)
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") && strings.Contains(target, "<script") &&
			strings.Contains(string(body), "<script>alert") {
			t.Fatalf("GET %q: markup echoed into the page", target)
		}
	})
}
