package web

import (
	"encoding/json"
	"encoding/xml"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/knownissues"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// watchedServer has changes of three models on two targets, and a second
// runtime on tpu (a runtime item): org/a new, regression and fix on tpu;
// org/b new (fail) on cpu; other/c new (pass) on tpu, on a newer runtime.
func watchedServer(t *testing.T, cfg Config) *testServer {
	t.Helper()
	if cfg.PublicURL == "" {
		cfg.PublicURL = "https://compat.example.org"
	}
	ts := newTestServer(t, 0, 0, cfg)
	ts.upsert(t, store.ModelUpsert{ID: "org/a", Aliases: []string{"org/a-old"}}, store.ModelUpsert{ID: "org/b"}, store.ModelUpsert{ID: "other/c"})
	ts.record(t, "org/a", passOn(compat.TargetTPU, testTime.Add(-3*time.Hour), 100))
	ts.record(t, "org/a", sameRuntime(failOn(compat.TargetTPU, testTime.Add(-2*time.Hour), "aten::_fft_r2c")))
	ts.record(t, "org/a", passOn(compat.TargetTPU, testTime.Add(-time.Hour), 100))
	ts.record(t, "org/b", sameRuntime(failOn(compat.TargetCPU, testTime, "aten::nonzero")))
	newer := passOn(compat.TargetTPU, testTime.Add(time.Hour), 90)
	newer.Runtime.TorchTPU = "0.3.0"
	ts.record(t, "other/c", newer)
	return ts
}

// sameRuntime gives a failing result passOn's runtime (one runtime per
// target but for the one the fixture adds).
func sameRuntime(r compat.Result) compat.Result {
	r.Runtime = passOn(r.Target, r.TestedAt, 0).Runtime
	return r
}

// items are a JSON Feed's items as plain maps (read without the Go types).
func feedItemsOf(t *testing.T, body string) (map[string]any, []map[string]any) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	raw, _ := doc["items"].([]any)
	var out []map[string]any
	for _, it := range raw {
		out = append(out, it.(map[string]any))
	}
	return doc, out
}

// checkJSONFeed11 checks what JSON Feed 1.1 (https://jsonfeed.org/version/1.1)
// requires, read from the spec (feedparser 6.0, the environment's, reads
// RSS and Atom only): the version URL, a title and an items array; each item a
// unique string id and content_html or content_text; dates in RFC 3339;
// URLs absolute; tags strings.
func checkJSONFeed11(t *testing.T, body string) {
	t.Helper()
	doc, items := feedItemsOf(t, body)
	if doc["version"] != "https://jsonfeed.org/version/1.1" {
		t.Errorf("version %v", doc["version"])
	}
	if title, ok := doc["title"].(string); !ok || title == "" {
		t.Errorf("title %v", doc["title"])
	}
	if _, ok := doc["items"].([]any); !ok {
		t.Errorf("items is not an array: %T", doc["items"])
	}
	for _, k := range []string{"home_page_url", "feed_url"} {
		if u, ok := doc[k].(string); !ok || !absURL(u) {
			t.Errorf("%s %v: want an absolute URL", k, doc[k])
		}
	}
	seen := map[string]bool{}
	for _, it := range items {
		id, ok := it["id"].(string)
		if !ok || id == "" || seen[id] {
			t.Errorf("item id %v missing, not a string or repeated", it["id"])
		}
		seen[id] = true
		html, _ := it["content_html"].(string)
		text, _ := it["content_text"].(string)
		if html == "" && text == "" {
			t.Errorf("item %s has neither content_html nor content_text", id)
		}
		if u, ok := it["url"]; ok && !absURL(u.(string)) {
			t.Errorf("item %s url %v", id, u)
		}
		for _, k := range []string{"date_published", "date_modified"} {
			if v, ok := it[k]; ok {
				if _, err := time.Parse(time.RFC3339, v.(string)); err != nil {
					t.Errorf("item %s %s: %v", id, k, err)
				}
			}
		}
		if tags, ok := it["tags"]; ok {
			for _, tag := range tags.([]any) {
				if _, ok := tag.(string); !ok {
					t.Errorf("item %s tag %v", id, tag)
				}
			}
		}
	}
}

func absURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// parsed is what Python's feedparser read from a feed.
type parsed struct {
	Bozo      bool   `json:"bozo"`
	Exception string `json:"exception"`
	Version   string `json:"version"`
	Title     string `json:"title"`
	Entries   []struct {
		ID, Title, Link string
		Tags            []string
		Summary         string
	} `json:"entries"`
}

