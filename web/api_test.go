package web

import (
	"context"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
	"github.com/google-pytorch/torchtpu-scanner/web/api"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

func TestAPIModelsShapeAndPaging(t *testing.T) {
	ts := newTestServer(t, 250, 600, Config{})
	r := ts.get(t, "/api/v1/models?limit=2")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %s", r.status, r.header.Get("Content-Type"))
	}
	if r.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Error("no CORS on the API")
	}
	// Raw shape: exactly the contract's keys, null result and metrics.
	raw := decode[map[string]any](t, r)
	if _, ok := raw["next_cursor"].(string); !ok {
		t.Fatalf("next_cursor = %v", raw["next_cursor"])
	}
	m0 := raw["models"].([]any)[0].(map[string]any)
	for _, k := range []string{"id", "task", "library", "downloads", "likes", "gated", "sha", "url", "result"} {
		if _, ok := m0[k]; !ok {
			t.Errorf("model JSON lacks %q", k)
		}
	}

	for _, sortKey := range httpx.SortNames() {
		for _, order := range []string{"", "asc", "desc"} {
			seen := map[string]bool{}
			cursor := ""
			pages := 0
			for {
				q := url.Values{"sort": {sortKey}, "limit": {"100"}}
				if order != "" {
					q.Set("order", order)
				}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				r := ts.get(t, "/api/v1/models?"+q.Encode())
				if r.status != 200 {
					t.Fatalf("sort=%s order=%s: %d %s", sortKey, order, r.status, r.body)
				}
				page := decode[api.ModelList](t, r)
				for _, m := range page.Models {
					if seen[m.ID] {
						t.Fatalf("sort=%s order=%s: %s twice", sortKey, order, m.ID)
					}
					seen[m.ID] = true
					if m.URL != "https://huggingface.co/"+m.ID {
						t.Fatalf("url = %q", m.URL)
					}
				}
				pages++
				if page.NextCursor == nil {
					break
				}
				cursor = *page.NextCursor
			}
			if len(seen) != 250 || pages != 3 {
				t.Errorf("sort=%s order=%s: %d models in %d pages", sortKey, order, len(seen), pages)
			}
		}
	}
	// The same query twice gives the same order (stable).
	a, b := ts.get(t, "/api/v1/models?sort=status&limit=1000"), ts.get(t, "/api/v1/models?sort=status&limit=1000")
	if a.body != b.body {
		t.Error("same query, different answers")
	}
}

func TestAPIModelsFilters(t *testing.T) {
	ts := newTestServer(t, 100, 300, Config{})
	list := func(q string) []compat.Model {
		t.Helper()
		r := ts.get(t, "/api/v1/models?limit=1000&"+q)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", q, r.status, r.body)
		}
		return decode[api.ModelList](t, r).Models
	}
	// Each filter's answer must be exactly the models that match, worked out
	// here from the unfiltered lists, and never empty (a filter that matches
	// nothing proves nothing).
	all, allCPU := list(""), list("target=cpu")
	if len(all) != 100 || len(allCPU) != 100 {
		t.Fatalf("unfiltered: %d models (tpu), %d (cpu); want 100", len(all), len(allCPU))
	}
	pick := func(ms []compat.Model, keep func(compat.Model) bool) []string {
		var ids []string
		for _, m := range ms {
			if keep(m) {
				ids = append(ids, m.ID)
			}
		}
		slices.Sort(ids)
		return ids
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"status=fail,oom&status=crash", pick(all, func(m compat.Model) bool {
			return m.Result != nil && (m.Result.Status == "fail" || m.Result.Status == "oom" || m.Result.Status == "crash")
		})},
		{"target=cpu&status=pass", pick(allCPU, func(m compat.Model) bool {
			return m.Result != nil && m.Result.Status == "pass" && m.Result.Target == "cpu"
		})},
		{"status=untested", pick(all, func(m compat.Model) bool { return m.Result == nil })},
		// Seeded model i has task i%5 (fill-mask is 1) and org i%40: org01 holds 1, 41 and 81.
		{"task=fill-mask&org=org01", []string{"org01/model-00001", "org01/model-00041", "org01/model-00081"}},
	} {
		got := pick(list(tc.query), func(compat.Model) bool { return true })
		if len(tc.want) == 0 {
			t.Fatalf("%s: the seed has no model that matches; pick another filter", tc.query)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %d models %v, want %d %v", tc.query, len(got), got, len(tc.want), tc.want)
		}
	}
	if got := list("target=auto"); len(got) != 100 {
		t.Errorf("target=auto: %d models", len(got))
	}
	if got := list("q=ZZZ-nothing"); len(got) != 0 {
		t.Errorf("q with no match: %d", len(got))
	}
	r := ts.get(t, "/api/v1/models?q=nothing")
	if !strings.Contains(r.body, `"models":[]`) || !strings.Contains(r.body, `"next_cursor":null`) {
		t.Errorf("empty page JSON: %s", r.body)
	}
	if got := list("limit=1000"); len(got) != 100 {
		t.Errorf("limit=1000: %d", len(got))
	}
	if r := ts.get(t, "/api/v1/models?limit=1001"); r.status != 400 {
		t.Errorf("limit=1001 (over the documented maximum): %d, want 400", r.status)
	}
}

