package web

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// pageRoutes are the routes that serve HTML or assets, not API: they are
// not in the OpenAPI document.
var pageRoutes = map[string]bool{"/": true, "/methodology": true, "/models/*": true, "/static/:name": true,
	"/runtimes": true, "/compare": true, "/requests": true, "/requests/:id": true, "/ops": true}

// docPaths maps a fiber route to the OpenAPI paths it serves.
func docPaths(route string) []string {
	switch route {
	case "/badge/*":
		return []string{"/badge/{id}.svg", "/badge/{id}.json"}
	case "/api/v1/models/*":
		return []string{"/api/v1/models/{id}"}
	}
	return []string{regexp.MustCompile(`:(\w+)`).ReplaceAllString(route, "{$1}")}
}

// noDesk is a RequestDesk that knows no request.
type noDesk struct{}

func (noDesk) Ask(context.Context, string) (store.TestRequest, bool, error) {
	return store.TestRequest{}, false, store.ErrNotFound
}
func (noDesk) Get(context.Context, int64) (store.TestRequest, error) {
	return store.TestRequest{}, store.ErrNotFound
}
func (noDesk) Open(context.Context, string) (store.TestRequest, error) {
	return store.TestRequest{}, store.ErrNotFound
}

func TestOpenAPIMatchesRoutes(t *testing.T) {
	for _, withScans := range []bool{true, false} {
		cfg := Config{Store: storetest.MustOpen(t), Logger: discard}
		if withScans {
			cfg.Scans = &fakeScans{}
			cfg.Work, cfg.WorkerToken = &fakeWork{}, "wt" // the worker protocol's routes too
			cfg.Requests = noDesk{}                       // and the test requests
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ts := &testServer{Server: s}
		r := ts.get(t, "/api/v1/openapi.json")
		var doc struct {
			OpenAPI string                                `json:"openapi"`
			Paths   map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal([]byte(r.body), &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.") {
			t.Fatalf("not an OpenAPI 3 document: %v", err)
		}

		fromRoutes := map[string]bool{}
		for _, rt := range s.app.GetRoutes(true) {
			if rt.Method != "GET" && rt.Method != "POST" || pageRoutes[rt.Path] {
				continue
			}
			for _, p := range docPaths(rt.Path) {
				key := strings.ToLower(rt.Method) + " " + p
				fromRoutes[key] = true
				if _, ok := doc.Paths[p][strings.ToLower(rt.Method)]; !ok {
					t.Errorf("scans=%v: route %s %s is not in openapi.json (as %s)", withScans, rt.Method, rt.Path, p)
				}
			}
		}
		var documented []string
		for p, ops := range doc.Paths {
			for method := range ops {
				key := method + " " + p
				documented = append(documented, key)
				if !fromRoutes[key] {
					t.Errorf("scans=%v: openapi.json documents %s, which no route serves", withScans, key)
				}
			}
		}
		sort.Strings(documented)
		if len(documented) < 14 {
			t.Errorf("only %d operations documented: %v", len(documented), documented)
		}
	}
}

// documentedEnum is the enum the OpenAPI document gives the parameter name
// of GET path.
func documentedEnum(t *testing.T, path, name string) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string `json:"name"`
				Schema struct {
					Enum []string `json:"enum"`
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range doc.Paths[path]["get"].Parameters {
		if p.Name == name {
			return p.Schema.Enum
		}
	}
	return nil
}

// TestOpenAPISorts: the documented ?sort= values are the store's (store/sort.go).
func TestOpenAPISorts(t *testing.T) {
	enum := documentedEnum(t, "/api/v1/models", "sort")
	if want := httpx.SortNames(); len(enum) == 0 || !slices.Equal(enum, want) {
		t.Errorf("openapi.json: /api/v1/models sort enum %v; want the store's %v", enum, want)
	}
}

// TestOpenAPICursors: the documented forms of the cursors are the store's
// (store.CursorPattern, store.CompareCursorPattern), which reads every
// value of them as a position (issue 37: schemathesis' well-formed
// cursors were refused).
func TestOpenAPICursors(t *testing.T) {
	doc := docParams(t)
	for path, want := range map[string]string{"/api/v1/models": store.CursorPattern, "/api/v1/compare": store.CompareCursorPattern} {
		got := ""
		for _, p := range doc[path]["get"] {
			if p.Name == "cursor" {
				got = p.Schema.Pattern
			}
		}
		if got != want {
			t.Errorf("%s: cursor pattern %q; want the store's %q", path, got, want)
		}
	}
}

// TestSpaceRanges: the class of paddedPattern is exactly the runes
// strings.TrimSpace trims.
func TestSpaceRanges(t *testing.T) {
	in := func(r rune) bool {
		for _, s := range httpx.SpaceRanges {
			if r >= s[0] && r <= s[1] {
				return true
			}
		}
		return false
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if in(r) != unicode.IsSpace(r) {
			t.Errorf("U+%04X: in the class %v, unicode.IsSpace %v", r, in(r), unicode.IsSpace(r))
		}
	}
}

// TestOpenAPIExactPatterns: the free-text parameters exactParams checks
// (q, table, op of the API and the feeds; the CSV exports take any) state its rule as paddedPattern, and runtime keys as
// compat.RuntimeKeyPattern (issue 37: schemathesis sent values the old
// patterns allowed and the server refused).
func TestOpenAPIExactPatterns(t *testing.T) {
	doc := docParams(t)
	n := map[string]int{}
	for path, ops := range doc {
		for method, params := range ops {
			for _, p := range params {
				switch {
				case path == "/export.csv" || path == "/ops.csv": // no exactParams: empty is any, spaces trimmed
				case p.Name == "q" || p.Name == "table" || p.Name == "op":
					n["padded"]++
					if p.Schema.Pattern != httpx.PaddedPattern {
						t.Errorf("%s %s ?%s: pattern %q; want %q", method, path, p.Name, p.Schema.Pattern, httpx.PaddedPattern)
					}
				case p.Name == "base" || p.Name == "head":
					n["key"]++
					if p.Schema.Pattern != compat.RuntimeKeyPattern {
						t.Errorf("%s %s ?%s: pattern %q; want %q", method, path, p.Name, p.Schema.Pattern, compat.RuntimeKeyPattern)
					}
				}
			}
		}
	}
	if n["padded"] < 3 || n["key"] < 2 {
		t.Errorf("checked %v; want q, table, op, base and head", n)
	}
}

// docParam is a parameter of the OpenAPI document, as the tests read it.
type docParam struct {
	Name   string `json:"name"`
	Schema struct {
		Pattern string `json:"pattern"`
	} `json:"schema"`
}

// docParams are the document's parameters by path and method.
func docParams(t *testing.T) map[string]map[string][]docParam {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []docParam `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string][]docParam{}
	for path, ops := range doc.Paths {
		out[path] = map[string][]docParam{}
		for method, op := range ops {
			out[path][method] = op.Parameters
		}
	}
	return out
}
