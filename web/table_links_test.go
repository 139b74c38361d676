package web

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/store"
)

// The table's paging links: a next page keeps a chosen page size (and adds
// none by default), and only a later page links back to the first, with
// the filters and sort kept and no cursor.
func TestTablePagingLinks(t *testing.T) {
	ts := newTestServer(t, 30, 30, Config{})
	nextRE := regexp.MustCompile(`<a rel="next" href="([^"]+)"`)
	firstRE := regexp.MustCompile(`<a href="([^"]+)">« First page</a>`)
	link := func(re *regexp.Regexp, body string) string {
		if m := re.FindStringSubmatch(body); m != nil {
			return htmlUnescape(m[1])
		}
		return ""
	}

	first := ts.get(t, "/?sort=downloads&limit=10")
	if n := len(rowIDs(first.body)); n != 10 {
		t.Fatalf("limit=10: %d rows", n)
	}
	if l := link(firstRE, first.body); l != "" {
		t.Errorf("the first page links to a first page: %s", l)
	}
	next := link(nextRE, first.body)
	if !strings.Contains(next, "limit=10") || !strings.Contains(next, "sort=downloads") || !strings.Contains(next, "cursor=") {
		t.Fatalf("next link %q lost the page size or sort", next)
	}
	second := ts.get(t, next)
	if n := len(rowIDs(second.body)); n != 10 {
		t.Errorf("second page: %d rows, want 10", n)
	}
	back := link(firstRE, second.body)
	if back == "" || !strings.Contains(back, "sort=downloads") || strings.Contains(back, "cursor=") {
		t.Errorf("second page's first-page link: %q", back)
	}

	// The default page size (50) is not written into the link.
	many := newTestServer(t, 60, 60, Config{})
	if next := link(nextRE, many.get(t, "/").body); next == "" || strings.Contains(next, "limit=") {
		t.Errorf("default page size, next link %q", next)
	}
}

// An empty table says why: a filter that matches nothing (any of q,
// status, task, org, hint) is told apart from no models at all, and only
// the former offers to reset.
func TestTableEmptyFilteredOrNot(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	const filtered, none, reset = "No model matches these filters.", "No models yet.", `<a href="/">Reset</a>`
	r := ts.get(t, "/")
	if !strings.Contains(r.body, none) || strings.Contains(r.body, filtered) || strings.Contains(r.body, reset) {
		t.Errorf("no filter: want %q and no reset link", none)
	}
	for _, q := range []string{"q=zzz", "status=pass", "task=text-generation", "org=someorg", "hint=remote_code"} {
		r := ts.get(t, "/?"+q)
		if r.status != 200 || !strings.Contains(r.body, filtered) || strings.Contains(r.body, none) || !strings.Contains(r.body, reset) {
			t.Errorf("%s: %d, want %q and a reset link", q, r.status, filtered)
		}
	}
}

// The task filter suggests the tasks of the models shown (beyond the
// common ones), and never an empty task.
func TestTableTaskSuggestions(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	ts.upsert(t, store.ModelUpsert{ID: "org/rare", SHA: "sha", Task: "rare-task"}, store.ModelUpsert{ID: "org/none", SHA: "sha"})
	m := regexp.MustCompile(`<datalist id="tasks">(.*?)</datalist>`).FindStringSubmatch(ts.get(t, "/").body)
	if m == nil {
		t.Fatal("no task suggestions")
	}
	body := m[1]
	if !strings.Contains(body, `<option value="rare-task">`) {
		t.Error("the shown model's task is not suggested")
	}
	if !strings.Contains(body, `<option value="text-generation">`) {
		t.Error("a common task is not suggested")
	}
	if strings.Contains(body, `<option value="">`) {
		t.Error("an empty task is suggested")
	}
}

// The table's charts appear only with data to draw: an empty site shows
// neither the pass rate by runtime nor the top failures, a site with
// results shows both.
func TestTableChartsOnlyWithData(t *testing.T) {
	const trend, failures = "Pass rate by runtime", "Top failure signatures"
	empty := newTestServer(t, 0, 0, Config{}).get(t, "/").body
	if strings.Contains(empty, trend) || strings.Contains(empty, failures) {
		t.Error("an empty site draws charts")
	}
	full := newTestServer(t, 30, 60, Config{}).get(t, "/").body
	if !strings.Contains(full, trend) || !strings.Contains(full, failures) {
		t.Errorf("a site with results lacks a chart: trend %v, failures %v",
			strings.Contains(full, trend), strings.Contains(full, failures))
	}
}
