package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/feeds"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

var errBoom = errors.New("boom: disk I/O error at /var/secret/scanner.db")

// failingStore is a function-field fake over a real store: a set field
// replaces that method, to reach error paths.
type failingStore struct {
	Store
	changed func(context.Context) (time.Time, error)
	list    func(context.Context, store.ModelQuery) ([]compat.Model, string, error)
}

func (f failingStore) Changed(ctx context.Context) (time.Time, error) {
	if f.changed != nil {
		return f.changed(ctx)
	}
	return f.Store.Changed(ctx)
}

func (f failingStore) ListModels(ctx context.Context, q store.ModelQuery) ([]compat.Model, string, error) {
	if f.list != nil {
		return f.list(ctx, q)
	}
	return f.Store.ListModels(ctx, q)
}

// ExportModels fails as ListModels does.
func (f failingStore) ExportModels(ctx context.Context, q store.ModelQuery) ([]compat.Model, string, error) {
	if f.list != nil {
		return f.list(ctx, q)
	}
	return f.Store.ExportModels(ctx, q)
}

func failChanged(context.Context) (time.Time, error) { return time.Time{}, errBoom }
func failList(context.Context, store.ModelQuery) ([]compat.Model, string, error) {
	return nil, "", errBoom
}

func TestSecurityHeaders(t *testing.T) {
	ts := newTestServer(t, 3, 3, Config{})
	for _, p := range []string{"/", "/methodology", "/models/" + ts.ids[0], "/models/none/such"} {
		r := ts.get(t, p)
		csp := r.header.Get("Content-Security-Policy")
		for _, want := range []string{"frame-ancestors 'none'", "script-src 'self'", "default-src 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: page CSP allows inline code", p)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("Referrer-Policy") == "" || r.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", p, r.header)
		}
		if r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: pages need no CORS", p)
		}
	}
	for _, p := range []string{"/api/v1/models", "/feed.json", "/export.csv", "/badge/x.svg"} {
		if r := ts.get(t, p); r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: no CORS", p)
		}
	}
	r := ts.do(t, "OPTIONS", "/api/v1/models", map[string]string{"Origin": "https://x.example", "Access-Control-Request-Method": "GET"})
	if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(r.header.Get("Access-Control-Allow-Methods"), "GET") {
		t.Errorf("preflight: %d %v", r.status, r.header)
	}
}