// feedparse reads a feed with Python's feedparser (a real parser of Atom
// and RSS): a test that cannot run it is missing a prerequisite.
func feedparse(t *testing.T, body string) parsed {
	t.Helper()
	py := os.Getenv("SCANNER_PYTHON")
	if py == "" {
		testenv.Missing(t, "SCANNER_PYTHON is not set (make test sets it; feedparser is in the project's Python environment)")
	}
	path := filepath.Join(t.TempDir(), "feed")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `
import json, sys
try:
    import feedparser
except ImportError as e:
    print(json.dumps({"missing": str(e)})); sys.exit(0)
d = feedparser.parse(open(sys.argv[1], "rb").read())
print(json.dumps({"bozo": bool(d.bozo), "exception": repr(d.get("bozo_exception", "")), "version": d.version,
    "title": d.feed.get("title", ""),
    "entries": [{"ID": e.get("id", ""), "Title": e.get("title", ""), "Link": e.get("link", ""),
                 "Tags": [x.term for x in e.get("tags", [])], "Summary": e.get("summary", "")} for e in d.entries]}))
`
	out, err := exec.Command(py, "-c", script, path).Output()
	if err != nil {
		t.Fatalf("feedparser: %v", err)
	}
	if strings.Contains(string(out), `"missing"`) {
		testenv.Missing(t, "feedparser is not installed in %s: %s", py, out)
	}
	var p parsed
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("feedparser's answer %s: %v", out, err)
	}
	return p
}

func titles(items []map[string]any) []string {
	var out []string
	for _, it := range items {
		out = append(out, it["title"].(string))
	}
	return out
}

// TestFeedFilters: each filter keeps exactly the changes it names, and
// the filtered feed is still a JSON Feed 1.1 that a real parser reads.
func TestFeedFilters(t *testing.T) {
	ts := watchedServer(t, Config{})
	all := ts.get(t, "/feed.json")
	checkJSONFeed11(t, all.body)
	_, allItems := feedItemsOf(t, all.body)
	if len(allItems) != 6 { // five changes and one runtime item
		t.Fatalf("the whole feed has %d items: %v", len(allItems), titles(allItems))
	}
	for _, tc := range []struct {
		query string
		want  []string // titles, newest first
	}{
		{"model=org/a", []string{"Fixed: org/a passes on tpu (was fail)", "Regression: org/a fails on tpu (forward, unsupported_op aten::_fft_r2c)", "New: org/a passes on tpu"}},
		{"model=org/a-old", []string{"Fixed: org/a passes on tpu (was fail)", "Regression: org/a fails on tpu (forward, unsupported_op aten::_fft_r2c)", "New: org/a passes on tpu"}},
		{"model=ORG/B", []string{"New: org/b fails on cpu (forward, unsupported_op aten::nonzero)"}},
		{"model=org/b&model=other/c", []string{"New: other/c passes on tpu", "New: org/b fails on cpu (forward, unsupported_op aten::nonzero)"}},
		{"model=org/nobody", nil},
		{"org=org", []string{"New: org/b fails on cpu (forward, unsupported_op aten::nonzero)", "Fixed: org/a passes on tpu (was fail)", "Regression: org/a fails on tpu (forward, unsupported_op aten::_fft_r2c)", "New: org/a passes on tpu"}},
		{"target=cpu", []string{"New: org/b fails on cpu (forward, unsupported_op aten::nonzero)"}},
		{"kind=regression", []string{"Regression: org/a fails on tpu (forward, unsupported_op aten::_fft_r2c)"}},
		{"kind=fix&kind=regression&target=tpu", []string{"Fixed: org/a passes on tpu (was fail)", "Regression: org/a fails on tpu (forward, unsupported_op aten::_fft_r2c)"}},
		{"kind=runtime", []string{"New runtime on tpu: torch_tpu 0.3.0 fixes 0 models, breaks 0"}},
		{"model=org/a&kind=runtime", nil},
	} {
		t.Run(tc.query, func(t *testing.T) {
			r := ts.get(t, "/feed.json?"+tc.query)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			checkJSONFeed11(t, r.body)
			doc, items := feedItemsOf(t, r.body)
			if got := titles(items); !slices.Equal(got, tc.want) {
				t.Errorf("titles %q\nwant %q", got, tc.want)
			}
			if !strings.HasPrefix(doc["feed_url"].(string), "https://compat.example.org/feed.json?") || !strings.Contains(doc["title"].(string), " of ") {
				t.Errorf("feed_url %v, title %v: want the filter in both", doc["feed_url"], doc["title"])
			}
		})
	}
	// A filtered feed has an ETag of its own.
	a, b := ts.get(t, "/feed.json?model=org/a"), ts.get(t, "/feed.json?model=org/b")
	if a.header.Get("ETag") == "" || a.header.Get("ETag") == b.header.Get("ETag") || a.header.Get("ETag") == all.header.Get("ETag") {
		t.Errorf("ETags %q %q %q", a.header.Get("ETag"), b.header.Get("ETag"), all.header.Get("ETag"))
	}
	if r := ts.do(t, "GET", "/feed.json?model=org/a", map[string]string{"If-None-Match": a.header.Get("ETag")}); r.status != 304 {
		t.Errorf("If-None-Match of the filtered feed: %d", r.status)
	}
	for _, bad := range []string{"kind=regresion", "target=gpu", "model=../x", "org=a&org=b", "model=a/b/c"} {
		if r := ts.get(t, "/feed.json?"+bad); r.status != 400 || !strings.Contains(r.body, `"error"`) {
			t.Errorf("%s: %d %s", bad, r.status, r.body)
		}
	}
}

