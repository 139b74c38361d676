package store_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
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
	if listStrategiesAgree(t, s, pairs, compare.Listed) == 0 {
		t.Error("the kept comparisons list nothing")
	}
}

// listStrategiesAgree checks that the three ways of reading each list of
// kinds of each kept comparison give the same pages; it returns how many
// items they read.
func listStrategiesAgree(t *testing.T, s *store.SQLite, pairs [][2]int64, kinds []compare.Kind) int {
	t.Helper()
	listed := 0
	for _, p := range pairs {
		for _, kind := range kinds {
			for _, limit := range []int{1, 3, 1000} {
				var got [3][]compare.Item
				for i, way := range [][2]bool{{true, true}, {true, false}, {false, false}} {
					var err error
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
	return listed
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
	if len(plans) != 9 {
		t.Errorf("%d plans, want 3 ways × (a list, a train list) and the walks of every list (every model, the trained ones, after one)", len(plans))
	}
	for name, plan := range plans {
		joined := strings.Join(plan, "\n")
		gather := strings.HasSuffix(name, "gather")
		if sorts := strings.Contains(joined, "TEMP B-TREE"); sorts != gather {
			t.Errorf("%s: sorts %v:\n%s", name, sorts, joined)
		}
		for _, line := range plan {
			if fullScan(line) && line != "SCAN page" { // the page gathered: limit rows
				t.Errorf("%s: full scan %q:\n%s", name, line, joined)
			}
		}
		if !gather && !strings.Contains(plan[0], "current_downloads") {
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

// trainOn is a result on runtime rt at minute whose inference passes and
// whose train verdict has status train ("" for none: a result from before
// the verdict matrix), with signature sig when given.
func trainOn(rt compat.Runtime, train compat.Status, sig string, minute int) compat.Result {
	r := onRuntime("tpu", rt, compat.StatusPass, minute)
	if train != "" {
		v := compat.Verdict{Status: train}
		if sig != "" {
			v.Signature = compat.Ptr(sig)
		}
		r.Modes = map[string]compat.Verdict{compat.ModeTrain: v}
	}
	return r
}

// A comparison lists the train verdict's changes apart from inference,
// by the feed's rule: pass → fail is a train regression (and the feed's
// train_regression), fail → pass a train fix; a model with no train verdict
// on one side, or an error or a skip, is in no train list and no count.
// Read from a kept comparison (the newest two) and a walked one (oldest →
// newest), whole and in pages of one.
func TestCompareTrainLists(t *testing.T) {
	s := storetest.MustOpen(t)
	rtMid := rtNew
	rtMid.TorchTPU = "0.1.5"
	upsert(t, s, "a/broke", "a/fixed", "a/no-old-verdict", "a/no-new-verdict", "a/errored", "a/skipped", "a/steady", "a/broke-small")
	downloads := map[string]int64{"a/broke": 900, "a/fixed": 800, "a/no-old-verdict": 700, "a/no-new-verdict": 600,
		"a/errored": 500, "a/skipped": 400, "a/steady": 300, "a/broke-small": 100}
	var ups []store.ModelUpsert
	for id, d := range downloads {
		ups = append(ups, store.ModelUpsert{ID: id, Downloads: d})
	}
	if err := s.UpsertModels(ctx, ups); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id       string
		old, new compat.Status
	}{
		{"a/broke", "pass", "fail"},
		{"a/fixed", "oom", "pass"},
		{"a/no-old-verdict", "", "fail"},
		{"a/no-new-verdict", "pass", ""},
		{"a/errored", "pass", "error"},
		{"a/skipped", "skipped", "fail"},
		{"a/steady", "pass", "pass"},
		{"a/broke-small", "pass", "crash"},
	} {
		record(t, s, c.id, trainOn(rtOld, c.old, "old:"+c.id, 1))
		record(t, s, c.id, trainOn(rtMid, c.old, "old:"+c.id, 2))
		out := record(t, s, c.id, trainOn(rtNew, c.new, "new:"+c.id, 3))
		// The feed's train event on the same target (its rule and ours
		// are one): a regression for broke, a fix for fixed, none else.
		var feed compat.EventKind
		if out.TrainEvent != nil {
			feed = out.TrainEvent.Kind
		}
		want := map[string]compat.EventKind{"a/broke": compat.EventTrainRegression, "a/broke-small": compat.EventTrainRegression,
			"a/fixed": compat.EventTrainFix}[c.id]
		if feed != want {
			t.Errorf("%s: the feed's train event %q, want %q", c.id, feed, want)
		}
	}
	wantReg := []compare.Item{
		{ID: "a/broke", Downloads: 900, BaseStatus: "pass", HeadStatus: "fail", Signature: "new:a/broke"},
		{ID: "a/broke-small", Downloads: 100, BaseStatus: "pass", HeadStatus: "crash", Signature: "new:a/broke-small"},
	}
	wantFix := []compare.Item{{ID: "a/fixed", Downloads: 800, BaseStatus: "oom", HeadStatus: "pass", Signature: "old:a/fixed"}}
	pairs, err := s.KeptPairs(ctx)
	if err != nil || len(pairs) != 2 {
		t.Fatalf("kept comparisons %v, %v; want old → mid, mid → new", pairs, err)
	}
	for _, base := range []compat.Runtime{rtMid, rtOld} { // kept, then walked
		q := store.CompareQuery{Base: base.Ref("tpu"), Head: rtNew.Ref("tpu")}
		p, err := s.Compare(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p.TrainRegressed, wantReg) || !reflect.DeepEqual(p.TrainFixed, wantFix) {
			t.Errorf("from %s: train regressed %+v, fixed %+v; want %+v, %+v", base.TorchTPU, p.TrainRegressed, p.TrainFixed, wantReg, wantFix)
		}
		if c := p.Headline.Counts; c[compare.TrainRegressed] != 2 || c[compare.TrainFixed] != 1 {
			t.Errorf("from %s: counts %v, want 2 train regressed, 1 train fixed", base.TorchTPU, c)
		}
		if len(p.Regressed)+len(p.Fixed) != 0 || p.Headline.Counts[compare.StillPassing] != 8 {
			t.Errorf("from %s: inference changed: %+v", base.TorchTPU, p.Headline.Counts)
		}
		// In pages of one: the first train regression, its cursor, the
		// second, no cursor; the train fix's page has no cursor.
		q.Limit = 1
		first, err := s.Compare(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(first.TrainRegressed) != 1 || first.TrainRegressed[0].ID != "a/broke" || first.Next[compare.TrainRegressed] == "" ||
			first.Next[compare.TrainFixed] != "" {
			t.Fatalf("from %s, pages of 1: %+v, next %v", base.TorchTPU, first.TrainRegressed, first.Next)
		}
		q.Cursor = first.Next[compare.TrainRegressed]
		second, err := s.Compare(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(second.TrainRegressed) != 1 || second.TrainRegressed[0].ID != "a/broke-small" || second.Next[compare.TrainRegressed] != "" ||
			len(second.TrainFixed) != 0 {
			t.Errorf("from %s, second page: %+v %+v, next %v", base.TorchTPU, second.TrainRegressed, second.TrainFixed, second.Next)
		}
	}
	// A rerun moves a model out of the kept train list and into the other.
	record(t, s, "a/broke", trainOn(rtNew, "pass", "", 4))
	record(t, s, "a/steady", trainOn(rtNew, "timeout", "", 4))
	p, err := s.Compare(ctx, store.CompareQuery{Base: rtMid.Ref("tpu"), Head: rtNew.Ref("tpu")})
	if err != nil {
		t.Fatal(err)
	}
	if ids := []string{}; len(p.TrainRegressed) != 2 || p.TrainRegressed[0].ID != "a/steady" || p.TrainRegressed[1].ID != "a/broke-small" {
		for _, it := range p.TrainRegressed {
			ids = append(ids, it.ID)
		}
		t.Errorf("after reruns: train regressed %v, want a/steady, a/broke-small", ids)
	}
}

// The three ways of reading a list agree on the train lists too, on the
// equivalence workload's database (which has train verdicts).
func TestTrainListStrategiesAgree(t *testing.T) {
	path := t.TempDir() + "/scanner.db"
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runEquivWorkload(t, s, path, false)
	pairs, err := s.KeptPairs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if listStrategiesAgree(t, s, pairs, compare.TrainListed) == 0 {
		t.Error("the kept comparisons list no train change")
	}
}

// ComparePages reads the same pages as Compare, for every pair of
// runtimes on a target (kept or not), every page size, some lists or all,
// a first page or a cursor's; the kept comparisons' long lists in one walk.
func TestComparePagesAreCompares(t *testing.T) {
	s, err := store.Open(ctx, storetest.Unpack(t, equivFixtureDB))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rts, err := s.Runtimes(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	walked, items := 0, 0
	for _, limit := range []int{1, 3, 1000} {
		for _, lists := range [][]compare.Kind{nil, {compare.Regressed, compare.Fixed, compare.New}} {
			var qs []store.CompareQuery
			for _, b := range rts {
				for _, h := range rts {
					if b.Ref != h.Ref && b.Ref.Target == h.Ref.Target {
						qs = append(qs, store.CompareQuery{Base: b.Ref, Head: h.Ref, Limit: limit, Lists: lists})
					}
				}
			}
			var nexts []store.CompareQuery
			for _, q := range qs {
				p, err := s.Compare(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range p.Next { // and the next page of each list that has one
					if c != "" {
						next := q
						next.Cursor = c
						nexts = append(nexts, next)
					}
				}
			}
			qs = append(qs, nexts...)
			var want []store.ComparePage
			for _, q := range qs {
				p, err := s.Compare(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, p)
			}
			got, n, err := s.ComparePagesWalked(ctx, qs)
			if err != nil {
				t.Fatal(err)
			}
			walked += n
			if len(got) != len(qs) {
				t.Fatalf("%d pages for %d queries", len(got), len(qs))
			}
			for i := range qs {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("%+v:\n got %+v\nwant %+v", qs[i], got[i], want[i])
				}
				for _, k := range compare.Listed {
					items += len(listOf(got[i].Result, k))
				}
			}
		}
	}
	if walked == 0 || items == 0 {
		t.Errorf("%d lists read in the one walk, %d items in all: the test reads nothing it means to", walked, items)
	}
}