func TestAPIBadRequests(t *testing.T) {
	ts := newTestServer(t, 5, 5, Config{})
	for _, q := range []string{"status=bogus", "status=pass,bogus", "target=gpu", "sort=price", "order=sideways",
		"limit=ten", "limit=0", "limit=-1", "limit=1e3", "cursor=not-a-cursor", "cursor=" + strings.Repeat("x", 2000),
		"q=" + strings.Repeat("q", 300), "task=" + url.QueryEscape("<script>"), "org=" + url.QueryEscape("a/b")} {
		r := ts.get(t, "/api/v1/models?"+q)
		e := decode[map[string]string](t, r)
		if r.status != 400 || e["error"] == "" {
			t.Errorf("%.40s: %d %s", q, r.status, r.body)
		}
		if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Errorf("%.40s: error is %s", q, r.header.Get("Content-Type"))
		}
	}
	// A cursor is a position: one from another sort is a page of that
	// order too (the rows after it), never a 400.
	page := decode[api.ModelList](t, ts.get(t, "/api/v1/models?limit=1"))
	if r := ts.get(t, "/api/v1/models?sort=likes&cursor="+url.QueryEscape(*page.NextCursor)); r.status != 200 {
		t.Errorf("another sort's cursor: %d", r.status)
	}
	// Unknown parameters are ignored (cache busters).
	if r := ts.get(t, "/api/v1/models?_=123"); r.status != 200 {
		t.Errorf("unknown parameter: %d", r.status)
	}
	for _, p := range []string{"/api/v1/summary?target=x", "/api/v1/failures?target=x", "/api/v1/failures?limit=x",
		"/api/v1/scans?limit=x", "/api/v1/scans/abc", "/api/v1/scans/0", "/api/v1/models/gpt2?target=x", "/export.csv?sort=x"} {
		if r := ts.get(t, p); r.status != 400 || !strings.Contains(r.body, `"error"`) {
			t.Errorf("%s: %d %s", p, r.status, r.body)
		}
	}
}

func TestAPIETag(t *testing.T) {
	ts := newTestServer(t, 20, 40, Config{})
	for _, p := range []string{"/api/v1/models?limit=5", "/api/v1/models/" + ts.ids[0], "/feed.json", "/badge/" + ts.ids[0] + ".svg"} {
		r := ts.get(t, p)
		etag := r.header.Get("ETag")
		if r.status != 200 || etag == "" {
			t.Fatalf("%s: %d etag %q", p, r.status, etag)
		}
		r2 := ts.do(t, "GET", p, map[string]string{"If-None-Match": etag})
		if r2.status != 304 || r2.body != "" {
			t.Errorf("%s: If-None-Match → %d", p, r2.status)
		}
		if r3 := ts.do(t, "GET", p, map[string]string{"If-None-Match": `"other", W/` + etag}); r3.status != 304 {
			t.Errorf("%s: weak match in a list → %d", p, r3.status)
		}
		// A write changes the tag.
		ts.record(t, ts.ids[0], passOn(compat.TargetTPU, time.Now(), float64(len(p))))
		if r4 := ts.do(t, "GET", p, map[string]string{"If-None-Match": etag}); r4.status != 200 || r4.header.Get("ETag") == etag {
			t.Errorf("%s: after a write → %d, same tag %v", p, r4.status, r4.header.Get("ETag") == etag)
		}
	}
}

