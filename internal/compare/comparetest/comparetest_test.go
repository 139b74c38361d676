package comparetest

import (
	"reflect"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
)

// TestCompare: a comparison of two small runtimes, each model's place,
// list item, count and downloads written out by hand from the kinds'
// definitions (internal/compare's doc), not from Compare's code.
func TestCompare(t *testing.T) {
	base := []compare.Entry{
		{ID: "a", Downloads: 1, Status: "fail", Signature: "s-a", Train: "fail", TrainSignature: "t-a"},
		{ID: "a2", Downloads: 2, Status: "oom", Signature: "s-a2"},
		{ID: "a3", Downloads: 3, Status: "timeout", Signature: "s-a3"},
		{ID: "b", Downloads: 4, Status: "pass", Train: "pass"},
		{ID: "b", Downloads: 999, Status: "fail"}, // a repeat: the first wins
		{ID: "d", Downloads: 5, Status: "crash", Signature: "old-d"},
		{ID: "e", Downloads: 6, Status: "pass", Train: "pass", TrainSignature: "old-t-e"},
		{ID: "f", Downloads: 70, Status: "pass"}, // not on head: its downloads are base's
		{ID: "g", Downloads: 8, Status: "pass", Train: "pass"},
		{ID: "i", Downloads: 9, Status: "skipped"},
		{ID: "j", Downloads: 10, Status: "pass", Train: "crash", TrainSignature: "t-j"},
	}
	head := []compare.Entry{
		{ID: "a2", Downloads: 100, Status: "pass"},
		{ID: "a", Downloads: 100, Status: "pass", Train: "pass"},
		{ID: "b", Downloads: 50, Status: "oom", Signature: "s-b"},
		{ID: "c", Downloads: 50, Status: "fail", Signature: "s-c", Train: "fail"},
		{ID: "c", Downloads: 5000, Status: "pass"}, // a repeat: the first wins
		{ID: "d", Downloads: 200, Status: "timeout", Signature: "s-d", Train: "fail"},
		{ID: "e", Downloads: 1000, Status: "pass", Train: "crash", TrainSignature: "t-e"},
		{ID: "g", Downloads: 5, Status: "error", Train: "error"},
		{ID: "i", Downloads: 7, Status: "error"},
		{ID: "a3", Downloads: 300, Status: "pass", Signature: "head-a3"},
		{ID: "j", Downloads: 20, Status: "pass", Train: "pass"},
	}
	got := Compare(base, head)

	// Most downloaded first, then by id; downloads are head's; a fix
	// carries base's signature, anything else head's; no base result is
	// untested.
	wantFixed := []compare.Item{
		{ID: "a3", Downloads: 300, BaseStatus: "timeout", HeadStatus: "pass", Signature: "s-a3"},
		{ID: "a", Downloads: 100, BaseStatus: "fail", HeadStatus: "pass", Signature: "s-a"},
		{ID: "a2", Downloads: 100, BaseStatus: "oom", HeadStatus: "pass", Signature: "s-a2"},
	}
	wantRegressed := []compare.Item{{ID: "b", Downloads: 50, BaseStatus: "pass", HeadStatus: "oom", Signature: "s-b"}}
	wantNew := []compare.Item{{ID: "c", Downloads: 50, BaseStatus: "untested", HeadStatus: "fail", Signature: "s-c"}}
	wantStill := []compare.Item{{ID: "d", Downloads: 200, BaseStatus: "crash", HeadStatus: "timeout", Signature: "s-d"}}
	// Train lists: only models with a train verdict on both runtimes (a,
	// e, g, j); their statuses and signatures are the train verdicts'.
	wantTrainFixed := []compare.Item{
		{ID: "a", Downloads: 100, BaseStatus: "fail", HeadStatus: "pass", Signature: "t-a"},
		{ID: "j", Downloads: 20, BaseStatus: "crash", HeadStatus: "pass", Signature: "t-j"},
	}
	wantTrainRegressed := []compare.Item{{ID: "e", Downloads: 1000, BaseStatus: "pass", HeadStatus: "crash", Signature: "t-e"}}
	for _, c := range []struct {
		name      string
		got, want []compare.Item
	}{
		{"fixed", got.Fixed, wantFixed},
		{"regressed", got.Regressed, wantRegressed},
		{"new", got.New, wantNew},
		{"still failing", got.StillFailing, wantStill},
		{"train fixed", got.TrainFixed, wantTrainFixed},
		{"train regressed", got.TrainRegressed, wantTrainRegressed},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, c.got, c.want)
		}
	}

	h := got.Headline
	wantCounts := map[compare.Kind]int{
		compare.Fixed: 3, compare.Regressed: 1, compare.New: 1, compare.StillFailing: 1,
		compare.StillPassing:   2, // e, j (pass on both)
		compare.NoVerdict:      2, // g (pass → error), i (skipped → error)
		compare.NotRetested:    1, // f
		compare.TrainFixed:     2, // a, j
		compare.TrainRegressed: 1, // e
	}
	if !reflect.DeepEqual(h.Counts, wantCounts) {
		t.Errorf("counts %v, want %v", h.Counts, wantCounts)
	}
	// Fixed a3, a, a2; regressed b; new c.
	if h.FixedDownloads != 500 || h.RegressedDownloads != 50 || h.NewDownloads != 50 {
		t.Errorf("downloads fixed %d regressed %d new %d, want 500, 50, 50", h.FixedDownloads, h.RegressedDownloads, h.NewDownloads)
	}
	// Every model with a verdict on either runtime: all but i (skipped,
	// then error); f's are base's (70), g's head's (5).
	if total := int64(300 + 100 + 100 + 50 + 50 + 200 + 1000 + 70 + 5 + 20); h.TotalDownloads != total {
		t.Errorf("total downloads %d, want %d", h.TotalDownloads, total)
	}
	if h.TrainFixedDownloads != 120 || h.TrainRegressedDownloads != 1000 {
		t.Errorf("train downloads fixed %d regressed %d, want 120, 1000", h.TrainFixedDownloads, h.TrainRegressedDownloads)
	}
	if h.FixedShare == nil || *h.FixedShare != 500.0/1895 || h.RegressedShare == nil || *h.RegressedShare != 50.0/1895 {
		t.Errorf("shares %v %v, want %v %v", h.FixedShare, h.RegressedShare, 500.0/1895, 50.0/1895)
	}
}