// hostile are strings that must come out escaped everywhere.
var hostile = []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`, `=HYPERLINK("http://evil","x")`}

func TestHostileIDsOnEveryRoute(t *testing.T) {
	ts := newTestServer(t, 3, 3, Config{})
	ids := []string{
		"../../etc/passwd", "..%2f..%2fetc%2fpasswd", "%2e%2e/%2e%2e/etc/passwd", "%2e%2e", "..", ".", "a/../b",
		"%3Cscript%3Ealert(1)%3C%2Fscript%3E", "<script>alert(1)</script>", `x"><img src=x onerror=alert(1)>`,
		strings.Repeat("a", 300), strings.Repeat("a/", 40) + "b", "a/b/c", "%00", "a%00b", "%ff%fe", "%", "a%2",
		"org/" + strings.Repeat("n", 97), "\u202e", "a b", "a%0Ab", "a%0D%0ASet-Cookie:x=1",
	}
	prefixes := []struct {
		prefix, suffix string
		want           []int
	}{
		{"/models/", "", []int{404, 400}},
		{"/api/v1/models/", "", []int{404, 400}},
		{"/badge/", ".svg", []int{200}},
		{"/badge/", ".json", []int{200}},
		{"/static/", "", []int{404}},
		{"/api/v1/scans/", "", []int{400, 404}},
	}
	for _, id := range ids {
		for _, p := range prefixes {
			path := p.prefix + id + p.suffix
			req := httptest.NewRequest("GET", "/", nil)
			req.RequestURI = path // sent as written, not re-encoded
			resp, err := ts.app.Test(req, 10_000)
			if err != nil && strings.Contains(id, " ") && strings.Contains(err.Error(), "error when reading request headers") {
				continue // the HTTP parser refuses the request line (a connection gets 400)
			}
			if err != nil {
				t.Fatalf("%q: %v", path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ok := resp.StatusCode == 431 || resp.StatusCode == 414 // the HTTP parser's own limits
			for _, w := range p.want {
				ok = ok || resp.StatusCode == w
			}
			if !ok || resp.StatusCode >= 500 {
				t.Errorf("%q: status %d, want one of %v", path, resp.StatusCode, p.want)
			}
			for _, bad := range []string{"<script>alert", "<img src=x", "root:x:0:0"} {
				if bytes.Contains(body, []byte(bad)) {
					t.Errorf("%q: body echoes %q unescaped:\n%.400s", path, bad, body)
				}
			}
			if strings.HasPrefix(p.prefix, "/badge/") && !bytes.Contains(body, []byte("unknown")) {
				t.Errorf("%q: want an unknown badge", path)
			}
		}
	}
}

func TestHostileDataEscapedEverywhere(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{PublicURL: "https://compat.example.org"})
	const id = "evil-org/evil-model"
	ts.upsert(t, store.ModelUpsert{ID: id, Task: hostile[0], Library: hostile[1], Tags: hostile, Downloads: 5},
		store.ModelUpsert{ID: "good/model", Downloads: 1})
	// Ids the Hub would never allow still render escaped in lists.
	ts.upsert(t, store.ModelUpsert{ID: `x/<script>alert(1)</script>`, Task: "=1+1", Downloads: 3})
	pass := passOn(compat.TargetTPU, testTime.Add(-time.Hour), 1)
	ts.record(t, id, pass)
	r := failOn(compat.TargetTPU, testTime, hostile[1])
	r.Message = compat.Ptr(strings.Join(hostile, "\n"))
	r.LogTail = strings.Join(hostile, "\n")
	// A stage outside the contract, or a revision with spaces, is refused
	// where results enter the store (compat.Result.Validate); the pure
	// badge renderer's own test draws a hostile stage.
	bad := r
	bad.Stage = compat.Ptr(compat.Stage(hostile[0]))
	if _, err := ts.db.RecordResult(context.Background(), id, bad); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a hostile stage was stored: %v", err)
	}
	r.Revision = hostile[0]
	r.Repro = "scanner probe " + hostile[0]
	r.Runtime.Torch = hostile[0]
	r.Continuation = &compat.Continuation{Prompt: hostile[1], Text: hostile[0] + "\n" + hostile[1]}
	ts.record(t, id, r)
	ts.record(t, `x/<script>alert(1)</script>`, failOn(compat.TargetTPU, testTime, hostile[2]))

	htmlPages := []string{"/", "/?q=evil", "/models/" + id, "/?status=fail", "/models/" + id + "%3Cscript%3E", "/runtimes", "/compare"}
	for _, p := range htmlPages {
		r := ts.get(t, p)
		if r.status >= 500 {
			t.Fatalf("%s: %d", p, r.status)
		}
		for _, bad := range []string{"<script>alert", "<img src=x", `"><img`} {
			if strings.Contains(r.body, bad) {
				t.Errorf("%s: unescaped %q", p, bad)
			}
		}
	}
	// The hostile torch version names a runtime: shown as text on the
	// runtimes and compare pages, in charts' labels and their tables.
	for _, p := range []string{"/runtimes", "/compare"} {
		if body := ts.get(t, p).body; !strings.Contains(body, "torch &lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the hostile runtime is not shown escaped", p)
		}
	}
	page := ts.get(t, "/models/"+id)
	if !strings.Contains(page.body, "<pre class=\"evidence\" tabindex=\"0\">&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("log tail or message not escaped in <pre>")
	}
	if !strings.Contains(page.body, `<span class="muted">&#34;&gt;&lt;img src=x onerror=alert(1)&gt;</span>&lt;script&gt;alert(1)&lt;/script&gt;`) {
		t.Errorf("continuation not shown escaped")
	}
	// SVG badge: a hostile label is text, not markup.
	badge := ts.get(t, "/badge/"+id+".svg?label="+url.QueryEscape(hostile[0]))
	if strings.Contains(badge.body, "<script") || !strings.Contains(badge.body, "&lt;script&gt;") {
		t.Errorf("badge: %s", badge.body)
	}
	// JSON: valid, and < > & escaped for safe embedding.
	for _, p := range []string{"/api/v1/models/" + id, "/api/v1/models?limit=10", "/feed.json", "/badge/" + id + ".json", "/api/v1/failures",
		"/api/v1/runtimes", "/api/v1/compare"} {
		r := ts.get(t, p)
		if !json.Valid([]byte(r.body)) || strings.Contains(r.body, "<script") || strings.Contains(r.body, "<img") {
			t.Errorf("%s: JSON unsafe: %.300s", p, r.body)
		}
	}
	// Feed HTML content: escaped.
	feed := decode[feeds.JSONFeed](t, ts.get(t, "/feed.json"))
	for _, it := range feed.Items {
		if strings.Contains(it.ContentHTML, "<script") || strings.Contains(it.ContentHTML, "<img") {
			t.Errorf("feed content_html: %s", it.ContentHTML)
		}
	}
	// CSV: formula cells neutralised.
	csv := ts.get(t, "/export.csv").body
	if !strings.Contains(csv, `"'=HYPERLINK(""http://evil"",""x"")"`) && !strings.Contains(csv, `"'=1+1"`) {
		t.Errorf("CSV formula not neutralised:\n%s", csv)
	}
	for _, line := range strings.Split(csv, "\r\n") {
		for _, cell := range strings.Split(line, ",") {
			if c := strings.TrimPrefix(cell, `"`); c != "" && strings.ContainsRune("=+@", rune(c[0])) {
				t.Errorf("CSV cell starts with a formula character: %q", cell)
			}
		}
	}
}

