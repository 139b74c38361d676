package hub

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestModelInfoIDs: the model's id is the one the Hub's answer gives, else
// the one of the path it was finally found at (after renames), else the
// one asked for.
func TestModelInfoIDs(t *testing.T) {
	sha := strings.Repeat("a", 40)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/api/models/old/b/"):
			http.Redirect(w, r, "/api/models/new/b/revision/main", http.StatusTemporaryRedirect)
		case strings.HasPrefix(r.URL.Path, "/api/models/with/id/"):
			w.Write([]byte(`{"id":"With/Id","sha":"` + sha + `"}`))
		case strings.HasPrefix(r.URL.Path, "/api/models/gone/"):
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		default:
			w.Write([]byte(`{"sha":"` + sha + `"}`))
		}
	}))
	t.Cleanup(s.Close)
	c, err := New(Options{Endpoint: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ask, id string
		aliases []string
	}{
		{"with/id", "With/Id", []string{"with/id"}},
		{"plain/b", "plain/b", nil},
		{"old/b", "new/b", []string{"old/b"}},
		{"gone/b", "gone/b", nil},
	} {
		mi, err := c.ModelInfo(context.Background(), tt.ask, "")
		if err != nil {
			t.Errorf("%s: %v", tt.ask, err)
			continue
		}
		if mi.ID != tt.id || mi.RequestedID != tt.ask || !slices.Equal(mi.Aliases, tt.aliases) || mi.SHA != sha {
			t.Errorf("%s: ID %q RequestedID %q Aliases %q, want %q %v", tt.ask, mi.ID, mi.RequestedID, mi.Aliases, tt.id, tt.aliases)
		}
	}
}

// TestParseSiblingSizes: a sibling's size is its "size", else its LFS
// pointer's.
func TestParseSiblingSizes(t *testing.T) {
	got, err := parseModels([]byte(`[{"id": "org/a", "siblings": [
		{"rfilename": "a.safetensors", "lfs": {"sha256": "ab", "size": 70}},
		{"rfilename": "b.safetensors", "size": 50, "lfs": {"sha256": "cd", "size": 60}},
		{"rfilename": "config.json", "size": 9, "blobId": "ef"},
		{"rfilename": "vocab.txt"}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Sibling{{"a.safetensors", 70, "ab", ""}, {"b.safetensors", 50, "cd", ""}, {"config.json", 9, "", "ef"}, {"vocab.txt", 0, "", ""}}
	if len(got) != 1 || !slices.Equal(got[0].Siblings, want) {
		t.Errorf("siblings %+v, want %+v", got, want)
	}
}

// TestListModelsOneTagKeepsTheHubsOrder: one task is one listing, in the
// order the Hub sent (ranks move while it pages), not sorted again.
func TestListModelsOneTagKeepsTheHubsOrder(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`[{"id":"org/b","downloads":5},{"id":"org/a","downloads":9},{"id":"org/c","downloads":1}]`))
	}))
	t.Cleanup(s.Close)
	c, err := New(Options{Endpoint: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ListModels(context.Background(), ListOptions{Limit: 3, PipelineTags: []string{"fill-mask", " fill-mask "}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"org/b", "org/a", "org/c"}; !slices.Equal(ids(got), want) {
		t.Errorf("got %v, want the Hub's order %v", ids(got), want)
	}
}
