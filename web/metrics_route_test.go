package web

import (
	"strings"
	"testing"
)

// TestRouteSeriesFromTheStart: before any request, /metrics has every GET
// route's request counter at 0 (and unmatched paths'), so rate() works
// from the first scrape.
func TestRouteSeriesFromTheStart(t *testing.T) {
	ts := newTestServer(t, 1, 1, Config{})
	r := ts.get(t, "/metrics")
	for _, want := range []string{`scanner_http_requests_total{route="/api/v1/models",code="200"} 0`,
		`scanner_http_requests_total{route="/badge/*",code="200"} 0`, `scanner_http_requests_total{route="/feed.json",code="200"} 0`,
		`scanner_http_requests_total{route="unmatched",code="404"} 0`, `scanner_http_request_duration_seconds_count{route="/models/*"} 0`} {
		if !strings.Contains(r.body, want+"\n") {
			t.Errorf("missing %s", want)
		}
	}
}
