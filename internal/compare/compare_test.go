package compare

import (
	"reflect"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func TestClassify(t *testing.T) {
	// Written out by hand from the words: fixed = was held against
	// the model, now passes; regressed = passed, now held against it; new =
	// a verdict now, none before; still failing = held against it on both.
	for _, c := range []struct {
		base, head compat.Status
		want       Kind
	}{
		{"fail", "pass", Fixed},
		{"oom", "pass", Fixed},
		{"timeout", "pass", Fixed},
		{"crash", "pass", Fixed},
		{"pass", "fail", Regressed},
		{"pass", "oom", Regressed},
		{"pass", "timeout", Regressed},
		{"pass", "crash", Regressed},
		{"", "pass", New},
		{"", "fail", New},
		{"untested", "pass", New},
		{"skipped", "fail", New},
		{"error", "pass", New},
		{"error", "crash", New},
		{"fail", "fail", StillFailing},
		{"fail", "oom", StillFailing},
		{"crash", "timeout", StillFailing},
		{"pass", "pass", StillPassing},
		// The scanner's own failures and skips are never held against a
		// model: no regression, no fix.
		{"pass", "error", NoVerdict},
		{"pass", "skipped", NoVerdict},
		{"fail", "error", NoVerdict},
		{"", "skipped", NoVerdict},
		{"pass", "untested", NoVerdict},
		{"pass", "", NotRetested},
		{"fail", "", NotRetested},
		{"", "", NotRetested},
	} {
		if got := Classify(c.base, c.head); got != c.want {
			t.Errorf("Classify(%q, %q) = %s, want %s", c.base, c.head, got, c.want)
		}
	}
}

// Every pair of status words lands in exactly one kind, and only the
// listed rules produce fixes and regressions.
func TestClassifyEveryPair(t *testing.T) {
	seen := map[Kind]int{}
	for _, b := range append([]compat.Status{""}, compat.Statuses...) {
		for _, h := range append([]compat.Status{""}, compat.Statuses...) {
			k := Classify(b, h)
			seen[k]++
			if k == Fixed && (h != compat.StatusPass || !b.HeldAgainstModel()) {
				t.Errorf("Classify(%q, %q) = fixed", b, h)
			}
			if k == Regressed && (b != compat.StatusPass || !h.HeldAgainstModel()) {
				t.Errorf("Classify(%q, %q) = regressed", b, h)
			}
		}
	}
	// 4 held-against statuses: 4 fixes, 4 regressions, 16 still failing.
	if seen[Fixed] != 4 || seen[Regressed] != 4 || seen[StillFailing] != 16 || seen[StillPassing] != 1 {
		t.Errorf("kinds over all pairs: %v", seen)
	}
}

// TestClassifyFollowsTheFeed: a comparison and the feed name every change
// between two statuses the same (compat.ClassifyChange is their one rule):
// fixed is a fix, regressed a regression, new a new event, and a model
// still passing or failing is no fix, regression or new verdict.
func TestClassifyFollowsTheFeed(t *testing.T) {
	feed := map[Kind]compat.EventKind{Fixed: compat.EventFix, Regressed: compat.EventRegression, New: compat.EventNew,
		StillPassing: compat.EventChange, StillFailing: compat.EventChange}
	n := 0
	for _, b := range append([]compat.Status{""}, compat.Statuses...) {
		for _, h := range compat.Statuses {
			k := Classify(b, h)
			want, ok := feed[k]
			if !ok {
				continue // no verdict on head: no kind of change to agree on
			}
			n++
			if got := compat.ClassifyChange(b, h); got != want {
				t.Errorf("%q → %q: compare says %s, the feed %s", b, h, k, got)
			}
		}
	}
	if n != 9*5 { // every base (8 words and none) to every verdict (5)
		t.Errorf("%d pairs compared, want 45", n)
	}
	if k, e := Classify(compat.StatusError, compat.StatusPass), compat.ClassifyChange(compat.StatusError, compat.StatusPass); k != New || e != compat.EventNew {
		t.Errorf("error → pass: compare %s, feed %s; want new in both", k, e)
	}
}

// Tally counts cells as Compare counts models: written out by hand for
// cells of several models each, a pair of statuses given twice, and models
// on one runtime alone ("" on the other).
func TestTally(t *testing.T) {
	h := Tally([]Cell{
		{Base: "fail", Head: "pass", Models: 3, Downloads: 300},    // fixed
		{Base: "oom", Head: "pass", Models: 1, Downloads: 100},     // fixed
		{Base: "pass", Head: "crash", Models: 2, Downloads: 50},    // regressed
		{Base: "", Head: "fail", Models: 4, Downloads: 40},         // new
		{Base: "error", Head: "pass", Models: 1, Downloads: 7},     // new
		{Base: "pass", Head: "pass", Models: 5, Downloads: 1000},   // still passing
		{Base: "fail", Head: "fail", Models: 1, Downloads: 1},      // still failing
		{Base: "pass", Head: "error", Models: 1, Downloads: 11},    // no verdict, base's verdict counts
		{Base: "skipped", Head: "error", Models: 1, Downloads: 13}, // no verdict, none counts
		{Base: "pass", Head: "", Models: 2, Downloads: 20},         // not retested, base's verdict counts
		{Base: "skipped", Head: "", Models: 1, Downloads: 17},      // not retested, none counts
	}, []Cell{
		{Base: "pass", Head: "fail", Models: 2, Downloads: 9},  // train regressed
		{Base: "pass", Head: "oom", Models: 1, Downloads: 5},   // train regressed
		{Base: "crash", Head: "pass", Models: 4, Downloads: 3}, // train fixed
		{Base: "pass", Head: "pass", Models: 8, Downloads: 9},  // neither
		{Base: "pass", Head: "error", Models: 3, Downloads: 9}, // neither: an error is no verdict
	})
	want := map[Kind]int{Fixed: 4, Regressed: 2, New: 5, StillFailing: 1, StillPassing: 5, NoVerdict: 2, NotRetested: 3,
		TrainFixed: 4, TrainRegressed: 3}
	if !reflect.DeepEqual(h.Counts, want) {
		t.Errorf("counts %v, want %v", h.Counts, want)
	}
	if h.FixedDownloads != 400 || h.RegressedDownloads != 50 || h.NewDownloads != 47 {
		t.Errorf("downloads fixed %d regressed %d new %d, want 400, 50, 47", h.FixedDownloads, h.RegressedDownloads, h.NewDownloads)
	}
	if h.TrainRegressedDownloads != 14 || h.TrainFixedDownloads != 3 {
		t.Errorf("train downloads regressed %d fixed %d, want 14, 3", h.TrainRegressedDownloads, h.TrainFixedDownloads)
	}
	if total := int64(300 + 100 + 50 + 40 + 7 + 1000 + 1 + 11 + 20); h.TotalDownloads != total {
		t.Errorf("total downloads %d, want %d", h.TotalDownloads, total)
	}
	if h.FixedShare == nil || *h.FixedShare != 400.0/1529 {
		t.Errorf("fixed share %v", h.FixedShare)
	}
}

// ItemOf: base's status untested without a base result, base's signature
// for a fix and head's otherwise.
func TestItemOf(t *testing.T) {
	for _, c := range []struct {
		base, head Entry
		want       Item
	}{
		{Entry{Status: "fail", Signature: "old"}, Entry{Status: "pass"}, Item{"m", 5, "fail", "pass", "old"}},
		{Entry{Status: "pass"}, Entry{Status: "crash", Signature: "new"}, Item{"m", 5, "pass", "crash", "new"}},
		{Entry{}, Entry{Status: "fail", Signature: "new"}, Item{"m", 5, "untested", "fail", "new"}},
		{Entry{Status: "oom", Signature: "old"}, Entry{Status: "fail", Signature: "new"}, Item{"m", 5, "oom", "fail", "new"}},
	} {
		if got := ItemOf("m", 5, c.base, c.head); got != c.want {
			t.Errorf("ItemOf(%+v, %+v) = %+v, want %+v", c.base, c.head, got, c.want)
		}
	}
}

// ClassifyTrain, written out by hand from the words: a train
// regression is a train verdict that passed on base and is held against
// the model on head; a fix the reverse; a side without a train verdict
// (""), an error or a skip makes neither.
func TestClassifyTrain(t *testing.T) {
	for _, c := range []struct {
		base, head compat.Status
		want       Kind
	}{
		{"pass", "fail", TrainRegressed},
		{"pass", "oom", TrainRegressed},
		{"pass", "timeout", TrainRegressed},
		{"pass", "crash", TrainRegressed},
		{"fail", "pass", TrainFixed},
		{"oom", "pass", TrainFixed},
		{"crash", "pass", TrainFixed},
		{"pass", "pass", ""},
		{"fail", "fail", ""},
		{"fail", "crash", ""},
		{"", "fail", ""},
		{"", "pass", ""},
		{"pass", "", ""},
		{"fail", "", ""},
		{"pass", "error", ""},
		{"error", "pass", ""},
		{"skipped", "fail", ""},
		{"pass", "skipped", ""},
		{"", "", ""},
	} {
		if got := ClassifyTrain(c.base, c.head); got != c.want {
			t.Errorf("ClassifyTrain(%q, %q) = %q, want %q", c.base, c.head, got, c.want)
		}
	}
}

// TestClassifyTrainIsTheFeeds: over every pair of statuses, a comparison's
// train kind is the feed's train event (compat.TrainChange) and nothing
// else; 4 regressions and 4 fixes in all.
func TestClassifyTrainIsTheFeeds(t *testing.T) {
	seen := map[Kind]int{}
	for _, b := range append([]compat.Status{""}, compat.Statuses...) {
		for _, h := range append([]compat.Status{""}, compat.Statuses...) {
			k := ClassifyTrain(b, h)
			seen[k]++
			ev, ok := compat.TrainChange(b, h)
			want := map[compat.EventKind]Kind{compat.EventTrainRegression: TrainRegressed, compat.EventTrainFix: TrainFixed}[ev]
			if !ok {
				want = ""
			}
			if k != want {
				t.Errorf("%q → %q: compare says %q, the feed %q (%v)", b, h, k, ev, ok)
			}
		}
	}
	if seen[TrainRegressed] != 4 || seen[TrainFixed] != 4 {
		t.Errorf("train kinds over all pairs: %v", seen)
	}
}

// TrainItemOf: the train verdicts' statuses; base's train signature for a
// fix, head's otherwise.
func TestTrainItemOf(t *testing.T) {
	fix := TrainItemOf("m", 5, Entry{Status: "pass", Train: "oom", TrainSignature: "old"}, Entry{Status: "fail", Train: "pass", TrainSignature: "x"})
	if want := (Item{"m", 5, "oom", "pass", "old"}); fix != want {
		t.Errorf("fix: %+v, want %+v", fix, want)
	}
	reg := TrainItemOf("m", 5, Entry{Status: "fail", Train: "pass", TrainSignature: "old"}, Entry{Status: "fail", Train: "fail", TrainSignature: "new"})
	if want := (Item{"m", 5, "pass", "fail", "new"}); reg != want {
		t.Errorf("regression: %+v, want %+v", reg, want)
	}
}
