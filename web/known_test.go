package web

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/knownissues"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

const (
	fftIssueURL  = "https://github.com/org/torch_tpu/issues/12"
	fftIssueHTML = `Known issue: <a href="https://github.com/org/torch_tpu/issues/12" rel="noopener">FFT ops &lt;missing&gt;</a> <span class="muted">(open)</span>`
	notTracked   = `<span class="known-issue muted">not tracked yet</span>`
)

// knownServer: org/a passed on tpu runtime 0.2.0 and fails with a tracked
// signature on 0.3.0 (a regression between the two); org/b fails on tpu
// with an untracked one on both.
func knownServer(t *testing.T) *testServer {
	t.Helper()
	ts := newTestServer(t, 0, 0, Config{KnownIssues: knownTable(t), PublicURL: "https://compat.example.org"})
	ts.upsert(t, store.ModelUpsert{ID: "org/a", Downloads: 100}, store.ModelUpsert{ID: "org/b", Downloads: 50})
	newer := func(r compat.Result) compat.Result {
		r.Runtime = passOn(r.Target, r.TestedAt, 0).Runtime
		r.Runtime.TorchTPU = "0.3.0"
		return r
	}
	ts.record(t, "org/a", passOn(compat.TargetTPU, testTime.Add(-2*time.Hour), 100))
	ts.record(t, "org/b", sameRuntime(failOn(compat.TargetTPU, testTime.Add(-2*time.Hour), "aten::nonzero")))
	ts.record(t, "org/a", newer(failOn(compat.TargetTPU, testTime, "aten::_fft_r2c")))
	ts.record(t, "org/b", newer(failOn(compat.TargetTPU, testTime, "aten::nonzero")))
	return ts
}

