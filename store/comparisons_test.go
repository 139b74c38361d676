package store_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// The three ways of reading a list's page (a kept list's rows sorted, a
// walk of the models keeping a kept list's, a walk classifying each
// model) give the same pages, whatever the page size.
func TestListStrategiesAgree(t *testing.T) {
	s, err := store.Open(ctx, storetest.Unpack(t, equivFixtureDB))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pairs, err := s.KeptPairs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 4 { // 4 tpu runtimes, 2 cpu, 1 cuda: 3 + 1 pairs
		t.Fatalf("%d kept comparisons, want 4: %v", len(pairs), pairs)
	}
	listed := 0
	for _, p := range pairs {
		for _, kind := range compare.Listed {
			for _, limit := range []int{1, 3, 1000} {
				var got [3][]compare.Item
				for i, way := range [][2]bool{{true, true}, {true, false}, {false, false}} {
					if got[i], err = s.ListAll(ctx, p, kind, way[0], way[1], limit); err != nil {
						t.Fatal(err)
					}
				}
				if !reflect.DeepEqual(got[0], got[1]) || !reflect.DeepEqual(got[0], got[2]) {
					t.Errorf("%v %s, pages of %d:\n gathered %v\n walked (kept) %v\n walked %v", p, kind, limit, got[0], got[1], got[2])
				}
				listed += len(got[0])
			}
		}
	}
	if listed == 0 {
		t.Error("the kept comparisons list nothing")
	}
}

// A walk reads the models most downloaded first from an index and stops
// after a page; only the gathering of a short kept list sorts.
func TestCompareListPlans(t *testing.T) {
	s := storetest.MustOpen(t)
	storetest.MustSeed(t, s, 100, 300)
	plans, err := s.ExplainCompareLists(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, plan := range plans {
		joined := strings.Join(plan, "\n")
		if sorts := strings.Contains(joined, "TEMP B-TREE"); sorts != (name == "gather") {
			t.Errorf("%s: sorts %v:\n%s", name, sorts, joined)
		}
		for _, line := range plan {
			if fullScan(line) && line != "SCAN page" { // the page gathered: limit rows
				t.Errorf("%s: full scan %q:\n%s", name, line, joined)
			}
		}
		if name != "gather" && !strings.Contains(plan[0], "current_downloads") {
			t.Errorf("%s: does not walk the downloads index first:\n%s", name, joined)
		}
	}
}

// A comparison read for some lists leaves the others empty, without
// cursors, and counts them all the same.
func TestCompareSomeLists(t *testing.T) {
	s, err := store.Open(ctx, storetest.Unpack(t, equivFixtureDB))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rts, err := s.Runtimes(ctx, "tpu")
	if err != nil || len(rts) < 2 {
		t.Fatalf("runtimes %v, %v", rts, err)
	}
	q := store.CompareQuery{Base: rts[1].Ref, Head: rts[0].Ref, Limit: 1}
	all, err := s.Compare(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	q.Lists = []compare.Kind{compare.New, compare.Fixed}
	some, err := s.Compare(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(some.Headline, all.Headline) {
		t.Errorf("headline %+v, want %+v", some.Headline, all.Headline)
	}
	for _, k := range compare.Listed {
		asked := k == compare.New || k == compare.Fixed
		if got, want := len(listOf(some.Result, k)), len(listOf(all.Result, k)); (asked && got != want) || (!asked && got != 0) {
			t.Errorf("%s: %d items, want %d", k, got, map[bool]int{true: want}[asked])
		}
		if (asked && some.Next[k] != all.Next[k]) || (!asked && some.Next[k] != "") {
			t.Errorf("%s: cursor %q", k, some.Next[k])
		}
	}
	if all.Headline.Counts[compare.Regressed] == 0 || all.Headline.Counts[compare.New]+all.Headline.Counts[compare.Fixed] == 0 {
		t.Errorf("the fixture's newest comparison should have lists: %v", all.Headline.Counts)
	}
}
