package data

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// Comparison is two runtimes and a page of what changed between them.
// Read only.
type Comparison struct {
	Base, Head store.RuntimeStats
	// Result's lists are a page of each (or of the one list a cursor
	// continues); its headline counts the whole Comparison.
	Result compare.Result
	// Next is each list's next page's cursor, "" after its last.
	Next map[compare.Kind]string
	// Label names head by what changed since base ("torch_tpu 0.2.0").
	Label string
}

// Compare reads a page of the Comparison of head with base, limit
// models per list from cursor ("" = the first page of each) of the lists
// asked (nil = all), through the cache (until the data changes).
func (r *Reader) Compare(ctx context.Context, base, head store.RuntimeStats, limit int, cursor string, lists []compare.Kind, changed time.Time) (*Comparison, error) {
	key := compareKey(base, head, limit, cursor, lists)
	return r.Caches.Comparisons.Do(key, changed, func() (*Comparison, int, error) {
		p, err := r.Store.Compare(ctx, store.CompareQuery{Base: base.Ref, Head: head.Ref, Limit: limit, Cursor: cursor, Lists: lists})
		if err != nil {
			return nil, 0, err
		}
		v, size := newComparison(base, head, p)
		return v, size + len(key), nil
	})
}

// compareKey is the cache key of a page of a Comparison (Compare).
func compareKey(base, head store.RuntimeStats, limit int, cursor string, lists []compare.Kind) string {
	return fmt.Sprint(base.Ref.Key(), " ", head.Ref.Key(), " ", limit, " ", cursor, " ", lists)
}

// newComparison is page p of the Comparison of head with base, and its
// estimated size in a cache (its key's bytes apart).
func newComparison(base, head store.RuntimeStats, p store.ComparePage) (*Comparison, int) {
	v := &Comparison{Base: base, Head: head, Result: p.Result, Next: p.Next, Label: show.RuntimeLabel(&base.Ref, head.Ref)}
	items := 0
	for _, k := range ListedKinds {
		items += len(*v.Result.List(k))
	}
	return v, 160 * items
}

// ComparePages is Compare of the first page (limit models of
// lists) of each pair's Comparison (base, head), those not cached read
// together (store ComparePages).
func (r *Reader) ComparePages(ctx context.Context, pairs [][2]store.RuntimeStats, limit int, lists []compare.Kind, changed time.Time) ([]*Comparison, error) {
	out := make([]*Comparison, len(pairs))
	var (
		missed []int
		qs     []store.CompareQuery
	)
	for i, p := range pairs {
		if v, ok := r.Caches.Comparisons.Get(compareKey(p[0], p[1], limit, "", lists), changed); ok {
			out[i] = v
			continue
		}
		missed = append(missed, i)
		qs = append(qs, store.CompareQuery{Base: p[0].Ref, Head: p[1].Ref, Limit: limit, Lists: lists})
	}
	if len(qs) == 0 {
		return out, nil
	}
	pages, err := r.Store.ComparePages(ctx, qs)
	if err != nil {
		return nil, err
	}
	for j, i := range missed {
		p := pairs[i]
		key := compareKey(p[0], p[1], limit, "", lists)
		v, size := newComparison(p[0], p[1], pages[j])
		r.Caches.Comparisons.Put(key, changed, v, size+len(key))
		out[i] = v
	}
	return out, nil
}

// ListedKinds are every list of a Comparison: the inference lists, then
// the train lists.
var ListedKinds = append(slices.Clone(compare.Listed), compare.TrainListed...)

// CompareLimit is how many models of each list one answer of
// /api/v1/compare holds unless ?limit= says otherwise (up to httpx.MaxLimit); a
// list with more continues with its cursor.
const CompareLimit = 100
