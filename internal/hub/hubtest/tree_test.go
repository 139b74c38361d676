package hubtest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

type treeEntry struct {
	Type string `json:"type"`
	OID  string `json:"oid"`
	Size int    `json:"size"`
	Path string `json:"path"`
	LFS  *struct {
		OID         string `json:"oid"`
		Size        int    `json:"size"`
		PointerSize int    `json:"pointerSize"`
	} `json:"lfs"`
}

// TestTree: /api/models/{id}/tree/{rev}[/{path}] lists a folder or, with
// recursive=true, everything, in pages linked by the Link header, with
// git blob ids and LFS info as the Hub gives them.
func TestTree(t *testing.T) {
	weights := strings.Repeat("w", 1000)
	h := New(t, Repo{ID: "org/tree-model", Files: map[string][]byte{
		"config.json": []byte(`{"model_type":"bert"}`), "model.safetensors": []byte(weights),
		"1_Pooling/config.json": []byte(`{}`), "a/b/c.json": []byte(`{}`),
	}, LFS: map[string]bool{"model.safetensors": true}})
	sha := h.SHA("org/tree-model")
	list := func(url string) ([]treeEntry, string) {
		resp, body := do(t, http.MethodGet, url, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
		}
		var page []treeEntry
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		next := ""
		if l := resp.Header.Get("Link"); l != "" {
			next = l[strings.Index(l, "<")+1 : strings.Index(l, ">")]
		}
		return page, next
	}
	paths := func(es []treeEntry) string {
		var p []string
		for _, e := range es {
			p = append(p, e.Type[:1]+":"+e.Path)
		}
		return strings.Join(p, " ")
	}

	top, next := list(h.URL() + "/api/models/org/tree-model/tree/main")
	if got := paths(top); got != "d:1_Pooling d:a f:config.json f:model.safetensors" || next != "" {
		t.Errorf("top level: %s (next %q)", got, next)
	}
	for _, e := range top {
		switch e.Path {
		case "model.safetensors":
			if e.LFS == nil || e.LFS.OID != SHA256([]byte(weights)) || e.LFS.Size != 1000 || e.Size != 1000 || e.LFS.PointerSize == 0 {
				t.Errorf("LFS entry %+v", e)
			}
		case "config.json":
			if e.LFS != nil || e.OID != GitBlobSHA1([]byte(`{"model_type":"bert"}`)) {
				t.Errorf("git entry %+v", e)
			}
		}
	}
	sub, _ := list(h.URL() + "/api/models/org/tree-model/tree/" + sha + "/a")
	if got := paths(sub); got != "d:a/b" {
		t.Errorf("folder a: %s", got)
	}

	h.SetPageSize(2)
	var all []treeEntry
	pages := 0
	for url := h.URL() + "/api/models/org/tree-model/tree/" + sha + "?recursive=true&expand=false"; url != ""; pages++ {
		var page []treeEntry
		page, url = list(url)
		all = append(all, page...)
	}
	want := "d:1_Pooling f:1_Pooling/config.json d:a d:a/b f:a/b/c.json f:config.json f:model.safetensors"
	if got := paths(all); got != want || pages != 4 {
		t.Errorf("recursive in %d pages: %s, want %s in 4", pages, got, want)
	}

	for url, status := range map[string]int{
		h.URL() + "/api/models/org/tree-model/tree/" + strings.Repeat("0", 40): http.StatusNotFound,
		h.URL() + "/api/models/org/tree-model/tree/main/nope":                  http.StatusNotFound,
		h.URL() + "/api/models/org/none/tree/main":                             http.StatusUnauthorized,
	} {
		if resp, body := do(t, http.MethodGet, url, nil); resp.StatusCode != status {
			t.Errorf("GET %s: %d %s, want %d", url, resp.StatusCode, body, status)
		}
	}
}