func TestBodyLimitAndMethods(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{AdminToken: "t", BodyLimit: 1024})
	// fasthttp enforces the limit while reading, so this needs a real connection.
	ln, err := netListen(t)
	if err != nil {
		t.Fatal(err)
	}
	go ts.Listen(ln)
	defer ts.Shutdown(context.Background())
	// Only the header goes out: the server refuses from Content-Length alone.
	if code := rawStatus(t, ln.Addr().String(), "POST /api/v1/scans HTTP/1.1\r\nHost: scanner\r\n"+
		"Authorization: Bearer t\r\nContent-Length: 10000\r\n\r\n"); code != 413 {
		t.Errorf("big body: %d, want 413", code)
	}
	for _, c := range []struct{ method, path string }{{"DELETE", "/api/v1/models"}, {"PUT", "/"}, {"POST", "/models/x"}, {"GET", "/nope"}, {"GET", "/api/v2/models"}} {
		r := ts.do(t, c.method, c.path, nil)
		if r.status != 404 && r.status != 405 {
			t.Errorf("%s %s: %d", c.method, c.path, r.status)
		}
	}
	if r := ts.get(t, "/api/nope"); !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Errorf("API 404 is %s", r.header.Get("Content-Type"))
	}
	if r := ts.get(t, "/nope"); !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(r.body, "404") {
		t.Errorf("page 404 is %s", r.header.Get("Content-Type"))
	}
}

func TestRateLimit(t *testing.T) {
	ts := newTestServer(t, 2, 2, Config{APIRate: 1, APIBurst: 3})
	var last response
	for i := 0; i < 4; i++ {
		last = ts.get(t, "/api/v1/summary")
	}
	if last.status != 429 || last.header.Get("Retry-After") != "1" || !strings.Contains(decode[map[string]string](t, last)["error"], "rate limit") {
		t.Errorf("4th request: %d %q %s", last.status, last.header.Get("Retry-After"), last.body)
	}
	// Pages and badges are not limited.
	for i := 0; i < 10; i++ {
		if r := ts.get(t, "/badge/x.svg"); r.status != 200 {
			t.Fatalf("badge limited: %d", r.status)
		}
	}
}

func TestServerErrorsHideDetails(t *testing.T) {
	ts := newTestServer(t, 2, 2, Config{})
	ts.useStore(failingStore{Store: ts.db, list: failList})
	for _, p := range []string{"/api/v1/models", "/", "/export.csv"} {
		r := ts.get(t, p)
		if r.status != 500 || strings.Contains(r.body, "secret") || strings.Contains(r.body, "boom") {
			t.Errorf("%s: %d %s", p, r.status, r.body)
		}
	}
	if r := ts.get(t, "/api/v1/models"); decode[map[string]string](t, r)["error"] != "internal server error" {
		t.Errorf("500 JSON: %s", r.body)
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	ts := newTestServer(t, 2, 2, Config{})
	if r := ts.get(t, "/healthz"); r.status != 200 || decode[map[string]string](t, r)["status"] != "ok" {
		t.Errorf("healthz: %d %s", r.status, r.body)
	}
	if r := ts.get(t, "/readyz"); r.status != 200 {
		t.Errorf("readyz: %d %s", r.status, r.body)
	}
	ts.get(t, "/badge/"+ts.ids[0]+".svg")
	ts.get(t, "/models/../../etc/passwd")
	r := ts.get(t, "/metrics")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Errorf("metrics: %d %s", r.status, r.header.Get("Content-Type"))
	}
	for _, want := range []string{`scanner_http_requests_total{route="/badge/*",code="200"} 1`, `scanner_http_requests_total{route="/models/*",code="404"} 1`,
		`# TYPE scanner_http_request_duration_seconds histogram`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("metrics lack %q:\n%s", want, r.body)
		}
	}
	if strings.Contains(r.body, "passwd") {
		t.Error("raw paths in metric labels")
	}
	ts.useStore(failingStore{Store: ts.db, changed: failChanged})
	if r := ts.get(t, "/readyz"); r.status != 503 || strings.Contains(r.body, "secret") {
		t.Errorf("readyz with a broken db: %d %s", r.status, r.body)
	}
	if r := ts.get(t, "/healthz"); r.status != 200 {
		t.Errorf("healthz should not depend on the db: %d", r.status)
	}
	// The database file deleted under the server: not ready, and it says why.
	ts.useStore(ts.db)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(ts.db.Path() + suffix)
	}
	if r := ts.get(t, "/readyz"); r.status != 503 || !strings.Contains(r.body, "database file gone") {
		t.Errorf("readyz with the database file deleted: %d %s", r.status, r.body)
	}
}