// TestAKnownSignatureShowsItsLinkWhereverItIsShown: the home page's top
// failure causes, the model page (current result and timeline), the
// comparison page, and the API (a result, a model's history, results and
// events, the failures, the comparison) show a tracked signature's issue,
// and an untracked one says so.
func TestAKnownSignatureShowsItsLinkWhereverItIsShown(t *testing.T) {
	ts := knownServer(t)
	for _, page := range []struct {
		path      string
		tracked   int // times the tracked issue is shown, at least
		untracked int
	}{
		{"/?target=tpu", 1, 1},  // top failure causes: both signatures
		{"/models/org/a", 2, 0}, // its current result and its regression in the timeline
		{"/models/org/b", 0, 2}, // current result and its first failure in the timeline
		{"/compare", 1, 1},      // regressed (org/a) and still failing (org/b)
	} {
		body := ts.get(t, page.path).body
		if n := strings.Count(body, fftIssueHTML); n < page.tracked {
			t.Errorf("%s shows the tracked issue %d times, want %d", page.path, n, page.tracked)
		}
		if n := strings.Count(body, notTracked); n < page.untracked {
			t.Errorf("%s says \"not tracked yet\" %d times, want %d", page.path, n, page.untracked)
		}
		if page.tracked == 0 && strings.Contains(body, fftIssueURL) {
			t.Errorf("%s links the issue of a signature it does not show", page.path)
		}
	}

	// The CSV: the known issue's columns, after the matrix's and before
	// the evidence's (each added last in its turn).
	rows, err := csv.NewReader(strings.NewReader(ts.get(t, "/export.csv?target=tpu").body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	k := max(slices.Index(rows[0], "known_issue"), 0) // later groups (evidence's, serving's) follow it
	if head := rows[0]; !slices.Equal(head[k:k+4], []string{"known_issue", "known_issue_url", "known_issue_state", evidenceCSVColumns[0]}) {
		t.Errorf("CSV header has %v", head[k:k+3])
	}
	inCSV := map[string]string{}
	for _, r := range rows[1:] {
		inCSV[r[0]] = strings.Join(r[k:k+3], "|")
	}
	if inCSV["org/a"] != "FFT ops <missing>|"+fftIssueURL+"|open" || inCSV["org/b"] != "||" || len(inCSV) != 2 {
		t.Errorf("CSV known issues: %q", inCSV)
	}

	// The feed: the regression's item and the new runtime's, which lists it.
	_, items := feedItemsOf(t, ts.get(t, "/feed.json").body)
	var sawRuntime, sawRegression bool
	for _, it := range items {
		html := it["content_html"].(string)
		switch title := it["title"].(string); {
		case strings.HasPrefix(title, "New runtime on tpu"):
			sawRuntime = true
			if !strings.Contains(html, `<p>Known issue of <code>unsupported_op:aten::_fft_r2c</code>: <a href="`+fftIssueURL+`">FFT ops &lt;missing&gt;</a> (open)</p>`) {
				t.Errorf("runtime item:\n%s", html)
			}
		case strings.HasPrefix(title, "Regression: org/a"):
			sawRegression = true
			if !strings.Contains(html, `<p>Known issue: <a href="`+fftIssueURL+`">`) {
				t.Errorf("regression item:\n%s", html)
			}
		}
	}
	if !sawRuntime || !sawRegression {
		t.Errorf("feed items %v", titles(items))
	}

	// The API.
	type known struct {
		KnownIssue *compat.KnownIssue `json:"known_issue"`
		Signature  *string            `json:"signature"`
	}
	check := func(where string, k known, tracked bool) {
		t.Helper()
		switch {
		case tracked && (k.KnownIssue == nil || k.KnownIssue.URL != fftIssueURL || k.KnownIssue.Title != "FFT ops <missing>" || k.KnownIssue.State != "open"):
			t.Errorf("%s: known_issue %+v for %v", where, k.KnownIssue, k.Signature)
		case !tracked && k.KnownIssue != nil:
			t.Errorf("%s: known_issue %+v for an untracked signature", where, k.KnownIssue)
		}
	}
	var detail struct {
		Result  known   `json:"result"`
		History []known `json:"history"`
		Results []known `json:"results"`
		Events  []known `json:"events"`
	}
	r := ts.get(t, "/api/v1/models/org/a?target=tpu")
	if err := json.Unmarshal([]byte(r.body), &detail); err != nil {
		t.Fatal(err)
	}
	check("model result", detail.Result, true)
	if len(detail.History) != 2 || len(detail.Results) == 0 || len(detail.Events) != 2 {
		t.Fatalf("detail %s", r.body)
	}
	check("history[0]", detail.History[0], true)
	check("history[1] (a pass)", detail.History[1], false)
	check("results[0]", detail.Results[0], true)
	check("events[0] (the regression)", detail.Events[0], true)
	if !strings.Contains(r.body, `"known_issue":null`) {
		t.Errorf("a result without a tracked signature has no \"known_issue\": null:\n%s", r.body)
	}

	var list struct {
		Models []struct {
			ID     string `json:"id"`
			Result known  `json:"result"`
		} `json:"models"`
	}
	if err := json.Unmarshal([]byte(ts.get(t, "/api/v1/models?target=tpu").body), &list); err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Models {
		check("list "+m.ID, m.Result, m.ID == "org/a")
	}
	if len(list.Models) != 2 {
		t.Errorf("%d models", len(list.Models))
	}

	var fails struct {
		Failures []known `json:"failures"`
	}
	if err := json.Unmarshal([]byte(ts.get(t, "/api/v1/failures?target=tpu").body), &fails); err != nil {
		t.Fatal(err)
	}
	var tracked int
	for _, g := range fails.Failures {
		isFFT := g.Signature != nil && strings.Contains(*g.Signature, "_fft")
		check("failure "+*g.Signature, g, isFFT)
		if isFFT {
			tracked++
		}
	}
	if len(fails.Failures) != 2 || tracked != 1 {
		t.Errorf("failures %+v", fails.Failures)
	}

	var cmp struct {
		Regressed    []known `json:"regressed"`
		StillFailing []known `json:"still_failing"`
	}
	if err := json.Unmarshal([]byte(ts.get(t, "/api/v1/compare").body), &cmp); err != nil {
		t.Fatal(err)
	}
	if len(cmp.Regressed) != 1 || len(cmp.StillFailing) != 1 {
		t.Fatalf("comparison %+v", cmp)
	}
	check("regressed", cmp.Regressed[0], true)
	check("still failing", cmp.StillFailing[0], false)
}

// TestWithoutKnownIssuesEverySignatureIsUntracked: no file, no link, and
// "not tracked yet" where a signature is shown.
func TestWithoutKnownIssuesEverySignatureIsUntracked(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	ts.upsert(t, store.ModelUpsert{ID: "org/a"})
	ts.record(t, "org/a", failOn(compat.TargetTPU, testTime, "aten::_fft_r2c"))
	if body := ts.get(t, "/models/org/a").body; !strings.Contains(body, notTracked) || strings.Contains(body, "Known issue:") {
		t.Errorf("model page without a known-issues file")
	}
	if body := ts.get(t, "/api/v1/models/org/a").body; !strings.Contains(body, `"known_issue":null`) {
		t.Errorf("API without a known-issues file: %s", body)
	}
}

// TestReplacedKnownIssuesAreShownAtOnce: SetKnownIssues (serve's reload on
// SIGHUP) takes effect on every cached page and answer at once: the data
// version moves, so no cache and no ETag of the old table is served.
func TestReplacedKnownIssuesAreShownAtOnce(t *testing.T) {
	ts := knownServer(t)
	paths := []string{"/models/org/a", "/api/v1/models/org/a", "/compare", "/api/v1/failures", "/export.csv?target=tpu", "/feed.json", "/?target=tpu"}
	etags := map[string]string{}
	for _, p := range paths {
		r := ts.get(t, p)
		if !strings.Contains(r.body, fftIssueURL) {
			t.Fatalf("%s before: no known issue", p)
		}
		etags[p] = r.header.Get("ETag")
		ts.get(t, p) // and cached
	}
	moved, err := knownissues.Parse([]byte(`{"unsupported_op:aten::_fft*": {"title": "FFT ops", "url": "https://tracker.example/fft", "state": "fixed"}}`))
	if err != nil {
		t.Fatal(err)
	}
	ts.SetKnownIssues(context.Background(), moved)
	for _, p := range paths {
		r := ts.get(t, p)
		if strings.Contains(r.body, fftIssueURL) || !strings.Contains(r.body, "https://tracker.example/fft") {
			t.Errorf("%s after the table was replaced still shows the old issue", p)
		}
		if tag := r.header.Get("ETag"); tag != "" && tag == etags[p] {
			t.Errorf("%s: the same ETag %s after the table was replaced", p, tag)
		}
		if r := ts.do(t, "GET", p, map[string]string{"If-None-Match": etags[p]}); etags[p] != "" && r.status == 304 {
			t.Errorf("%s: 304 for the old table's ETag", p)
		}
	}
	// A write after the replacement moves the version on again.
	before := ts.get(t, "/api/v1/models/org/b").header.Get("ETag")
	ts.record(t, "org/b", failOn(compat.TargetTPU, testTime.Add(time.Hour), "aten::_fft_c2c"))
	if r := ts.get(t, "/api/v1/models/org/b"); r.header.Get("ETag") == before || !strings.Contains(r.body, "https://tracker.example/fft") {
		t.Errorf("after a write: ETag %s (was %s)", r.header.Get("ETag"), before)
	}
}
