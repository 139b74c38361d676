package hubtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// listIDs fetches one listing page and returns its ids and the next link.
func listIDs(t *testing.T, url string, hdr map[string]string) ([]string, string) {
	t.Helper()
	resp, body := do(t, http.MethodGet, url, hdr)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	var page []map[string]any
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
	ids := []string{}
	for _, m := range page {
		ids = append(ids, m["id"].(string))
	}
	next := ""
	if l := resp.Header.Get("Link"); l != "" {
		next = strings.TrimSuffix(strings.TrimPrefix(l, "<"), `>; rel="next"`)
	}
	return ids, next
}

func sortRepos() []Repo {
	day := func(d int) time.Time { return time.Date(2024, 3, d, 0, 0, 0, 0, time.UTC) }
	return []Repo{
		{ID: "b-org/two", Downloads: 5, Likes: 9, TrendingScore: 1.5, LastModified: day(3), Library: "timm", PipelineTag: "image-classification"},
		{ID: "a-org/one", Downloads: 7, Likes: 2, TrendingScore: 0.5, LastModified: day(9), Library: "transformers", Tags: []string{"bert", "en"}},
		{ID: "c-org/Three-Big", Downloads: 5, Likes: 4, TrendingScore: 9, LastModified: day(1), Library: "transformers", Tags: []string{"bert"}},
		{ID: "legacy", Downloads: 1, Likes: 0, TrendingScore: 2, LastModified: day(5)},
	}
}

// TestListingSorts: each sort key orders by its field, descending unless
// direction=1, ties by id; without sort the order the repos were added.
func TestListingSorts(t *testing.T) {
	h := New(t, sortRepos()...)
	for _, tt := range []struct {
		query string
		want  []string
	}{
		{"", []string{"b-org/two", "a-org/one", "c-org/Three-Big", "legacy"}},
		// downloads 7, 5, 5, 1: the tie (b-org/two, c-org/Three-Big) in id order both ways
		{"sort=downloads", []string{"a-org/one", "b-org/two", "c-org/Three-Big", "legacy"}},
		{"sort=downloads&direction=-1", []string{"a-org/one", "b-org/two", "c-org/Three-Big", "legacy"}},
		{"sort=downloads&direction=1", []string{"legacy", "b-org/two", "c-org/Three-Big", "a-org/one"}},
		{"sort=likes", []string{"b-org/two", "c-org/Three-Big", "a-org/one", "legacy"}},
		{"sort=likes&direction=1", []string{"legacy", "a-org/one", "c-org/Three-Big", "b-org/two"}},
		{"sort=trendingScore", []string{"c-org/Three-Big", "legacy", "b-org/two", "a-org/one"}},
		{"sort=lastModified", []string{"a-org/one", "legacy", "b-org/two", "c-org/Three-Big"}},
		{"sort=createdAt&direction=1", []string{"c-org/Three-Big", "b-org/two", "legacy", "a-org/one"}},
		{"sort=id&direction=1", []string{"a-org/one", "b-org/two", "c-org/Three-Big", "legacy"}},
		{"sort=id", []string{"legacy", "c-org/Three-Big", "b-org/two", "a-org/one"}},
	} {
		got, next := listIDs(t, h.URL()+"/api/models?"+tt.query, nil)
		if !slices.Equal(got, tt.want) || next != "" {
			t.Errorf("?%s: %v (next %q), want %v", tt.query, got, next, tt.want)
		}
	}
}

// TestListingFilters: filter= (tags, comma or repeated, ANDed; a repo's
// library and pipeline tag are tags too), pipeline_tag, library, author
// (the namespace) and search (a substring of the id, any letter case).
func TestListingFilters(t *testing.T) {
	h := New(t, sortRepos()...)
	for _, tt := range []struct {
		query string
		want  []string
	}{
		{"filter=bert", []string{"a-org/one", "c-org/Three-Big"}},
		{"filter=bert,en", []string{"a-org/one"}},
		{"filter=bert&filter=en", []string{"a-org/one"}},
		{"filter=en,nope", []string{}},
		{"filter=timm", []string{"b-org/two"}},
		{"filter=image-classification", []string{"b-org/two"}},
		{"pipeline_tag=image-classification", []string{"b-org/two"}},
		{"library=transformers", []string{"a-org/one", "c-org/Three-Big"}},
		{"library=transformers&filter=en", []string{"a-org/one"}},
		{"author=a-org", []string{"a-org/one"}},
		{"author=a", []string{}},
		{"author=legacy", []string{}},
		{"search=three-b", []string{"c-org/Three-Big"}},
		{"search=ORG/T", []string{"b-org/two", "c-org/Three-Big"}},
		{"search=zzz", []string{}},
	} {
		got, _ := listIDs(t, h.URL()+"/api/models?"+tt.query, nil)
		if !slices.Equal(got, tt.want) {
			t.Errorf("?%s: %v, want %v", tt.query, got, tt.want)
		}
	}
}

