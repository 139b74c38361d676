package hub

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
)

func TestListModelsPagination(t *testing.T) {
	tests := []struct {
		name      string
		repos     int
		limit     int
		wantN     int
		wantPages int
	}{
		{"exact limit within one page", 20, 7, 7, 1},
		{"1000 models in one request", 1200, 1000, 1000, 1},
		{"two pages", 1600, 1500, 1500, 2},
		{"fewer models than the limit", 30, 100, 30, 1},
		{"next link followed to the end", 2500, 2500, 2500, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repos := manyRepos(tt.repos)
			e := newEnv(t, nil, repos...)
			var pages []int
			got, err := e.c.ListModels(context.Background(), ListOptions{Limit: tt.limit, OnPage: func(n int) { pages = append(pages, n) }})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.wantN {
				t.Fatalf("got %d models, want %d", len(got), tt.wantN)
			}
			reqs := e.requests("hub", "/api/models")
			if len(reqs) != tt.wantPages || len(pages) != tt.wantPages {
				t.Fatalf("%d requests, %d OnPage calls, want %d", len(reqs), len(pages), tt.wantPages)
			}
			for i, m := range got {
				if want := repos[i].ID; m.ID != want {
					t.Fatalf("model %d = %s, want %s (downloads order)", i, m.ID, want)
				}
			}
			first, _ := url.ParseQuery(reqs[0].RawQuery)
			if want := min(tt.limit, 1000); first.Get("limit") != strconv.Itoa(want) {
				t.Errorf("first page limit=%s, want %d", first.Get("limit"), want)
			}
			for _, r := range reqs[1:] {
				q, _ := url.ParseQuery(r.RawQuery)
				if q.Get("cursor") == "" || len(q["expand[]"]) != len(listExpand) {
					t.Errorf("next page %q: want the Link's cursor and every expand[] kept", r.RawQuery)
				}
			}
		})
	}
}

