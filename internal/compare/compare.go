// Package compare decides what changed between two runtimes: which models
// a new runtime (head) fixed, broke, tested for the first time or still
// fails, compared with an older one (base), and for how many downloads.
// It is a pure function over the models' results on each runtime; the
// store reads those results, the site and the feed show the answer.
package compare

import (
	"slices"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// Entry is one model's result on one runtime: its newest there.
type Entry struct {
	ID        string
	Downloads int64
	Status    compat.Status
	Signature string // "" when the result has none
	// Train is the status of the result's train verdict (its
	// Result.Modes["train"]), "" when it has none (a result from before
	// the verdict matrix, or a probe that ran no train step);
	// TrainSignature is that verdict's signature, "" when none.
	Train          compat.Status
	TrainSignature string
}

// Item is one model in a list of the comparison. BaseStatus is untested
// when base has no result for the model. Signature is the failure the item
// is about: base's for a fix (what was fixed), head's otherwise ("" when
// none).
type Item struct {
	ID         string
	Downloads  int64
	BaseStatus compat.Status
	HeadStatus compat.Status
	Signature  string
}

// Kind is where a model lands in a comparison.
type Kind string

// The kinds of a comparison. Only the first four are listed; the others
// are counted.
const (
	Fixed        Kind = "fixed"         // held against the model on base, pass on head
	Regressed    Kind = "regressed"     // pass on base, held against the model on head
	New          Kind = "new"           // a verdict on head, none on base (no result, skipped, error)
	StillFailing Kind = "still_failing" // held against the model on both
	StillPassing Kind = "still_passing" // pass on both
	NoVerdict    Kind = "no_verdict"    // head's result is no verdict (skipped, error, untested)
	NotRetested  Kind = "not_retested"  // a result on base, none on head
)

// The kinds of a train verdict's change, listed apart from the inference
// kinds above: a model whose inference still passes can stop training.
// A model is in one of them only when its results on both runtimes have a
// train verdict; it is in an inference kind all the same.
const (
	TrainFixed     Kind = "train_fixed"     // the train verdict held against the model on base, pass on head
	TrainRegressed Kind = "train_regressed" // the train verdict pass on base, held against the model on head
)

// TrainListed are the train kinds a comparison lists, in the order of
// Result's train lists.
var TrainListed = []Kind{TrainFixed, TrainRegressed}

// IsTrainListed reports whether k is a listed train kind.
func IsTrainListed(k Kind) bool { return slices.Contains(TrainListed, k) }

// ClassifyTrain is the train kind of a model whose train verdicts on base
// and head have these statuses ("" for none on that runtime), "" for none:
// the feed's rule for a train event (compat.TrainChange), so that a
// comparison lists as train regressed exactly what the feed calls a
// train_regression. A side without a verdict, an error or a skip makes no
// train kind.
func ClassifyTrain(base, head compat.Status) Kind {
	switch kind, changed := compat.TrainChange(base, head); {
	case !changed:
		return ""
	case kind == compat.EventTrainRegression:
		return TrainRegressed
	case kind == compat.EventTrainFix:
		return TrainFixed
	}
	return ""
}

// Classify is where a model lands in a comparison given its status on base
// and on head, "" for no result on that runtime. A change between two
// verdicts is what compat.ClassifyChange says it is (the feed and `scanner
// check` read the same rule): new, fixed or regressed; the rest is still
// passing or still failing, no verdict on head, or not retested.
func Classify(base, head compat.Status) Kind {
	switch {
	case head == "":
		return NotRetested
	case !head.IsVerdict():
		return NoVerdict
	}
	switch compat.ClassifyChange(base, head) {
	case compat.EventNew:
		return New
	case compat.EventRegression:
		return Regressed
	case compat.EventFix:
		return Fixed
	}
	if head == compat.StatusPass {
		return StillPassing
	}
	return StillFailing
}

// Headline holds the numbers of "head fixes N models (X% of downloads),
// breaks M". Counts has every Kind, zeros included. The shares are of
// TotalDownloads, the downloads of every model with a verdict on either
// runtime; nil when that is 0.
type Headline struct {
	Counts             map[Kind]int
	FixedDownloads     int64
	RegressedDownloads int64
	NewDownloads       int64
	TotalDownloads     int64
	FixedShare         *float64
	RegressedShare     *float64
	// The downloads of the train lists' models.
	TrainFixedDownloads, TrainRegressedDownloads int64
}

// Result is a comparison: the four lists, each most downloaded first (then
// by id), never nil, and the headline.
type Result struct {
	Fixed        []Item
	Regressed    []Item
	New          []Item
	StillFailing []Item
	// The train lists (TrainListed): their items' statuses and signature
	// are the train verdicts' (TrainItemOf).
	TrainFixed     []Item
	TrainRegressed []Item
	Headline       Headline
}

// NewResult is a Result whose lists are empty, not nil.
func NewResult() Result {
	return Result{Fixed: []Item{}, Regressed: []Item{}, New: []Item{}, StillFailing: []Item{},
		TrainFixed: []Item{}, TrainRegressed: []Item{}}
}

// List is r's list of kind k (a listed or train-listed kind; nil for
// another), to read or to fill.
func (r *Result) List(k Kind) *[]Item {
	switch k {
	case Fixed:
		return &r.Fixed
	case Regressed:
		return &r.Regressed
	case New:
		return &r.New
	case StillFailing:
		return &r.StillFailing
	case TrainFixed:
		return &r.TrainFixed
	case TrainRegressed:
		return &r.TrainRegressed
	}
	return nil
}

// Listed are the kinds whose models a comparison lists, in the order of
// Result's lists; the others are only counted.
var Listed = []Kind{Fixed, Regressed, New, StillFailing}

// IsListed reports whether a comparison lists the models of kind k.
func IsListed(k Kind) bool { return slices.Contains(Listed, k) }

// ItemOf is the list item of a model whose entries on base and head are
// given (a zero base for no result there): BaseStatus untested without a
// base result, and the signature base's for a fix (what was fixed), head's
// otherwise.
func ItemOf(id string, downloads int64, base, head Entry) Item {
	it := Item{ID: id, Downloads: downloads, BaseStatus: base.Status, HeadStatus: head.Status, Signature: head.Signature}
	if base.Status == "" {
		it.BaseStatus = compat.StatusUntested
	}
	if Classify(base.Status, head.Status) == Fixed {
		it.Signature = base.Signature
	}
	return it
}

// TrainItemOf is the train list item of a model whose entries on base and
// head are given: their train verdicts' statuses, and the signature
// base's train verdict's for a fix, head's otherwise.
func TrainItemOf(id string, downloads int64, base, head Entry) Item {
	it := Item{ID: id, Downloads: downloads, BaseStatus: base.Train, HeadStatus: head.Train, Signature: head.TrainSignature}
	if ClassifyTrain(base.Train, head.Train) == TrainFixed {
		it.Signature = base.TrainSignature
	}
	return it
}

// Cell is how many models, and their downloads, have status Base on base
// and Head on head ("" for no result on that runtime).
type Cell struct {
	Base, Head compat.Status
	Models     int
	Downloads  int64
}

// Tally is the headline of a comparison whose models are counted in
// cells (a pair of statuses may repeat) and, by their train verdicts'
// statuses, in train cells (of the models with a train verdict on both
// runtimes; others count in no train kind): what Compare's headline says
// without its lists.
func Tally(cells, train []Cell) Headline {
	h := Headline{Counts: make(map[Kind]int, 9)}
	for _, k := range []Kind{Fixed, Regressed, New, StillFailing, StillPassing, NoVerdict, NotRetested, TrainFixed, TrainRegressed} {
		h.Counts[k] = 0
	}
	for _, c := range train {
		switch kind := ClassifyTrain(c.Base, c.Head); kind {
		case TrainFixed:
			h.Counts[kind] += c.Models
			h.TrainFixedDownloads += c.Downloads
		case TrainRegressed:
			h.Counts[kind] += c.Models
			h.TrainRegressedDownloads += c.Downloads
		}
	}
	for _, c := range cells {
		kind := Classify(c.Base, c.Head)
		h.Counts[kind] += c.Models
		if c.Head.IsVerdict() || c.Base.IsVerdict() {
			h.TotalDownloads += c.Downloads
		}
		switch kind {
		case Fixed:
			h.FixedDownloads += c.Downloads
		case Regressed:
			h.RegressedDownloads += c.Downloads
		case New:
			h.NewDownloads += c.Downloads
		}
	}
	if h.TotalDownloads > 0 {
		f := float64(h.FixedDownloads) / float64(h.TotalDownloads)
		r := float64(h.RegressedDownloads) / float64(h.TotalDownloads)
		h.FixedShare, h.RegressedShare = &f, &r
	}
	return h
}
