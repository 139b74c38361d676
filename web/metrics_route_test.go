package web

import (
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/dispatch"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
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

// Only GET routes are declared ahead: a POST-only route (the work routes)
// gets a series when it is first used, not a 200 at 0 it may never earn.
func TestRouteSeriesOnlyForGetRoutes(t *testing.T) {
	db := storetest.MustOpen(t)
	d := dispatch.New(db, dispatch.Config{LeaseTTL: time.Minute, Logger: discard})
	t.Cleanup(d.Close)
	ts := newTestServer(t, 0, 0, Config{Store: db, Work: d, WorkerToken: testWorkerToken})
	r := ts.get(t, "/metrics")
	if !strings.Contains(r.body, `scanner_http_requests_total{route="/api/v1/models",code="200"} 0`+"\n") {
		t.Fatalf("GET routes not declared: %.300s", r.body)
	}
	if strings.Contains(r.body, `route="`+fleet.PathLease+`"`) {
		t.Errorf("the POST-only %s has a series before any request", fleet.PathLease)
	}
}