// TestCompareEmpty: nothing on either runtime is empty lists, not nil,
// every kind counted 0, and no shares (no downloads to share).
func TestCompareEmpty(t *testing.T) {
	got := Compare(nil, nil)
	for name, l := range map[string][]compare.Item{"fixed": got.Fixed, "regressed": got.Regressed, "new": got.New,
		"still failing": got.StillFailing, "train fixed": got.TrainFixed, "train regressed": got.TrainRegressed} {
		if l == nil || len(l) != 0 {
			t.Errorf("%s: %#v, want an empty list", name, l)
		}
	}
	if len(got.Headline.Counts) != 9 {
		t.Errorf("counts %v, want the 9 kinds", got.Headline.Counts)
	}
	for k, n := range got.Headline.Counts {
		if n != 0 {
			t.Errorf("count %s = %d", k, n)
		}
	}
	if got.Headline.FixedShare != nil || got.Headline.RegressedShare != nil {
		t.Errorf("shares %v %v, want none", got.Headline.FixedShare, got.Headline.RegressedShare)
	}
}

// TestCompareOneSide: a runtime alone. Only base: every model not
// retested, downloads base's, nothing listed. Only head: every verdict
// new, in the new list most downloaded first, then by id.
func TestCompareOneSide(t *testing.T) {
	es := []compare.Entry{
		{ID: "m", Downloads: 5, Status: "pass", Train: "pass"},
		{ID: "n", Downloads: 9, Status: "fail", Signature: "s-n"},
		{ID: "k", Downloads: 9, Status: "crash"},
		{ID: "o", Downloads: 3, Status: "skipped"},
	}
	b := Compare(es, nil)
	if n := b.Headline.Counts[compare.NotRetested]; n != 4 {
		t.Errorf("base only: %d not retested, want 4", n)
	}
	if b.Headline.TotalDownloads != 5+9+9 || len(b.New)+len(b.Fixed)+len(b.Regressed)+len(b.StillFailing) != 0 {
		t.Errorf("base only: total %d, lists %+v", b.Headline.TotalDownloads, b)
	}
	h := Compare(nil, es)
	want := []compare.Item{
		{ID: "k", Downloads: 9, BaseStatus: "untested", HeadStatus: "crash"},
		{ID: "n", Downloads: 9, BaseStatus: "untested", HeadStatus: "fail", Signature: "s-n"},
		{ID: "m", Downloads: 5, BaseStatus: "untested", HeadStatus: "pass"},
	}
	if !reflect.DeepEqual(h.New, want) {
		t.Errorf("head only: new\n got %+v\nwant %+v", h.New, want)
	}
	if h.Headline.Counts[compare.New] != 3 || h.Headline.Counts[compare.NoVerdict] != 1 || h.Headline.NewDownloads != 23 {
		t.Errorf("head only: counts %v, new downloads %d", h.Headline.Counts, h.Headline.NewDownloads)
	}
	if h.Headline.Counts[compare.TrainFixed]+h.Headline.Counts[compare.TrainRegressed] != 0 {
		t.Errorf("head only: train kinds counted %v (no base verdict)", h.Headline.Counts)
	}
}
