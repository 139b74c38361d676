package data

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// The table page needs three aggregate reads (a page of models, the
// summary and the failure groups); the last two scan every current result.
// They change only when the data does, so they are cached by Store.Changed.

// ListPage is one cached page of ListModels. Its models are shared: read only.
type ListPage struct {
	Models []compat.Model
	Next   string
}

// QueryKey identifies a ModelQuery in a cache.
func QueryKey(q store.ModelQuery) string {
	desc := "-"
	if q.Desc != nil {
		desc = strconv.FormatBool(*q.Desc)
	}
	return fmt.Sprintf("%q|%q|%q|%q|%q|%q|%s|%d|%q|%q|%q|%q", q.Q, fmt.Sprint(q.Status), q.Task, q.Org, q.Target, q.Sort, desc, q.Limit, q.Cursor, q.Hint,
		fmt.Sprint(q.Train), q.Serve)
}

// List is ListModels through the cache. The models must not be modified.
func (r *Reader) List(ctx context.Context, q store.ModelQuery, changed time.Time) ([]compat.Model, string, error) {
	key := QueryKey(q)
	p, err := r.Caches.Lists.Do(key, changed, func() (ListPage, int, error) {
		models, next, err := r.Store.ListModels(ctx, q)
		return ListPage{models, next}, 1500*len(models) + len(key), err
	})
	return p.Models, p.Next, err
}

// Summary is Summary through the cache.
func (r *Reader) Summary(ctx context.Context, target compat.Target, changed time.Time) (store.Summary, error) {
	return r.Caches.Summaries.Do(string(target), changed, func() (store.Summary, int, error) {
		v, err := r.Store.Summary(ctx, target)
		return v, 2048, err
	})
}

// Failures is Failures through the cache. The groups must not be modified.
func (r *Reader) Failures(ctx context.Context, target compat.Target, limit int, changed time.Time) ([]store.FailureGroup, error) {
	return r.Caches.Failures.Do(string(target)+"|"+strconv.Itoa(limit), changed, func() ([]store.FailureGroup, int, error) {
		v, err := r.Store.Failures(ctx, target, limit)
		return v, 512 * len(v), err
	})
}
