package hubtest

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       30 * time.Second, // a fake that never answers fails the test instead of hanging it
}

func do(t *testing.T, method, url string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func repos() []Repo {
	return []Repo{
		{ID: "org/a", Downloads: 30, Likes: 1, PipelineTag: "text-generation", Library: "transformers",
			Files: map[string][]byte{"config.json": []byte(`{"a":1}`), "model.safetensors": []byte("weights-a")},
			LFS:   map[string]bool{"model.safetensors": true}, RenamedFrom: []string{"old-a"}},
		{ID: "org/b", Downloads: 20, Likes: 3, Gated: "manual", Files: map[string][]byte{"config.json": []byte(`{}`)}},
		{ID: "org/c", Downloads: 10, Likes: 2, Private: true},
		{ID: "org/d", Downloads: 5, Disabled: true, Files: map[string][]byte{"config.json": []byte(`{}`)}},
	}
}

func TestListing(t *testing.T) {
	h := New(t, repos()...)
	var all []string
	url := h.URL() + "/api/models?sort=downloads&direction=-1&limit=2&expand[]=sha&expand=gated"
	for url != "" {
		resp, body := do(t, "GET", url, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		var page []map[string]any
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, m := range page {
			all = append(all, m["id"].(string))
			if keys := slices.Sorted(maps.Keys(m)); !slices.Equal(keys, []string{"_id", "gated", "id", "sha"}) {
				t.Errorf("fields %v: want _id, id and the expanded ones", keys)
			}
		}
		url = ""
		if l := resp.Header.Get("Link"); l != "" {
			if !strings.HasPrefix(l, "<"+h.URL()+"/api/models?") || !strings.HasSuffix(l, `>; rel="next"`) {
				t.Fatalf("Link %q", l)
			}
			url = strings.TrimSuffix(strings.TrimPrefix(l, "<"), `>; rel="next"`)
		}
	}
	if !slices.Equal(all, []string{"org/a", "org/b", "org/d"}) {
		t.Fatalf("listed %v (private hidden, sorted by downloads)", all)
	}
	h.SetToken("tok")
	_, body := do(t, "GET", h.URL()+"/api/models?sort=likes", map[string]string{"Authorization": "Bearer tok"})
	var page []map[string]any
	json.Unmarshal(body, &page)
	if len(page) != 4 || page[0]["id"] != "org/b" || page[0]["modelId"] != "org/b" {
		t.Fatalf("default fields / token listing: %s", body)
	}
	resp, body := do(t, "GET", h.URL()+"/api/models?expand[]=_id", nil)
	if resp.StatusCode != 400 || !strings.Contains(string(body), "expand") {
		t.Fatalf("bad expand: %d %s", resp.StatusCode, body)
	}
	_, body = do(t, "GET", h.URL()+"/api/models?pipeline_tag=text-generation&filter=transformers", nil)
	if !strings.Contains(string(body), `"org/a"`) || strings.Contains(string(body), `"org/b"`) {
		t.Fatalf("filters: %s", body)
	}
}

func TestResolve(t *testing.T) {
	h := New(t, repos()...)
	sha := h.SHA("org/a")
	resp, _ := do(t, "HEAD", h.URL()+"/org/a/resolve/main/model.safetensors", nil)
	if resp.StatusCode != 302 || resp.Header.Get("X-Linked-Etag") != `"`+SHA256([]byte("weights-a"))+`"` ||
		resp.Header.Get("X-Linked-Size") != "9" || resp.Header.Get("X-Repo-Commit") != sha ||
		!strings.HasPrefix(resp.Header.Get("Location"), h.CDNURL()+"/lfs/") {
		t.Fatalf("LFS HEAD: %d %v", resp.StatusCode, resp.Header)
	}
	loc := resp.Header.Get("Location")
	resp, body := do(t, "GET", loc, map[string]string{"Range": "bytes=2-"})
	if resp.StatusCode != 206 || string(body) != "ights-a" || resp.Header.Get("Content-Range") != "bytes 2-8/9" {
		t.Fatalf("CDN range: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, _ = do(t, "GET", loc, map[string]string{"Authorization": "Bearer x"})
	if resp.StatusCode != 400 {
		t.Fatalf("CDN with Authorization: %d", resp.StatusCode)
	}
	resp, body = do(t, "GET", h.URL()+"/org/a/resolve/"+sha+"/config.json", nil)
	if resp.StatusCode != 200 || string(body) != `{"a":1}` || resp.Header.Get("ETag") != `"`+GitBlobSHA1([]byte(`{"a":1}`))+`"` {
		t.Fatalf("git file: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, _ = do(t, "GET", h.URL()+"/old-a/resolve/main/config.json", nil)
	if resp.StatusCode != 307 || resp.Header.Get("Location") != "/org/a/resolve/main/config.json" {
		t.Fatalf("rename: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestErrors(t *testing.T) {
	h := New(t, repos()...)
	h.SetToken("granted")
	tests := []struct {
		name, path, token string
		status            int
		code, msg         string
	}{
		{"missing anonymous", "/api/models/org/zzz", "", 401, "", "Invalid username or password."},
		{"private anonymous", "/api/models/org/c", "", 401, "", "Invalid username or password."},
		{"missing with token", "/api/models/org/zzz", "other", 404, "RepoNotFound", "Repository not found"},
		{"gated anonymous", "/org/b/resolve/main/config.json", "", 401, "GatedRepo", "Please log in"},
		{"gated without access", "/org/b/resolve/main/config.json", "other", 403, "GatedRepo", "not in the authorized list"},
		{"disabled", "/org/d/resolve/main/config.json", "", 403, "", "Access to this resource is disabled."},
		{"revision", "/org/a/resolve/nope/config.json", "", 404, "RevisionNotFound", "Invalid rev id: nope"},
		{"entry", "/org/a/resolve/main/nope.json", "", 404, "EntryNotFound", "Entry not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.token != "" {
				hdr["Authorization"] = "Bearer " + tt.token
			}
			resp, _ := do(t, "GET", h.URL()+tt.path, hdr)
			if resp.StatusCode != tt.status || resp.Header.Get("X-Error-Code") != tt.code ||
				!strings.Contains(resp.Header.Get("X-Error-Message"), tt.msg) {
				t.Fatalf("%d %q %q", resp.StatusCode, resp.Header.Get("X-Error-Code"), resp.Header.Get("X-Error-Message"))
			}
			if !strings.HasPrefix(resp.Header.Get("RateLimit"), `"`) || resp.Header.Get("RateLimit-Policy") == "" {
				t.Errorf("no RateLimit headers on an error")
			}
		})
	}
	resp, _ := do(t, "GET", h.URL()+"/org/b/resolve/main/config.json", map[string]string{"Authorization": "Bearer granted"})
	if resp.StatusCode != 200 {
		t.Fatalf("gated with the granted token: %d", resp.StatusCode)
	}
}

func TestRateLimitAndFaults(t *testing.T) {
	h := New(t, repos()...)
	h.SetRateLimit("api", 2, time.Minute)
	for i, want := range []int{200, 200, 429} {
		resp, _ := do(t, "GET", h.URL()+"/api/models/org/a", nil)
		if resp.StatusCode != want {
			t.Fatalf("request %d: %d, want %d", i, resp.StatusCode, want)
		}
		if i == 2 && !strings.Contains(resp.Header.Get("RateLimit"), `"api";r=0;t=`) {
			t.Fatalf("429 RateLimit %q", resp.Header.Get("RateLimit"))
		}
	}
	h.Fault("/org/a/resolve/", Truncate(3))
	h.Fault("/org/a/resolve/", Status5xx(502).Times(2))
	resp, _ := do(t, "HEAD", h.URL()+"/org/a/resolve/main/config.json", nil)
	if resp.StatusCode != 502 {
		t.Fatalf("HEAD passes body faults by, then 502: got %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", h.URL()+"/org/a/resolve/main/config.json", nil)
	r, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err == nil || string(b) != `{"a` {
		t.Fatalf("truncated body %q, err %v", b, err)
	}
	for _, want := range []int{502, 200} {
		if resp, _ := do(t, "GET", h.URL()+"/org/a/resolve/main/config.json", nil); resp.StatusCode != want {
			t.Fatalf("got %d, want %d", resp.StatusCode, want)
		}
	}
	var statuses []int
	for _, r := range h.Requests() {
		statuses = append(statuses, r.Status)
	}
	if !slices.Equal(statuses, []int{200, 200, 429, 502, 200, 502, 200}) {
		t.Fatalf("log statuses %v", statuses)
	}
}