// TestListingPages: limit, the Hub's cap of 1000 a page, the cursor in the
// Link header (the same query but for the cursor), and the 400s for a bad
// limit, sort or cursor.
func TestListingPages(t *testing.T) {
	var many []Repo
	for i := range 1003 {
		many = append(many, Repo{ID: fmt.Sprintf("org/m%04d", i), Downloads: int64(i)})
	}
	h := New(t, many...)

	got, next := listIDs(t, h.URL()+"/api/models", nil)
	if len(got) != 1000 || got[0] != "org/m0000" || got[999] != "org/m0999" || next == "" {
		t.Fatalf("no limit: %d models (%v…), next %q; want the first 1000 and a next link", len(got), got[:min(len(got), 2)], next)
	}
	got, next = listIDs(t, next, nil)
	if !slices.Equal(got, []string{"org/m1000", "org/m1001", "org/m1002"}) || next != "" {
		t.Fatalf("second page: %v, next %q", got, next)
	}
	if got, next := listIDs(t, h.URL()+"/api/models?limit=5000", nil); len(got) != 1000 || next == "" {
		t.Fatalf("limit=5000: %d models, next %q; want 1000 and a next link", len(got), next)
	}
	if got, next := listIDs(t, h.URL()+"/api/models?limit=1003", nil); len(got) != 1000 || next == "" {
		t.Fatalf("limit=1003: %d models, next %q; want 1000 (the cap) and a next link", len(got), next)
	}
	got, next = listIDs(t, h.URL()+"/api/models?limit=1&sort=downloads&direction=-1&author=org", nil)
	if !slices.Equal(got, []string{"org/m1002"}) {
		t.Fatalf("limit=1 sorted: %v", got)
	}
	u, err := url.Parse(next)
	if err != nil || u.Path != "/api/models" || u.Host != strings.TrimPrefix(h.URL(), "http://") {
		t.Fatalf("next link %q", next)
	}
	q := u.Query()
	if q.Get("limit") != "1" || q.Get("sort") != "downloads" || q.Get("direction") != "-1" || q.Get("author") != "org" || q.Get("cursor") == "" {
		t.Fatalf("next link %q does not carry the query", next)
	}
	got, _ = listIDs(t, next, nil)
	if !slices.Equal(got, []string{"org/m1001"}) {
		t.Fatalf("page two of limit=1: %v", got)
	}
	// A page exactly at the end has no next link.
	if got, next := listIDs(t, h.URL()+"/api/models?limit=3&search=m100", nil); len(got) != 3 || next != "" {
		t.Fatalf("limit equal to what is left: %v, next %q", got, next)
	}
	// A cursor past the end is an empty page.
	past := base64.StdEncoding.EncodeToString([]byte(`{"offset":2000}`))
	if got, next := listIDs(t, h.URL()+"/api/models?cursor="+url.QueryEscape(past), nil); len(got) != 0 || next != "" {
		t.Fatalf("cursor past the end: %v, next %q", got, next)
	}
	// offset 0 spelled out is the first page.
	zero := base64.StdEncoding.EncodeToString([]byte(`{"offset":0}`))
	if got, _ := listIDs(t, h.URL()+"/api/models?limit=1&cursor="+url.QueryEscape(zero), nil); !slices.Equal(got, []string{"org/m0000"}) {
		t.Fatalf("cursor at 0: %v", got)
	}

	for _, query := range []string{
		"limit=0", "limit=-3", "limit=ten", "sort=popularity", "expand=nope",
		"cursor=%25%25", "cursor=" + url.QueryEscape(base64.StdEncoding.EncodeToString([]byte("not json"))),
		"cursor=" + url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(`{"offset":-1}`))),
	} {
		resp, body := do(t, http.MethodGet, h.URL()+"/api/models?"+query, nil)
		var e map[string]string
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || e["error"] == "" ||
			resp.Header.Get("X-Error-Message") != e["error"] {
			t.Errorf("?%s: %d %s; want 400 with the error in the body and X-Error-Message", query, resp.StatusCode, body)
		}
	}
	if resp, _ := do(t, http.MethodGet, h.URL()+"/api/models?limit=1", nil); resp.StatusCode != 200 {
		t.Errorf("limit=1: %d", resp.StatusCode)
	}
}

