package compare_test

import (
	"math"
	"reflect"
	"testing"

	. "github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compare/comparetest"
)

// The comparison computed whole (comparetest.Compare), by the rule of this
// package, against cases written out by hand.

func TestCompare(t *testing.T) {
	base := []Entry{
		{ID: "org/fixed-big", Downloads: 900, Status: "fail", Signature: "unsupported_op:aten::_fft_r2c"},
		{ID: "org/fixed-small", Downloads: 100, Status: "oom", Signature: ""},
		{ID: "org/broken", Downloads: 500, Status: "pass"},
		{ID: "org/steady", Downloads: 1000, Status: "pass"},
		{ID: "org/still", Downloads: 300, Status: "fail", Signature: "compile_error:x"},
		{ID: "org/was-skipped", Downloads: 50, Status: "skipped"},
		{ID: "org/gone", Downloads: 2000, Status: "pass"},
		{ID: "org/env", Downloads: 40, Status: "pass"},
	}
	head := []Entry{
		{ID: "org/fixed-big", Downloads: 900, Status: "pass"},
		{ID: "org/fixed-small", Downloads: 100, Status: "pass"},
		{ID: "org/broken", Downloads: 500, Status: "crash", Signature: "crash:SIGSEGV"},
		{ID: "org/steady", Downloads: 1000, Status: "pass"},
		{ID: "org/still", Downloads: 300, Status: "fail", Signature: "compile_error:y"},
		{ID: "org/was-skipped", Downloads: 50, Status: "pass"},
		{ID: "org/brand-new", Downloads: 10, Status: "fail", Signature: "unsupported_dtype"},
		{ID: "org/env", Downloads: 40, Status: "error"},
		{ID: "org/brand-new", Downloads: 99, Status: "pass"}, // a repeat: the first wins
	}
	got := comparetest.Compare(base, head)

	want := Result{
		Fixed: []Item{
			{"org/fixed-big", 900, "fail", "pass", "unsupported_op:aten::_fft_r2c"},
			{"org/fixed-small", 100, "oom", "pass", ""},
		},
		Regressed:    []Item{{"org/broken", 500, "pass", "crash", "crash:SIGSEGV"}},
		New:          []Item{{"org/was-skipped", 50, "skipped", "pass", ""}, {"org/brand-new", 10, "untested", "fail", "unsupported_dtype"}},
		StillFailing: []Item{{"org/still", 300, "fail", "fail", "compile_error:y"}},
	}
	for name, pair := range map[string][2][]Item{
		"fixed": {got.Fixed, want.Fixed}, "regressed": {got.Regressed, want.Regressed},
		"new": {got.New, want.New}, "still failing": {got.StillFailing, want.StillFailing},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, pair[0], pair[1])
		}
	}

	h := got.Headline
	wantCounts := map[Kind]int{Fixed: 2, Regressed: 1, New: 2, StillFailing: 1, StillPassing: 1, NoVerdict: 1, NotRetested: 1,
		TrainFixed: 0, TrainRegressed: 0}
	if !reflect.DeepEqual(h.Counts, wantCounts) {
		t.Errorf("counts = %v, want %v", h.Counts, wantCounts)
	}
	// Every model with a verdict on either side: all but none here
	// (org/env passed on base) = 900+100+500+1000+300+50+10+40+2000.
	if h.TotalDownloads != 4900 {
		t.Errorf("total downloads = %d, want 4900", h.TotalDownloads)
	}
	if h.FixedDownloads != 1000 || h.RegressedDownloads != 500 || h.NewDownloads != 60 {
		t.Errorf("downloads fixed %d regressed %d new %d, want 1000, 500, 60", h.FixedDownloads, h.RegressedDownloads, h.NewDownloads)
	}
	if h.FixedShare == nil || math.Abs(*h.FixedShare-1000.0/4900) > 1e-12 {
		t.Errorf("fixed share = %v, want %v", h.FixedShare, 1000.0/4900)
	}
	if h.RegressedShare == nil || math.Abs(*h.RegressedShare-500.0/4900) > 1e-12 {
		t.Errorf("regressed share = %v, want %v", h.RegressedShare, 500.0/4900)
	}
}