// atomDoc is an Atom feed as read here, independently of the Go types
// that write it.
type atomRead struct {
	XMLName xml.Name `xml:"http://www.w3.org/2005/Atom feed"`
	ID      string   `xml:"id"`
	Title   string   `xml:"title"`
	Updated string   `xml:"updated"`
	Author  []struct {
		Name string `xml:"name"`
	} `xml:"author"`
	Links []struct {
		Rel  string `xml:"rel,attr"`
		Href string `xml:"href,attr"`
	} `xml:"link"`
	Entries []struct {
		ID      string `xml:"id"`
		Title   string `xml:"title"`
		Updated string `xml:"updated"`
		Link    struct {
			Href string `xml:"href,attr"`
		} `xml:"link"`
		Content struct {
			Type string `xml:"type,attr"`
			Body string `xml:",chardata"`
		} `xml:"content"`
	} `xml:"entry"`
}

// TestAtomFeed: /feed.atom is the same feed as Atom 1.0, with the same
// filters; feedparser reads it without complaint, and what it must have
// (RFC 4287: feed id, title, updated, author; each entry's id, title,
// updated) is there.
func TestAtomFeed(t *testing.T) {
	ts := watchedServer(t, Config{})
	for _, q := range []string{"", "?model=org/a", "?kind=runtime", "?target=cpu"} {
		r := ts.get(t, "/feed.atom"+q)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/atom+xml") {
			t.Fatalf("%s: %d %s", q, r.status, r.header.Get("Content-Type"))
		}
		var doc atomRead
		if err := xml.Unmarshal([]byte(r.body), &doc); err != nil {
			t.Fatalf("%s: not Atom XML: %v", q, err)
		}
		_, items := feedItemsOf(t, ts.get(t, "/feed.json"+q).body)
		if doc.ID == "" || doc.Title == "" || len(doc.Author) == 0 || doc.Author[0].Name == "" || len(doc.Entries) != len(items) {
			t.Fatalf("%s: feed %+v with %d entries, want %d", q, doc, len(doc.Entries), len(items))
		}
		if _, err := time.Parse(time.RFC3339, doc.Updated); err != nil {
			t.Errorf("%s: updated %q", q, doc.Updated)
		}
		want := "https://compat.example.org/feed.atom"
		if v, _ := url.ParseQuery(strings.TrimPrefix(q, "?")); len(v) > 0 {
			want += "?" + v.Encode()
		}
		self := false
		for _, l := range doc.Links {
			self = self || l.Rel == "self" && l.Href == want
		}
		if !self {
			t.Errorf("%s: no self link: %+v", q, doc.Links)
		}
		for i, e := range doc.Entries {
			if e.ID != items[i]["id"] || e.Title != items[i]["title"] || e.Link.Href != items[i]["url"] || e.Content.Type != "html" ||
				e.Content.Body != items[i]["content_html"] {
				t.Errorf("%s: entry %d %+v differs from the JSON item %v", q, i, e, items[i])
			}
			if _, err := time.Parse(time.RFC3339, e.Updated); err != nil {
				t.Errorf("%s: entry updated %q", q, e.Updated)
			}
		}
		p := feedparse(t, r.body)
		if p.Bozo || p.Version != "atom10" || len(p.Entries) != len(items) {
			t.Errorf("%s: feedparser read version %q, bozo %v (%s), %d entries", q, p.Version, p.Bozo, p.Exception, len(p.Entries))
		}
		for i, e := range p.Entries {
			if e.ID != items[i]["id"] || e.Title != items[i]["title"] {
				t.Errorf("%s: feedparser entry %d: %+v", q, i, e)
			}
		}
	}
	if r := ts.get(t, "/feed.atom?kind=nope"); r.status != 400 {
		t.Errorf("a bad filter on the Atom feed: %d", r.status)
	}
}

