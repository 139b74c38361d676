package store_test

import (
	"reflect"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// The scanner's own failures (error) are never held against a model: the
// tallies leave them out of pass rates, failure groups and comparisons'
// fixes and regressions. Written out by hand: a (1000 downloads), b (800),
// c (600), d (400); on 0.1.0 a pass, b fail, c error, d pass; on 0.2.0
// (newer) a pass, b error, c pass, d error.
func TestErrorResultsCountNowhere(t *testing.T) {
	s := storetest.MustOpen(t)
	if err := s.UpsertModels(ctx, []store.ModelUpsert{{ID: "o/a", Downloads: 1000}, {ID: "o/b", Downloads: 800},
		{ID: "o/c", Downloads: 600}, {ID: "o/d", Downloads: 400}}); err != nil {
		t.Fatal(err)
	}
	for i, rt := range []compat.Runtime{rtOld, rtNew} {
		for id, st := range map[string][2]compat.Status{"o/a": {"pass", "pass"}, "o/b": {"fail", "error"},
			"o/c": {"error", "pass"}, "o/d": {"pass", "error"}} {
			r := onRuntime("tpu", rt, st[i], 10*i)
			if st[i] == "fail" {
				r.Signature = compat.Ptr("unsupported_op:aten::x")
			}
			record(t, s, id, r)
		}
	}
	sum, err := s.Summary(ctx, "tpu")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Tested != 2 || sum.Counts["pass"] != 2 || sum.Counts["error"] != 2 || *sum.PassRate != 1 || *sum.WeightedPassRate != 1 {
		t.Errorf("summary: tested %d, counts %v, rates %v %v; want 2 tested (a, c), both passing", sum.Tested, sum.Counts,
			*sum.PassRate, *sum.WeightedPassRate)
	}
	if fs, err := s.Failures(ctx, "tpu", 10); err != nil || len(fs) != 0 {
		t.Errorf("failures %+v, %v; want none (b's newest is error)", fs, err)
	}
	rts, err := s.Runtimes(ctx, "tpu")
	if err != nil || len(rts) != 2 {
		t.Fatalf("runtimes %+v, %v", rts, err)
	}
	if r := rts[1]; r.Models != 4 || r.Tested != 3 || r.Passed != 2 || *r.WeightedPassRate != 1400.0/2200 {
		t.Errorf("0.1.0: %d models, %d tested, %d passed, weighted %v; want 4, 3 (a b d), 2, 1400/2200", r.Models, r.Tested, r.Passed, *r.WeightedPassRate)
	}
	if r := rts[0]; r.Models != 4 || r.Tested != 2 || r.Passed != 2 || *r.PassRate != 1 {
		t.Errorf("0.2.0: %d models, %d tested, %d passed; want 4, 2 (a c), 2", r.Models, r.Tested, r.Passed)
	}
	page, err := s.Compare(ctx, store.CompareQuery{Base: rtOld.Ref("tpu"), Head: rtNew.Ref("tpu")})
	if err != nil {
		t.Fatal(err)
	}
	h := page.Headline
	wantCounts := map[compare.Kind]int{compare.Fixed: 0, compare.Regressed: 0, compare.New: 1, compare.StillFailing: 0,
		compare.StillPassing: 1, compare.NoVerdict: 2, compare.NotRetested: 0, compare.TrainFixed: 0, compare.TrainRegressed: 0}
	if !reflect.DeepEqual(h.Counts, wantCounts) || h.TotalDownloads != 2800 || h.NewDownloads != 600 || *h.FixedShare != 0 {
		t.Errorf("0.1.0 → 0.2.0: counts %v, total %d, new %d; want %v, 2800, 600", h.Counts, h.TotalDownloads, h.NewDownloads, wantCounts)
	}
	if len(page.Fixed)+len(page.Regressed) != 0 || len(page.New) != 1 || page.New[0].ID != "o/c" {
		t.Errorf("lists: fixed %v regressed %v new %v; want only c new", page.Fixed, page.Regressed, page.New)
	}
}