// A model that drops in rank between two pages shows up on both; the list
// must hold it once and still reach the limit.
func TestListModelsDedupe(t *testing.T) {
	repos := manyRepos(1500)
	e := newEnv(t, nil, repos...)
	moved := repos[10]
	got, err := e.c.ListModels(context.Background(), ListOptions{Limit: 1200, OnPage: func(n int) {
		if n == 1000 { // between page 1 and page 2: model-0010 falls to rank ~1100
			m := moved
			m.Downloads = int64(1_000_000 - 1100)
			e.hub.AddRepo(m)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1200 {
		t.Fatalf("got %d models, want 1200", len(got))
	}
	seen := map[string]int{}
	for _, m := range got {
		seen[m.ID]++
	}
	if seen[moved.ID] != 1 {
		t.Fatalf("%s listed %d times, want once", moved.ID, seen[moved.ID])
	}
	if len(seen) != 1200 {
		t.Fatalf("%d distinct models, want 1200", len(seen))
	}
}

func TestListModelsParams(t *testing.T) {
	tests := []struct {
		name     string
		opts     ListOptions
		wantSort string
		want     func(q url.Values) string // "" when fine
		first    string
	}{
		{"downloads", ListOptions{Limit: 5}, "downloads", nil, "org/model-0000"},
		{"likes", ListOptions{Limit: 5, Sort: "likes"}, "likes", nil, "org/model-0029"},
		{"trending", ListOptions{Limit: 5, Sort: "trending"}, "trendingScore", nil, "org/model-0017"},
		{"one task", ListOptions{Limit: 5, PipelineTags: []string{"fill-mask"}}, "downloads",
			func(q url.Values) string {
				if q.Get("pipeline_tag") != "fill-mask" {
					return "pipeline_tag=" + q.Get("pipeline_tag")
				}
				return ""
			}, "org/model-0001"},
		{"library", ListOptions{Limit: 5, Library: "timm"}, "downloads",
			func(q url.Values) string {
				if q.Get("filter") != "timm" {
					return "filter=" + q.Get("filter")
				}
				return ""
			}, "org/model-0001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil, manyRepos(30)...)
			got, err := e.c.ListModels(context.Background(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 || got[0].ID != tt.first {
				t.Fatalf("first model %v, want %s", ids(got), tt.first)
			}
			reqs := e.requests("hub", "/api/models")
			q, _ := url.ParseQuery(reqs[0].RawQuery)
			if q.Get("sort") != tt.wantSort || q.Get("direction") != "-1" {
				t.Errorf("sort=%s direction=%s, want %s -1", q.Get("sort"), q.Get("direction"), tt.wantSort)
			}
			for _, f := range []string{"downloads", "likes", "pipeline_tag", "library_name", "tags", "sha", "gated",
				"lastModified", "private", "disabled", "config", "siblings"} {
				if !slices.Contains(q["expand[]"], f) {
					t.Errorf("expand[] lacks %s: %v", f, q["expand[]"])
				}
			}
			if tt.want != nil {
				if msg := tt.want(q); msg != "" {
					t.Errorf("query: %s", msg)
				}
			}
		})
	}
}

func ids(ms []ModelInfo) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func TestListModelsSeveralTasks(t *testing.T) {
	e := newEnv(t, nil, manyRepos(30)...)
	var pages []int
	got, err := e.c.ListModels(context.Background(), ListOptions{Limit: 4, PipelineTags: []string{"fill-mask", "image-classification"},
		OnPage: func(n int) { pages = append(pages, n) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"org/model-0001", "org/model-0002", "org/model-0004", "org/model-0005"}
	if !slices.Equal(ids(got), want) {
		t.Fatalf("got %v, want %v (top 4 of both tasks by downloads)", ids(got), want)
	}
	// Progress counts the models listed so far over both queries (one page
	// of 4 each), before the merge keeps the top 4.
	if !slices.Equal(pages, []int{4, 8}) {
		t.Errorf("OnPage got %v, want [4 8]", pages)
	}
}

func TestListModelsFields(t *testing.T) {
	r := smallModel("acme/tiny")
	r.Gated = "manual"
	r.Likes = 42
	r.Tags = []string{"safetensors"}
	e := newEnv(t, nil, r)
	got, err := e.c.ListModels(context.Background(), ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	m := got[0]
	if m.ID != "acme/tiny" || m.SHA != e.hub.SHA("acme/tiny") || m.PipelineTag != "text-generation" ||
		m.Library != "transformers" || !m.Gated || m.GatedMode != "manual" || m.Likes != 42 || m.Downloads != 1000 ||
		m.LastModified.IsZero() || m.FilesMetadata {
		t.Fatalf("unexpected %+v", m)
	}
	if m.Config["model_type"] != "gpt2" {
		t.Errorf("config %v", m.Config)
	}
	if len(m.Siblings) != 6 || !slices.Contains(m.Tags, "safetensors") {
		t.Errorf("siblings %v tags %v", m.Siblings, m.Tags)
	}
}

func TestListModelsMalformedJSON(t *testing.T) {
	e := newEnv(t, nil, manyRepos(3)...)
	e.hub.Fault("/api/models", hubtest.MalformedJSON())
	_, err := e.c.ListModels(context.Background(), ListOptions{Limit: 3})
	if err == nil || !strings.Contains(err.Error(), "malformed JSON") || !strings.Contains(err.Error(), "page 1") {
		t.Fatalf("err = %v, want a malformed-JSON error naming the page", err)
	}
}

func TestListModelsBadSort(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.c.ListModels(context.Background(), ListOptions{Sort: "stars"}); err == nil {
		t.Fatal("want an error for an unknown sort")
	}
	if n := len(e.hub.Requests()); n != 0 {
		t.Fatalf("%d requests sent for an invalid sort", n)
	}
}

func TestModelInfo(t *testing.T) {
	r := smallModel("acme/tiny")
	e := newEnv(t, nil, r)
	mi, err := e.c.ModelInfo(context.Background(), "acme/tiny", "")
	if err != nil {
		t.Fatal(err)
	}
	if !mi.FilesMetadata || mi.SHA != e.hub.SHA("acme/tiny") {
		t.Fatalf("unexpected %+v", mi)
	}
	sizes := map[string]Sibling{}
	for _, s := range mi.Siblings {
		sizes[s.Name] = s
	}
	w := sizes["model.safetensors"]
	if w.Size != 100000 || w.LFSSHA256 != hubtest.SHA256(r.Files["model.safetensors"]) {
		t.Errorf("model.safetensors sibling %+v", w)
	}
	if c := sizes["config.json"]; c.LFSSHA256 != "" || c.BlobID != hubtest.GitBlobSHA1(r.Files["config.json"]) {
		t.Errorf("config.json sibling %+v", c)
	}
	files, total := WeightFiles(mi.Siblings)
	if !slices.Equal(files, []string{"model.safetensors"}) || total != 100000 {
		t.Errorf("WeightFiles = %v, %d", files, total)
	}
	reqs := e.requests("hub", "/api/models/")
	if len(reqs) != 1 || reqs[0].Path != "/api/models/acme/tiny/revision/main" || !strings.Contains(reqs[0].RawQuery, "blobs=true") {
		t.Fatalf("requests %+v", reqs)
	}
}

func TestModelInfoRename(t *testing.T) {
	r := smallModel("new-org/tiny")
	r.RenamedFrom = []string{"old-org/tiny-legacy"}
	e := newEnv(t, nil, r)
	mi, err := e.c.ModelInfo(context.Background(), "old-org/tiny-legacy", "main")
	if err != nil {
		t.Fatal(err)
	}
	if mi.ID != "new-org/tiny" || mi.RequestedID != "old-org/tiny-legacy" || !slices.Equal(mi.Aliases, []string{"old-org/tiny-legacy"}) {
		t.Fatalf("ID %q RequestedID %q Aliases %v", mi.ID, mi.RequestedID, mi.Aliases)
	}
	reqs := e.requests("hub", "/api/models/")
	if len(reqs) != 2 || reqs[0].Status != 307 || reqs[1].Path != "/api/models/new-org/tiny/revision/main" {
		t.Fatalf("requests %+v", reqs)
	}
	// A case variant redirects too, and is kept as an alias.
	mi, err = e.c.ModelInfo(context.Background(), "New-Org/Tiny", "")
	if err != nil || mi.ID != "new-org/tiny" || !slices.Contains(mi.Aliases, "New-Org/Tiny") {
		t.Fatalf("case variant: %+v, %v", mi, err)
	}
}

func TestModelInfoRevision(t *testing.T) {
	e := newEnv(t, nil, smallModel("acme/tiny"))
	old := e.hub.SHA("acme/tiny")
	e.hub.SetSHA("acme/tiny", strings.Repeat("b", 40))
	mi, err := e.c.ModelInfo(context.Background(), "acme/tiny", old)
	if err != nil || mi.SHA != old {
		t.Fatalf("pinned info: %+v, %v", mi.SHA, err)
	}
	_, err = e.c.ModelInfo(context.Background(), "acme/tiny", "no-such-branch")
	if !errors.Is(err, ErrNotFound) || reasonOf(err) != "not_found" {
		t.Fatalf("unknown revision: %v", err)
	}
	if _, err := e.c.ModelInfo(context.Background(), "../etc", ""); err == nil {
		t.Fatal("invalid id accepted")
	}
}

func TestModelInfoMalformedJSON(t *testing.T) {
	e := newEnv(t, nil, smallModel("acme/tiny"))
	e.hub.Fault("/api/models/acme/tiny", hubtest.MalformedJSON())
	_, err := e.c.ModelInfo(context.Background(), "acme/tiny", "")
	if err == nil || !strings.Contains(err.Error(), "malformed JSON") {
		t.Fatalf("err = %v", err)
	}
}

// TestListingAnswerSizeCap: a listing answer of exactly the cap (maxJSON,
// lowered here) is read; one byte more is refused as too large, and says
// so (not as the malformed JSON its cut-off start would be).
func TestListingAnswerSizeCap(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		want string // "" for no error
	}{
		{"exactly the cap", 4096, ""},
		{"one byte over", 4097, "answer over 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := make([]byte, tc.size) // "[", spaces, "]": an empty listing
			for i := range body {
				body[i] = ' '
			}
			body[0], body[len(body)-1] = '[', ']'
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write(body)
			}))
			defer srv.Close()
			c, err := New(Options{Endpoint: srv.URL, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if c.maxJSON != maxJSON {
				t.Fatalf("a new client reads JSON answers up to %d bytes, want %d", c.maxJSON, maxJSON)
			}
			c.maxJSON = 4096
			got, err := c.ListModels(context.Background(), ListOptions{Limit: 5})
			switch {
			case tc.want == "" && (err != nil || len(got) != 0):
				t.Fatalf("ListModels = %d models, %v; want an empty listing", len(got), err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("ListModels error %v; want one saying %q", err, tc.want)
			}
		})
	}
}