func TestCompareEdges(t *testing.T) {
	t.Run("nothing", func(t *testing.T) {
		r := comparetest.Compare(nil, nil)
		if r.Fixed == nil || r.Regressed == nil || r.New == nil || r.StillFailing == nil {
			t.Fatal("lists must be empty, not nil (they marshal as [])")
		}
		if r.Headline.FixedShare != nil || r.Headline.RegressedShare != nil {
			t.Error("shares of zero downloads must be nil")
		}
		if r.TrainFixed == nil || r.TrainRegressed == nil {
			t.Fatal("train lists must be empty, not nil")
		}
		if len(r.Headline.Counts) != 9 {
			t.Errorf("counts %v: want every kind", r.Headline.Counts)
		}
	})
	t.Run("no downloads", func(t *testing.T) {
		r := comparetest.Compare([]Entry{{ID: "a", Status: "fail"}}, []Entry{{ID: "a", Status: "pass"}})
		if len(r.Fixed) != 1 || r.Headline.FixedShare != nil {
			t.Errorf("fixed %v, share %v: want one fix and no share of 0 downloads", r.Fixed, r.Headline.FixedShare)
		}
	})
	t.Run("huge downloads", func(t *testing.T) {
		var base, head []Entry
		for i := 0; i < 10000; i++ {
			id := string(rune('a'+i%26)) + string(rune('0'+i%10)) + string(rune(i))
			base = append(base, Entry{ID: id, Downloads: 1 << 40, Status: "pass"})
			head = append(head, Entry{ID: id, Downloads: 1 << 40, Status: "fail"})
		}
		r := comparetest.Compare(base, head)
		if len(r.Regressed) != 10000 || *r.Headline.RegressedShare != 1 {
			t.Errorf("regressed %d, share %v", len(r.Regressed), *r.Headline.RegressedShare)
		}
	})
	t.Run("ties sort by id", func(t *testing.T) {
		r := comparetest.Compare(nil, []Entry{{ID: "b", Downloads: 5, Status: "pass"}, {ID: "a", Downloads: 5, Status: "pass"}, {ID: "c", Downloads: 7, Status: "pass"}})
		var ids []string
		for _, it := range r.New {
			ids = append(ids, it.ID)
		}
		if !reflect.DeepEqual(ids, []string{"c", "a", "b"}) {
			t.Errorf("order %v, want [c a b]", ids)
		}
	})
}

// Compare lists train changes apart from inference: a model can be in
// both; one with no train verdict on a side is in no train list and no
// train count.
func TestCompareTrain(t *testing.T) {
	base := []Entry{
		{ID: "a/train-broke", Downloads: 50, Status: "pass", Train: "pass"},
		{ID: "a/both-broke", Downloads: 70, Status: "pass", Train: "pass"},
		{ID: "a/train-fixed", Downloads: 30, Status: "pass", Train: "fail", TrainSignature: "train:nan_loss"},
		{ID: "a/old-result", Downloads: 90, Status: "pass"}, // no train verdict on base
		{ID: "a/steady", Downloads: 10, Status: "pass", Train: "pass"},
		{ID: "a/skipped", Downloads: 20, Status: "pass", Train: "skipped"},
	}
	head := []Entry{
		{ID: "a/train-broke", Downloads: 50, Status: "pass", Train: "fail", TrainSignature: "train:backward:aten::x"},
		{ID: "a/both-broke", Downloads: 70, Status: "crash", Signature: "crash:SIGSEGV", Train: "crash", TrainSignature: "crash:SIGSEGV"},
		{ID: "a/train-fixed", Downloads: 30, Status: "pass", Train: "pass"},
		{ID: "a/old-result", Downloads: 90, Status: "pass", Train: "fail", TrainSignature: "train:x"},
		{ID: "a/steady", Downloads: 10, Status: "pass", Train: "pass"},
		{ID: "a/skipped", Downloads: 20, Status: "pass", Train: "fail"},
		{ID: "a/new", Downloads: 5, Status: "pass", Train: "fail"}, // no result on base
	}
	got := comparetest.Compare(base, head)
	wantReg := []Item{
		{"a/both-broke", 70, "pass", "crash", "crash:SIGSEGV"},
		{"a/train-broke", 50, "pass", "fail", "train:backward:aten::x"},
	}
	wantFix := []Item{{"a/train-fixed", 30, "fail", "pass", "train:nan_loss"}}
	if !reflect.DeepEqual(got.TrainRegressed, wantReg) {
		t.Errorf("train regressed:\n got %+v\nwant %+v", got.TrainRegressed, wantReg)
	}
	if !reflect.DeepEqual(got.TrainFixed, wantFix) {
		t.Errorf("train fixed:\n got %+v\nwant %+v", got.TrainFixed, wantFix)
	}
	if c := got.Headline.Counts; c[TrainRegressed] != 2 || c[TrainFixed] != 1 || c[Regressed] != 1 {
		t.Errorf("counts %v: want 2 train regressed, 1 train fixed, 1 regressed", c)
	}
	if h := got.Headline; h.TrainRegressedDownloads != 120 || h.TrainFixedDownloads != 30 {
		t.Errorf("train downloads: regressed %d, fixed %d; want 70+50, 30", h.TrainRegressedDownloads, h.TrainFixedDownloads)
	}
	if len(got.Regressed) != 1 || got.Regressed[0].ID != "a/both-broke" {
		t.Errorf("inference regressed %+v: want a/both-broke alone", got.Regressed)
	}
}
