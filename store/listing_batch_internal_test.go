package store

import (
	"slices"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// TestSplitBatchesOnlyWhatTouchesNoOtherModel: of a listing read at once,
// the models whose row changed and that touch no other (listed once, no
// aliases, neither an alias nor named as one) go to the batch, a model
// whose row holds the same already goes nowhere, and every other to the
// rest, in its order. A listing not read at once, or with batches off, is
// all rest.
func TestSplitBatchesOnlyWhatTouchesNoOtherModel(t *testing.T) {
	same := ModelUpsert{ID: "o/same", Downloads: 5}
	sameRow, _ := listedRowOf(same)
	l := &listing{
		rows: map[string]listedRow{"o/same": sameRow, "o/moved": {downloads: 1}, "o/renamed-to": {downloads: 1},
			"o/twice": {downloads: 1}},
		aliases: map[string]bool{"o/old-name": true},
	}
	models := []ModelUpsert{
		same,
		{ID: "o/moved", Downloads: 2},
		{ID: "o/new", Downloads: 3, Tags: []string{"x"}},
		{ID: ""},
		{ID: "o/twice", Downloads: 2}, {ID: "o/twice", Downloads: 3},
		{ID: "o/renamed-to", Aliases: []string{"O/Named"}},
		{ID: "o/named"},    // named as an alias by the listing (in another case)
		{ID: "o/old-name"}, // a stored alias
		{ID: "o/self", Aliases: []string{"o/SELF", ""}}, // its own id in another case is no alias
	}
	batch, rest := l.split(models)
	var ids []string
	for _, b := range batch {
		ids = append(ids, b.m.ID)
		if want := l.rows[b.m.ID]; b.old != want || b.exists != (b.m.ID != "o/new" && b.m.ID != "o/self") {
			t.Errorf("%s: old %+v exists %v; want the stored row %+v", b.m.ID, b.old, b.exists, want)
		}
		if row, _ := listedRowOf(b.m); b.row != row {
			t.Errorf("%s: row %+v, want %+v", b.m.ID, b.row, row)
		}
	}
	if want := []string{"o/moved", "o/new", "o/self"}; !slices.Equal(ids, want) {
		t.Errorf("batch %v, want %v", ids, want)
	}
	var restIDs []string
	for _, m := range rest {
		restIDs = append(restIDs, m.ID)
	}
	if want := []string{"", "o/twice", "o/twice", "o/renamed-to", "o/named", "o/old-name"}; !slices.Equal(restIDs, want) {
		t.Errorf("rest %q, want %q", restIDs, want)
	}

	for name, l := range map[string]*listing{"asked per model": {}, "batches off": l} {
		if name == "batches off" {
			defer setVar(&batchListing, false)()
		}
		if batch, rest := l.split(models); len(batch) > 0 || len(rest) != len(models) {
			t.Errorf("%s: %d batched, %d rest; want all %d rest", name, len(batch), len(rest), len(models))
		}
	}
}

// TestAddRuntimesRefusesWhatSQLNeverLists: statuses on runtimes come as
// "id status train" triples; a triple without its parts, or with an id
// that is not a runtime's (runtimes count from 1), is an error, not a
// status on runtime 0 (which the state keeps for current rows).
func TestAddRuntimesRefusesWhatSQLNeverLists(t *testing.T) {
	st := modelState{runtimes: map[int64]compat.Status{}, trains: map[int64]compat.Status{}}
	if err := st.addRuntimes("1 pass ,2 fail oom"); err != nil {
		t.Fatal(err)
	}
	if st.runtimes[1] != compat.StatusPass || st.runtimes[2] != compat.StatusFail || len(st.trains) != 1 || st.trains[2] != compat.StatusOOM {
		t.Errorf("statuses %v, trains %v", st.runtimes, st.trains)
	}
	for _, bad := range []string{"0 pass ", "-1 pass ", "x pass ", "1 pass", "1", ""} {
		if err := st.addRuntimes(bad); err == nil {
			t.Errorf("addRuntimes(%q): no error", bad)
		}
	}
}