// If-None-Match: "*" matches an answer that exists (304), never one that
// does not: a malformed cursor is 400, an unknown model 404, as without it.
func TestIfNoneMatchStar(t *testing.T) {
	ts := newTestServer(t, 20, 40, Config{})
	star := map[string]string{"If-None-Match": "*"}
	for p, want := range map[string]int{
		"/api/v1/models?limit=5":                         304,
		"/api/v1/models/" + ts.ids[0]:                    304,
		"/feed.json":                                     304,
		"/badge/" + ts.ids[0] + ".svg":                   304,
		"/methodology":                                   304,
		"/api/v1/models?cursor=not-a-cursor":             400,
		"/api/v1/models/org/no-such-model":               404,
		"/api/v1/compare?base=x&head=y&cursor=bad":       400,
		"/api/v1/models?limit=5&cursor=1~2~" + ts.ids[0]: 304, // a well-formed cursor is a position: its page exists
	} {
		if r := ts.do(t, "GET", p, star); r.status != want || want == 304 && r.body != "" {
			t.Errorf("%s with If-None-Match: * → %d %q, want %d", p, r.status, r.body, want)
		}
	}
}

func TestAPIModelDetail(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	ts.upsert(t, store.ModelUpsert{ID: "Qwen/Qwen3-0.6B", Task: "text-generation", Aliases: []string{"Qwen/Old"}},
		store.ModelUpsert{ID: "gpt2"})
	ts.record(t, "Qwen/Qwen3-0.6B", passOn(compat.TargetTPU, testTime.Add(-time.Hour), 300))
	ts.record(t, "Qwen/Qwen3-0.6B", failOn(compat.TargetTPU, testTime, "aten::x"))
	ts.record(t, "Qwen/Qwen3-0.6B", passOn(compat.TargetCPU, testTime, 10))

	for _, p := range []string{"/api/v1/models/Qwen/Qwen3-0.6B?target=tpu", "/api/v1/models/Qwen/Old?target=tpu", "/api/v1/models/Qwen%2FQwen3-0.6B?target=tpu"} {
		r := ts.get(t, p)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", p, r.status, r.body)
		}
		d := decode[api.ModelDetail](t, r)
		if d.ID != "Qwen/Qwen3-0.6B" || d.Result == nil || d.Result.Status != compat.StatusFail || len(d.History) != 2 ||
			len(d.Results) != 2 || len(d.Events) != 3 || d.Events[0].Kind != compat.EventNew && d.Events[0].Kind != compat.EventRegression {
			t.Errorf("%s: %+v", p, d)
		}
		raw := decode[map[string]any](t, r)
		if _, ok := raw["history"].([]any); !ok {
			t.Errorf("history is not an array")
		}
		metrics := raw["result"].(map[string]any)["metrics"].(map[string]any)
		if v, ok := metrics["tokens_per_s"]; !ok || v != nil {
			t.Errorf("unmeasured metric should be null, got %v", v)
		}
	}
	d := decode[api.ModelDetail](t, ts.get(t, "/api/v1/models/gpt2"))
	if d.ID != "gpt2" || d.Result != nil || d.History == nil {
		t.Errorf("gpt2: %+v", d)
	}
	r := ts.get(t, "/api/v1/models/nobody/nothing")
	if r.status != 404 || !strings.Contains(decode[map[string]string](t, r)["error"], "no model") {
		t.Errorf("unknown: %d %s", r.status, r.body)
	}
}