// TestAtomEscapesWhatTheHubSends: markup and control characters in a
// message stay text in the Atom feed, which stays well-formed.
func TestAtomEscapesWhatTheHubSends(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{PublicURL: "https://compat.example.org"})
	ts.upsert(t, store.ModelUpsert{ID: "evil/model"})
	r := failOn(compat.TargetCPU, testTime, "aten::x")
	r.Message = compat.Ptr("</content><script>alert(1)</script> \x1b[31m\x00 ]]> &amp;")
	ts.record(t, "evil/model", r)
	body := ts.get(t, "/feed.atom").body
	var doc atomRead
	if err := xml.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("not well-formed: %v", err)
	}
	if strings.Contains(body, "<script>") || len(doc.Entries) != 1 || !strings.Contains(doc.Entries[0].Content.Body, "&lt;script&gt;") {
		t.Errorf("markup escaped wrongly:\n%s", body)
	}
	if p := feedparse(t, body); p.Bozo {
		t.Errorf("feedparser: %s", p.Exception)
	}
}

// TestTheModelPageLinksItsFeeds: a model's page names its own feeds, in
// its head (for feed readers) and in its body, and they are its changes.
func TestTheModelPageLinksItsFeeds(t *testing.T) {
	ts := watchedServer(t, Config{})
	page := ts.get(t, "/models/org/a").body
	for _, want := range []string{
		// html/template writes "+" in an attribute as &#43;
		`<link rel="alternate" type="application/atom&#43;xml" title="org/a: status changes (Atom)" href="/feed.atom?model=org%2Fa">`,
		`<link rel="alternate" type="application/feed&#43;json" title="org/a: status changes" href="/feed.json?model=org%2Fa">`,
		`<a href="/feed.atom?model=org%2Fa" type="application/atom&#43;xml">Atom</a>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the model page lacks %s", want)
		}
	}
	_, items := feedItemsOf(t, ts.get(t, "/feed.json?model=org%2Fa").body)
	if len(items) != 3 {
		t.Errorf("the linked feed has %d items", len(items))
	}
}

func knownTable(t *testing.T) knownissues.Table {
	t.Helper()
	tab, err := knownissues.Parse([]byte(`{"unsupported_op:aten::_fft*": {"title": "FFT ops <missing>", "url": "https://github.com/org/torch_tpu/issues/12", "state": "open"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestKnownIssuesInTheFeed: an item about a tracked signature links its
// issue; one about an untracked signature says so.
func TestKnownIssuesInTheFeed(t *testing.T) {
	ts := watchedServer(t, Config{KnownIssues: knownTable(t)})
	_, items := feedItemsOf(t, ts.get(t, "/feed.json").body)
	var tracked, untracked int
	for _, it := range items {
		html, text := it["content_html"].(string), it["content_text"].(string)
		switch {
		case strings.Contains(it["title"].(string), "aten::_fft_r2c"):
			tracked++
			if !strings.Contains(html, `<p>Known issue: <a href="https://github.com/org/torch_tpu/issues/12">FFT ops &lt;missing&gt;</a> (open)</p>`) ||
				!strings.Contains(text, "Known issue: FFT ops <missing> (open) https://github.com/org/torch_tpu/issues/12") {
				t.Errorf("tracked item:\n%s\n%s", html, text)
			}
		case strings.Contains(it["title"].(string), "aten::nonzero"):
			untracked++
			if !strings.Contains(html, "<p>Known issue: not tracked yet</p>") || !strings.Contains(text, "Known issue: not tracked yet") {
				t.Errorf("untracked item:\n%s\n%s", html, text)
			}
		default:
			if strings.Contains(html, "Known issue") {
				t.Errorf("an item without a signature names a known issue: %s", html)
			}
		}
	}
	if tracked != 1 || untracked != 1 {
		t.Errorf("%d tracked, %d untracked items", tracked, untracked)
	}
}
