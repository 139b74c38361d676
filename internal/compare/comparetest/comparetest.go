// Package comparetest holds the comparison of two runtimes computed whole,
// in memory, from each model's entry on each (Compare): the straightforward
// recomputation that the store's paged, tallied comparisons are checked
// against. The rule each model follows is internal/compare's.
package comparetest

import (
	"cmp"
	"slices"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
)

// Compare compares head with base. Each slice holds at most one entry per
// model (the first wins when an id repeats); a model's downloads are head's
// entry's, else base's.
func Compare(base, head []compare.Entry) compare.Result {
	baseBy := index(base)
	headBy := index(head)
	res := compare.NewResult()
	cells := make([]compare.Cell, 0, len(headBy)+len(baseBy))
	var train []compare.Cell
	for id, he := range headBy {
		be := baseBy[id]
		cells = append(cells, compare.Cell{Base: be.Status, Head: he.Status, Models: 1, Downloads: he.Downloads})
		if kind := compare.Classify(be.Status, he.Status); compare.IsListed(kind) {
			l := res.List(kind)
			*l = append(*l, compare.ItemOf(id, he.Downloads, be, he))
		}
		if be.Train == "" || he.Train == "" {
			continue
		}
		train = append(train, compare.Cell{Base: be.Train, Head: he.Train, Models: 1, Downloads: he.Downloads})
		if kind := compare.ClassifyTrain(be.Train, he.Train); kind != "" {
			l := res.List(kind)
			*l = append(*l, compare.TrainItemOf(id, he.Downloads, be, he))
		}
	}
	for id, be := range baseBy {
		if _, ok := headBy[id]; !ok {
			cells = append(cells, compare.Cell{Base: be.Status, Models: 1, Downloads: be.Downloads})
		}
	}
	res.Headline = compare.Tally(cells, train)
	for _, k := range append(slices.Clone(compare.Listed), compare.TrainListed...) {
		sortItems(*res.List(k))
	}
	return res
}

// index maps entries by id, the first of each id winning.
func index(es []compare.Entry) map[string]compare.Entry {
	m := make(map[string]compare.Entry, len(es))
	for _, e := range es {
		if _, dup := m[e.ID]; !dup {
			m[e.ID] = e
		}
	}
	return m
}

// sortItems orders items most downloaded first, then by id.
func sortItems(items []compare.Item) {
	slices.SortFunc(items, func(a, b compare.Item) int {
		return cmp.Or(cmp.Compare(b.Downloads, a.Downloads), strings.Compare(a.ID, b.ID))
	})
}