// TestEveryRouteSurvivesHostileInput walks the route table: every route
// gets traversal paths, hostile ids in its parameters and hostile query
// values, and must answer below 500 without echoing markup.
func TestEveryRouteSurvivesHostileInput(t *testing.T) {
	ts := newTestServer(t, 3, 3, Config{AdminToken: "t"})
	ids := []string{"..%2f..%2fetc%2fpasswd", "%2e%2e", "%3Cscript%3Ealert(1)%3C%2Fscript%3E", "x%22%3E%3Cimg%20src=x%20onerror=alert(1)%3E", strings.Repeat("z", 500)}
	query := "?q=%3Cscript%3Ealert(1)%3C/script%3E&status=%3Cscript%3E&target=%3Cimg%20src=x%3E&sort=%22%3E%3Cimg%20src=x%3E&order=%3Cscript%3E" +
		"&limit=%3Cscript%3E&cursor=%3Cscript%3Ealert(1)&style=%3Cscript%3E&label=%3Cscript%3Ealert(1)%3C/script%3E&task=%3Cscript%3E&org=%3Cimg%20src=x%3E" +
		"&base=tpu~%3Cscript%3Ealert(1)%3C/script%3E~~~&head=%3Cimg%20src=x%3E"
	tried := 0
	for _, rt := range ts.app.GetRoutes(true) {
		if rt.Method != "GET" && rt.Method != "POST" {
			continue
		}
		var paths []string
		switch {
		case strings.Contains(rt.Path, "*") || strings.Contains(rt.Path, ":"):
			for _, id := range ids {
				p := regexp.MustCompile(`\*|:\w+`).ReplaceAllString(rt.Path, id)
				paths = append(paths, p, p+".svg", p+".json", p+query)
			}
		default:
			paths = append(paths, rt.Path+query, strings.TrimSuffix(rt.Path, "/")+"/../../etc/passwd", rt.Path+"%2e%2e%2f%2e%2e%2fetc%2fpasswd")
		}
		for _, p := range paths {
			tried++
			r := ts.do(t, rt.Method, p, map[string]string{"Authorization": "Bearer <script>alert(1)</script>", "If-None-Match": `"<script>"`})
			if r.status >= 500 {
				t.Errorf("%s %s: %d %.200s", rt.Method, p, r.status, r.body)
			}
			for _, bad := range []string{"<script>alert", "<img src=x", "root:x:0:0"} {
				if strings.Contains(r.body, bad) {
					t.Errorf("%s %s: echoes %q:\n%.300s", rt.Method, p, bad, r.body)
				}
			}
		}
	}
	if tried < 50 {
		t.Errorf("only %d requests tried", tried)
	}
}

// damagedStore is a store whose check after start found the file damaged.
type damagedStore struct{ Store }

func (damagedStore) CheckFile() error {
	return fmt.Errorf("store: open x.db: %w (SQLite's PRAGMA quick_check: %q)", store.ErrCorrupt, "Tree 9 page 197 cell 4: Offset 8297 out of range")
}

// TestReadyzSaysTheDatabaseIsCorrupt: a database that the check after
// start found damaged is not ready, and /readyz says why (not "gone").
func TestReadyzSaysTheDatabaseIsCorrupt(t *testing.T) {
	ts := newTestServer(t, 1, 1, Config{})
	ts.useStore(damagedStore{ts.db})
	r := ts.get(t, "/readyz")
	if r.status != 503 || !strings.Contains(r.body, "database corrupt") || !strings.Contains(r.body, "scanner backup") || strings.Contains(r.body, "gone") {
		t.Errorf("readyz with a corrupt database: %d %s", r.status, r.body)
	}
	if got := httpx.Status(fmt.Errorf("web: %w", store.ErrCorrupt)); got != 503 {
		t.Errorf("a write refused for corruption maps to %d, want 503", got)
	}
}