func TestAPISummaryFailuresScans(t *testing.T) {
	ts := newTestServer(t, 60, 200, Config{})
	r := ts.get(t, "/api/v1/summary")
	sum := decode[api.SummaryBody](t, r)
	if r.status != 200 || sum.Models != 60 || sum.PassRate == nil || sum.WeightedPassRate == nil || sum.Counts["pass"] == 0 {
		t.Errorf("summary: %d %+v", r.status, sum)
	}
	if r := ts.get(t, "/api/v1/summary?target=cuda"); r.status != 200 || decode[api.SummaryBody](t, r).Target != "cuda" {
		t.Errorf("summary cuda: %d", r.status)
	}
	f := decode[api.FailuresBody](t, ts.get(t, "/api/v1/failures?limit=3"))
	if len(f.Failures) == 0 || len(f.Failures) > 3 || f.Failures[0].Models == 0 {
		t.Errorf("failures: %+v", f)
	}

	id, err := ts.db.StartScan(context.Background(), store.Scan{Trigger: "manual", Target: "tpu", StartedAt: testTime})
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.db.UpdateScanProgress(context.Background(), id, 8, 2, 2, 0); err != nil {
		t.Fatal(err)
	}
	ts.scans.state = ScanState{Running: true, ScanID: id}
	list := decode[struct {
		Scans []api.ScanBody `json:"scans"`
		State ScanState      `json:"state"`
	}](t, ts.get(t, "/api/v1/scans"))
	if len(list.Scans) != 1 || !list.State.Running || list.Scans[0].Progress == nil || *list.Scans[0].Progress != 0.25 {
		t.Errorf("scans: %+v", list)
	}
	one := ts.get(t, "/api/v1/scans/"+itoa(id))
	if sc := decode[api.ScanBody](t, one); one.status != 200 || sc.ID != id || sc.Planned != 8 || sc.Done != 2 {
		t.Errorf("scan: %d %+v", one.status, sc)
	}
	if r := ts.get(t, "/api/v1/scans/999"); r.status != 404 {
		t.Errorf("unknown scan: %d", r.status)
	}
}