// TestModelJSON: the fields of a listing and of model info as the Hub
// renders them.
func TestModelJSON(t *testing.T) {
	h := New(t,
		Repo{ID: "org/full", PipelineTag: "fill-mask", Library: "transformers", Tags: []string{"bert", "transformers"},
			Gated: "auto", Downloads: 12, Likes: 3, TrendingScore: 2.5,
			LastModified: time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("x", 3600)),
			Config:       map[string]any{"model_type": "bert"},
			Files:        map[string][]byte{"z.json": []byte("{}"), "config.json": []byte(`{"model_type":"bert"}`), "w.bin": []byte("12345")},
			LFS:          map[string]bool{"w.bin": true}},
		Repo{ID: "bare", Disabled: true},
	)
	get := func(path string) map[string]any {
		t.Helper()
		resp, body := do(t, http.MethodGet, h.URL()+path, nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" ||
			resp.Header.Get("Content-Length") != fmt.Sprint(len(body)) {
			t.Fatalf("GET %s: %d %v %s", path, resp.StatusCode, resp.Header, body)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	keys := func(m map[string]any) string { return strings.Join(slices.Sorted(maps.Keys(m)), ",") }

	full := get("/api/models/org/full")
	if got := keys(full); got != "_id,author,config,createdAt,disabled,downloads,gated,id,lastModified,library_name,likes,modelId,pipeline_tag,private,sha,siblings,tags" {
		t.Errorf("model info fields: %s", got)
	}
	sibs, _ := json.Marshal(full["siblings"])
	want := map[string]any{
		"_id": full["_id"], "id": "org/full", "modelId": "org/full", "author": "org", "sha": h.SHA("org/full"),
		"lastModified": "2024-05-06T06:08:09.000Z", "createdAt": "2024-05-05T06:08:09.000Z",
		"private": false, "disabled": false, "gated": "auto", "downloads": 12.0, "likes": 3.0,
		"library_name": "transformers", "pipeline_tag": "fill-mask",
		"tags": []any{"bert", "transformers", "fill-mask"}, "config": map[string]any{"model_type": "bert"},
	}
	for k, v := range want {
		if g, _ := json.Marshal(full[k]); string(g) != mustJSON(v) {
			t.Errorf("%s = %s, want %s", k, g, mustJSON(v))
		}
	}
	if string(sibs) != `[{"rfilename":"config.json"},{"rfilename":"w.bin"},{"rfilename":"z.json"}]` {
		t.Errorf("siblings without blobs: %s", sibs)
	}
	if id, _ := full["_id"].(string); len(id) != 24 {
		t.Errorf("_id %q: want 24 hex digits, like a Mongo id", id)
	}
	if get("/api/models/bare")["_id"] == full["_id"] {
		t.Errorf("two repos share an _id")
	}

	ptr := fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize 5\n", SHA256([]byte("12345")))
	for _, q := range []string{"?blobs=true", "?blobs=1"} {
		sibs, _ := json.Marshal(get("/api/models/org/full" + q)["siblings"])
		want := `[{"blobId":"` + GitBlobSHA1([]byte(`{"model_type":"bert"}`)) + `","rfilename":"config.json","size":21},` +
			`{"blobId":"` + GitBlobSHA1([]byte(ptr)) + `","lfs":{"pointerSize":` + fmt.Sprint(len(ptr)) + `,"sha256":"` + SHA256([]byte("12345")) + `","size":5},"rfilename":"w.bin","size":5},` +
			`{"blobId":"` + GitBlobSHA1([]byte("{}")) + `","rfilename":"z.json","size":2}]`
		if string(sibs) != want {
			t.Errorf("siblings%s:\n%s\nwant\n%s", q, sibs, want)
		}
	}
	if sibs, _ := json.Marshal(get("/api/models/org/full?blobs=false")["siblings"]); strings.Contains(string(sibs), "blobId") {
		t.Errorf("blobs=false: %s", sibs)
	}

	bare := get("/api/models/bare")
	if got := keys(bare); got != "_id,createdAt,disabled,downloads,gated,id,lastModified,likes,modelId,private,sha,siblings,tags" {
		t.Errorf("a legacy repo without library, pipeline tag, config: fields %s", got)
	}
	if bare["gated"] != false || bare["disabled"] != true || bare["lastModified"] != "2024-01-02T03:04:05.000Z" {
		t.Errorf("bare: gated %v disabled %v lastModified %v", bare["gated"], bare["disabled"], bare["lastModified"])
	}
	if s, _ := json.Marshal(bare["siblings"]); string(s) != "[]" {
		t.Errorf("no files: siblings %s, want []", s)
	}

	// expand on model info: _id, id and what was asked for.
	if got := keys(get("/api/models/org/full?expand=downloads&expand[]=likes&expand=downloads")); got != "_id,downloads,id,likes" {
		t.Errorf("expand on info: %s", got)
	}
	if got := keys(get("/api/models/org/full?expand=safetensors")); got != "_id,id" {
		t.Errorf("no safetensors file: %s, want no safetensors field", got)
	}
	if resp, _ := do(t, http.MethodGet, h.URL()+"/api/models/org/full?expand=modelId", nil); resp.StatusCode != 400 {
		t.Errorf("expand=modelId on info: %d, want 400 (not an expandable property)", resp.StatusCode)
	}
	// The listing's default fields.
	resp, body := do(t, http.MethodGet, h.URL()+"/api/models?search=full", nil)
	var page []map[string]any
	if resp.StatusCode != 200 || json.Unmarshal(body, &page) != nil || len(page) != 1 {
		t.Fatalf("listing: %d %s", resp.StatusCode, body)
	}
	if got := keys(page[0]); got != "_id,createdAt,downloads,id,library_name,likes,modelId,pipeline_tag,private,tags,trendingScore" {
		t.Errorf("listing fields: %s", got)
	}
	if page[0]["trendingScore"] != 2.5 {
		t.Errorf("trendingScore %v", page[0]["trendingScore"])
	}
	// Listings name siblings only, even with blobs.
	_, body = do(t, http.MethodGet, h.URL()+"/api/models?search=full&expand=siblings&blobs=true", nil)
	if !strings.Contains(string(body), `"siblings":[{"rfilename":"config.json"},`) || strings.Contains(string(body), "blobId") {
		t.Errorf("listing siblings: %s", body)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestModelInfoRevisionsAndRenames: /revision/{rev} answers for main and
// every commit main has been at (sha is that commit), 404
// RevisionNotFound otherwise; old ids and other letter cases answer 307 to
// the same path and query under the current id.
func TestModelInfoRevisionsAndRenames(t *testing.T) {
	h := New(t, Repo{ID: "org/new", RenamedFrom: []string{"org/old", "legacy-old"}, Files: map[string][]byte{"a.txt": []byte("a")}})
	first := h.SHA("org/new")
	h.SetSHA("org/new", strings.Repeat("b", 40))
	sha := func(path string) (int, string) {
		resp, body := do(t, http.MethodGet, h.URL()+path, nil)
		var m map[string]any
		json.Unmarshal(body, &m)
		s, _ := m["sha"].(string)
		return resp.StatusCode, s
	}
	for path, want := range map[string]string{
		"/api/models/org/new":                                     strings.Repeat("b", 40),
		"/api/models/org/new/revision/main":                       strings.Repeat("b", 40),
		"/api/models/org/new/revision/" + first:                   first,
		"/api/models/org/new/revision/" + strings.Repeat("b", 40): strings.Repeat("b", 40),
	} {
		if status, got := sha(path); status != 200 || got != want {
			t.Errorf("%s: %d sha %q, want %q", path, status, got, want)
		}
	}
	if h.SHA("org/new") != strings.Repeat("b", 40) || h.SHA("org/none") != "" {
		t.Errorf("SHA: %q, %q", h.SHA("org/new"), h.SHA("org/none"))
	}
	resp, body := do(t, http.MethodGet, h.URL()+"/api/models/org/new/revision/v9", nil)
	if resp.StatusCode != 404 || resp.Header.Get("X-Error-Code") != "RevisionNotFound" || !strings.Contains(string(body), "Invalid rev id: v9") {
		t.Errorf("unknown revision: %d %q %s", resp.StatusCode, resp.Header.Get("X-Error-Code"), body)
	}
	for path, loc := range map[string]string{
		"/api/models/org/old":                            "/api/models/org/new",
		"/api/models/legacy-old?expand=sha":              "/api/models/org/new?expand=sha",
		"/api/models/org/old/revision/v1.0":              "/api/models/org/new/revision/v1.0",
		"/api/models/ORG/NEW/revision/refs%2Fpr%2F1?a=b": "/api/models/org/new/revision/refs%2Fpr%2F1?a=b",
		"/org/old/resolve/main/a.txt?download=true":      "/org/new/resolve/main/a.txt?download=true",
		"/api/models/org/old/tree/main/sub":              "/api/models/org/new/tree/main/sub",
		"/api/models/org/old/tree/main":                  "/api/models/org/new/tree/main",
		"/api/models/legacy-old/tree/main":               "/api/models/org/new/tree/main",
	} {
		resp, body := do(t, http.MethodGet, h.URL()+path, nil)
		if resp.StatusCode != 307 || resp.Header.Get("Location") != loc {
			t.Errorf("%s: %d Location %q %s; want 307 to %q", path, resp.StatusCode, resp.Header.Get("Location"), body, loc)
		}
	}
	// An id of three parts is no repo path at all.
	resp, body = do(t, http.MethodGet, h.URL()+"/api/models/org/new/extra", nil)
	if resp.StatusCode != 404 || resp.Header.Get("X-Error-Code") != "" || !strings.Contains(string(body), "can't find the page") {
		t.Errorf("three-part id: %d %q %s", resp.StatusCode, resp.Header.Get("X-Error-Code"), body)
	}
}
