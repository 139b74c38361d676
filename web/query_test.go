package web

import (
	"slices"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/web/api"
)

// The limits on query input hold at their edges: a q of 200 bytes and a
// limit of 1 are served, one byte more is refused; an empty parameter is
// refused, empty pieces of a repeated one are ignored.
func TestModelQueryEdges(t *testing.T) {
	ts := newTestServer(t, 5, 5, Config{})
	for _, tt := range []struct {
		query  string
		status int
		models int // -1: not checked
	}{
		{"q=" + strings.Repeat("q", 200), 200, 0},
		{"q=" + strings.Repeat("q", 201), 400, -1},
		{"limit=1", 200, 1},
		{"limit=2", 200, 2},
		{"status=", 400, -1}, // empty: refused (the table takes it as any)
	} {
		r := ts.get(t, "/api/v1/models?"+tt.query)
		if r.status != tt.status {
			t.Errorf("%.30s: %d, want %d: %.200s", tt.query, r.status, tt.status, r.body)
			continue
		}
		if tt.models >= 0 {
			if got := len(decode[api.ModelList](t, r).Models); got != tt.models {
				t.Errorf("%.30s: %d models, want %d", tt.query, got, tt.models)
			}
		}
	}
}

func TestModelQueryEmptyPieces(t *testing.T) {
	ts := newTestServer(t, 20, 40, Config{})
	ids := func(query string) []string {
		r := ts.get(t, "/api/v1/models?limit=100&"+query)
		if r.status != 200 {
			t.Fatalf("%s: %d %.200s", query, r.status, r.body)
		}
		var out []string
		for _, m := range decode[api.ModelList](t, r).Models {
			out = append(out, m.ID)
		}
		return out
	}
	want := ids("status=pass,fail")
	if len(want) == 0 || len(want) == len(ids("")) {
		t.Fatalf("status=pass,fail selects %d of %d models: the seed cannot show the filter", len(want), len(ids("")))
	}
	if got := ids("status=pass,,fail&status=,"); !slices.Equal(got, want) {
		t.Errorf("empty pieces: %v, want %v", got, want)
	}
}

// An error quotes what was refused in full up to 80 characters, and cuts a
// longer value at 80 with an ellipsis.
func TestErrorQuotesValueShort(t *testing.T) {
	ts := newTestServer(t, 1, 1, Config{})
	errorOf := func(hint string) string {
		r := ts.get(t, "/api/v1/models?hint="+hint)
		if r.status != 400 {
			t.Fatalf("hint=%s: %d", hint, r.status)
		}
		return decode[map[string]string](t, r)["error"]
	}
	x80 := strings.Repeat("x", 80)
	if e := errorOf(x80); !strings.Contains(e, `"`+x80+`"`) {
		t.Errorf("80 characters: %s", e)
	}
	if e := errorOf(x80 + "ZZ"); !strings.Contains(e, `"`+x80+`…"`) || strings.Contains(e, "Z") {
		t.Errorf("82 characters: %s", e)
	}
}

// If-None-Match: * matches any representation; a list of other tags
// matches none.
func TestIfNoneMatchStarAndOthers(t *testing.T) {
	ts := newTestServer(t, 3, 3, Config{})
	for _, p := range []string{"/api/v1/models?limit=2", "/badge/" + ts.ids[0] + ".svg"} {
		if r := ts.do(t, "GET", p, map[string]string{"If-None-Match": "*"}); r.status != 304 {
			t.Errorf("%s, If-None-Match *: %d", p, r.status)
		}
		if r := ts.do(t, "GET", p, map[string]string{"If-None-Match": `"a", W/"b"`}); r.status != 200 || r.body == "" {
			t.Errorf("%s, other tags: %d", p, r.status)
		}
	}
}

// ?order= reverses the chosen sort: asc is ascending, desc descending,
// whatever the sort's natural direction.
func TestModelQueryOrder(t *testing.T) {
	ts := newTestServer(t, 20, 20, Config{})
	downloads := func(order string) []int64 {
		r := ts.get(t, "/api/v1/models?sort=downloads&limit=100&order="+order)
		if r.status != 200 {
			t.Fatalf("order=%s: %d %.200s", order, r.status, r.body)
		}
		var out []int64
		for _, m := range decode[api.ModelList](t, r).Models {
			out = append(out, m.Downloads)
		}
		return out
	}
	asc, desc := downloads("asc"), downloads("desc")
	if len(asc) != 20 || asc[0] == asc[len(asc)-1] {
		t.Fatalf("the seed cannot show an order: %v", asc)
	}
	if !slices.IsSorted(asc) {
		t.Errorf("order=asc: %v", asc)
	}
	slices.Reverse(desc)
	if !slices.IsSorted(desc) {
		t.Errorf("order=desc, reversed: %v", desc)
	}
}

// An unknown ?sort= is refused with the sorts there are, so that the
// caller can correct it.
func TestModelQueryUnknownSortNamesTheSorts(t *testing.T) {
	ts := newTestServer(t, 1, 1, Config{})
	r := ts.get(t, "/api/v1/models?sort=price")
	e := decode[map[string]string](t, r)["error"]
	if r.status != 400 {
		t.Fatalf("sort=price: %d", r.status)
	}
	for _, name := range []string{"price", "id", "downloads", "status", "tokens_per_s", "tested_at"} {
		if !strings.Contains(e, name) {
			t.Errorf("error %q does not name %s", e, name)
		}
	}
}