// TestAPIScanSummaryKeys pins the JSON keys of scans, the summary and the
// failure groups (the API's shapes, not the store's), and the params of a
// scan recorded as scans record them (Go field names) in the API's names.
func TestAPIScanSummaryKeys(t *testing.T) {
	ts := newTestServer(t, 60, 200, Config{})
	params := `{"Trigger":"cli","Source":"hub","Limit":100,"Sort":"downloads","Tasks":["fill-mask"],"Models":null,` +
		`"Target":"auto","Mode":"auto","Timeout":1200000000000,"Force":false,"Devices":2,"MemoryBudgetBytes":0}`
	id, err := ts.db.StartScan(context.Background(), store.Scan{Trigger: "cli", Target: "tpu", StartedAt: testTime, Params: params})
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.db.FinishScan(context.Background(), id, store.ScanFinish{Status: store.ScanFailed, Error: "hub down"}); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) []string {
		out := slices.Collect(maps.Keys(m))
		slices.Sort(out)
		return out
	}
	scanKeys := []string{"device_busy_fraction", "done", "error", "finished_at", "id", "params", "planned", "probed",
		"runtime", "started_at", "status", "target", "trigger", "unchanged"}
	paramKeys := []string{"device_memory_bytes", "devices", "force", "limit", "memory_budget_bytes", "mode", "models", "scan_timeout_s", "sort", "source",
		"target", "tasks", "timeout_s", "trigger"}

	one := decode[map[string]any](t, ts.get(t, "/api/v1/scans/"+itoa(id)))
	if got, want := keys(one), append(slices.Clone(scanKeys), "progress"); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("scan keys %v; want %v", got, want)
	}
	p, ok := one["params"].(map[string]any)
	if !ok {
		t.Fatalf("params = %#v; want an object", one["params"])
	}
	if got := keys(p); !slices.Equal(got, paramKeys) {
		t.Errorf("params keys %v; want %v", got, paramKeys)
	}
	if p["trigger"] != "cli" || p["limit"] != 100.0 || p["timeout_s"] != 1200.0 || p["devices"] != 2.0 ||
		p["memory_budget_bytes"] != nil || len(p["models"].([]any)) != 0 || p["tasks"].([]any)[0] != "fill-mask" {
		t.Errorf("params = %v", p)
	}
	list := decode[struct {
		Scans []map[string]any `json:"scans"`
	}](t, ts.get(t, "/api/v1/scans"))
	if len(list.Scans) != 1 || list.Scans[0]["params"].(map[string]any)["source"] != "hub" {
		t.Errorf("scans = %v", list)
	}

	sum := decode[map[string]any](t, ts.get(t, "/api/v1/summary"))
	if got, want := keys(sum), []string{"counts", "coverage", "download_weighted_pass_rate", "headline", "last_scan", "measured", "models", "pass_rate",
		"predicted", "readiness", "runtime", "scan_state", "target", "tested"}; !slices.Equal(got, want) {
		t.Errorf("summary keys %v; want %v", got, want)
	}
	if got := keys(sum["last_scan"].(map[string]any)); !slices.Equal(got, scanKeys) {
		t.Errorf("last_scan keys %v; want %v", got, scanKeys)
	}

	fails := decode[struct {
		Failures []map[string]any `json:"failures"`
	}](t, ts.get(t, "/api/v1/failures"))
	if len(fails.Failures) == 0 {
		t.Fatal("no failure groups")
	}
	for _, g := range fails.Failures {
		if got, want := keys(g), []string{"download_share", "downloads", "examples", "failure_class", "known_issue", "models", "op",
			"signature"}; !slices.Equal(got, want) {
			t.Errorf("failure group keys %v; want %v", got, want)
		}
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

func TestAPIRequestScan(t *testing.T) {
	const token = "s3cret-token"
	t.Run("no token configured", func(t *testing.T) {
		ts := newTestServer(t, 0, 0, Config{})
		r := ts.do(t, "POST", "/api/v1/scans", map[string]string{"Authorization": "Bearer anything"})
		if r.status != 403 || !strings.Contains(r.body, "disabled") || len(ts.scans.requests) != 0 {
			t.Errorf("%d %s", r.status, r.body)
		}
	})
	t.Run("no scan control", func(t *testing.T) {
		s, err := New(Config{Store: storetest.MustOpen(t), AdminToken: token, Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		ts := &testServer{Server: s}
		r := ts.do(t, "POST", "/api/v1/scans", map[string]string{"Authorization": "Bearer " + token})
		if r.status != 405 || r.header.Get("Allow") != "GET, HEAD" || !strings.Contains(r.body, `"error"`) {
			t.Errorf("%d %s %s", r.status, r.header.Get("Allow"), r.body)
		}
		if r := ts.get(t, "/api/v1/scans"); r.status != 200 {
			t.Errorf("GET scans without control: %d", r.status)
		}
	})
	t.Run("token", func(t *testing.T) {
		ts := newTestServer(t, 0, 0, Config{AdminToken: token})
		for _, c := range []struct {
			auth string
			want int
		}{
			{"", 401}, {"Basic " + token, 401}, {"Bearer ", 401}, {"Bearer wrong", 403}, {"Bearer " + token + "x", 403},
			{"Bearer " + token, 202}, {"bearer " + token, 409},
		} {
			h := map[string]string{}
			if c.auth != "" {
				h["Authorization"] = c.auth
			}
			r := ts.do(t, "POST", "/api/v1/scans", h)
			if r.status != c.want || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
				t.Errorf("Authorization %q: %d %s, want %d", c.auth, r.status, r.body, c.want)
			}
			if c.want == 401 && r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
			if r.header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("POST should not carry CORS")
			}
		}
		if len(ts.scans.requests) != 1 || ts.scans.requests[0] != "manual" {
			t.Errorf("requests: %v", ts.scans.requests)
		}
	})
}
