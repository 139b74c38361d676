package store

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func TestStatusCountIsTheContractsStatuses(t *testing.T) {
	if statusCount != len(compat.Statuses) {
		t.Fatalf("statusCount = %d, compat.Statuses has %d", statusCount, len(compat.Statuses))
	}
}

// TestPairShiftsAddAsRowsWould: models' moves added in pairShifts and
// folded make the same tallies rows as a bump per pair, a status outside
// the contract's words included.
func TestPairShiftsAddAsRowsWould(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	words := append(slices.Clone(compat.Statuses), "flaky")
	var ps pairShifts
	want := map[pairKey]*tally{{1, 2, compat.StatusPass, compat.StatusFail}: {models: 1, downloads: 5}}
	got := map[pairKey]*tally{{1, 2, compat.StatusPass, compat.StatusFail}: {models: 1, downloads: 5}}
	for range 300 {
		statuses := map[int64]compat.Status{}
		for range rng.IntN(7) {
			statuses[int64(1+rng.IntN(9))] = words[rng.IntN(len(words))]
		}
		delta := int64(rng.IntN(21) - 10)
		ids := slices.Sorted(maps.Keys(statuses))
		for i, x := range ids {
			for _, y := range ids[i+1:] {
				bump(want, pairKey{x, y, statuses[x], statuses[y]}, 0, 0).downloads += delta
			}
		}
		ps.add(ids, statuses, delta)
	}
	ps.fold(got)
	for k, v := range want { // a row moved by nothing in all need not be made
		if v.downloads == 0 && v.models == 0 {
			delete(want, k)
		}
	}
	for k, v := range got {
		if v.downloads == 0 && v.models == 0 {
			delete(got, k)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows folded, want %d", len(got), len(want))
	}
	for k, v := range want {
		if g := got[k]; g == nil || *g != *v {
			t.Errorf("row %+v = %+v, want %+v", k, g, v)
		}
	}
	if len(ps.other) == 0 {
		t.Error("no pair had a status outside the contract's words: the test missed that path")
	}
}
