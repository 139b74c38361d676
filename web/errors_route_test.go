package web

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
)

// A server error (5xx) is logged with its cause; a client's mistake (4xx)
// is not an error of the server and is not logged as one.
func TestServerErrorsAreLoggedClientErrorsNot(t *testing.T) {
	var logs proctest.Buffer
	ts := newTestServer(t, 2, 2, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ts.useStore(failingStore{Store: ts.db, list: failList})
	for _, c := range []struct {
		path   string
		status int
		logged bool
	}{
		{"/api/v1/models?limit=nonsense", 400, false},
		{"/api/v1/models/none/such", 404, false},
		{"/api/v1/models", 500, true},
	} {
		before := len(logs.String())
		r := ts.get(t, c.path)
		if r.status != c.status {
			t.Fatalf("%s: %d, want %d", c.path, r.status, c.status)
		}
		line := logs.String()[before:]
		if logged := strings.Contains(line, "level=ERROR") && strings.Contains(line, `msg="request failed"`); logged != c.logged {
			t.Errorf("%s (%d): logged as a failure %v, want %v: %q", c.path, c.status, logged, c.logged, line)
		}
		if c.logged && (!strings.Contains(line, "status=500") || !strings.Contains(line, errBoom.Error())) {
			t.Errorf("%s: the log line lacks the status or the cause: %q", c.path, line)
		}
	}
}

// An error answers JSON to the API and to any request that is not a page
// view (a POST anywhere), and an HTML page to GET and HEAD of a page.
func TestErrorBodyFollowsTheRequest(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	for _, c := range []struct {
		method, path, ctype string
	}{
		{http.MethodGet, "/models/none/such", "text/html"},
		{http.MethodHead, "/models/none/such", "text/html"},
		{http.MethodGet, "/api/v1/models/none/such", "application/json"},
		{http.MethodPost, "/models/none/such", "application/json"},
		{http.MethodPost, "/api/v1/models/none/such", "application/json"},
	} {
		r := ts.do(t, c.method, c.path, nil)
		if r.status < 400 {
			t.Errorf("%s %s: %d, want an error", c.method, c.path, r.status)
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, c.ctype) {
			t.Errorf("%s %s: %d answered %q, want %s", c.method, c.path, r.status, ct, c.ctype)
		}
	}
}
