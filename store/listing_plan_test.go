package store_test

import (
	"math/rand/v2"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// TestAListingPlannedBeforeAWriteIsPlannedAgain: a scan's listing reads
// what it needs before it takes the write lock. Writes that land in
// between (another model's downloads, a result that moves a model's
// status) are not lost in its tallies: it plans again, and every answer
// still equals a recomputation.
func TestAListingPlannedBeforeAWriteIsPlannedAgain(t *testing.T) {
	s, path := openInMode(t, listingModes[2])
	runEquivWorkload(t, s, path, false)
	listing, err := storetest.Listing(ctx, s)
	if err != nil || len(listing) < 10 {
		t.Fatalf("listing: %d models, %v", len(listing), err)
	}
	for i := range listing {
		listing[i].Downloads += 100
	}
	planned := 0
	t.Cleanup(store.SetPlannedEarly(func() {
		planned++
		if planned > 1 { // the first plan only
			return
		}
		between := listing[3] // an upsert too small to be planned early
		between.Downloads += 7
		if err := s.UpsertModels(ctx, []store.ModelUpsert{between}); err != nil {
			t.Error(err)
		}
		r := equivResult(rand.New(rand.NewPCG(1, 2)), 1, 5000)
		if _, err := s.RecordResult(ctx, listing[5].ID, r); err != nil {
			t.Error(err)
		}
	}))
	again := 0
	t.Cleanup(store.SetPlannedAgain(func() { again++ }))
	if err := s.UpsertModels(ctx, listing); err != nil {
		t.Fatal(err)
	}
	if planned == 0 {
		t.Fatal("the listing was not planned early: nothing was written in between")
	}
	if again != 1 {
		t.Errorf("planned again %d times, want once", again)
	}
	checkEquiv(t, s, path)

	// Nothing written in between: the early plan is the one written.
	for i := range listing {
		listing[i].Downloads += 100
	}
	if err := s.UpsertModels(ctx, listing); err != nil {
		t.Fatal(err)
	}
	if planned != 2 || again != 1 {
		t.Errorf("a listing with no write in between: planned early %d more times, again %d more; want 1 and 0", planned-1, again-1)
	}
	checkEquiv(t, s, path)
}
