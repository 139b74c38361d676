package store_test

import (
	"errors"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// TestSorts is the table of the list's orders: the names the site and the
// API accept, in the order shown, and the direction each takes without
// ?order=. TestListModelsFilters and TestListModelsCursorWalk check that
// ListModels really orders rows that way.
func TestSorts(t *testing.T) {
	want := []store.Sort{
		{Name: "downloads", Desc: true},
		{Name: "likes", Desc: true},
		{Name: "status", Desc: false}, // pass first
		{Name: "tokens_per_s", Desc: true},
		{Name: "tested_at", Desc: true}, // newest first
		{Name: "id", Desc: false},
	}
	got := store.Sorts()
	if len(got) != len(want) {
		t.Fatalf("Sorts() = %v; want %v", got, want)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("Sorts()[%d] = %+v; want %+v", i, got[i], w)
		}
		if s, ok := store.LookupSort(w.Name); !ok || s != w {
			t.Errorf("LookupSort(%q) = %+v, %v; want %+v", w.Name, s, ok, w)
		}
	}
	if store.DefaultSort != "downloads" {
		t.Errorf("DefaultSort = %q; want downloads", store.DefaultSort)
	}
	if s, ok := store.LookupSort(""); !ok || s != want[0] {
		t.Errorf(`LookupSort("") = %+v, %v; want the default %+v`, s, ok, want[0])
	}
	s := storetest.MustOpen(t)
	for _, bad := range []string{"stars", "Downloads", "downloads ", "-downloads"} {
		if got, ok := store.LookupSort(bad); ok {
			t.Errorf("LookupSort(%q) = %+v; want unknown", bad, got)
		}
		if _, _, err := s.ListModels(ctx, store.ModelQuery{Sort: bad}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ListModels(sort %q) = %v; want ErrInvalid", bad, err)
		}
	}
}
