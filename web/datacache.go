package web

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

// listPage is one cached page of ListModels. Its models are shared: read only.
type listPage struct {
	models []compat.Model
	next   string
}

// queryKey identifies a ModelQuery in a cache.
func queryKey(q store.ModelQuery) string {
	desc := "-"
	if q.Desc != nil {
		desc = strconv.FormatBool(*q.Desc)
	}
	return fmt.Sprintf("%q|%q|%q|%q|%q|%q|%s|%d|%q|%q|%q|%q", q.Q, fmt.Sprint(q.Status), q.Task, q.Org, q.Target, q.Sort, desc, q.Limit, q.Cursor, q.Hint,
		fmt.Sprint(q.Train), q.Serve)
}

// cachedList is ListModels through the cache. The models must not be modified.
func (s *Server) cachedList(ctx context.Context, q store.ModelQuery, changed time.Time) ([]compat.Model, string, error) {
	key := queryKey(q)
	p, err := s.lists.Do(key, changed, func() (listPage, int, error) {
		models, next, err := s.store.ListModels(ctx, q)
		return listPage{models, next}, 1500*len(models) + len(key), err
	})
	return p.models, p.next, err
}

// cachedSummary is Summary through the cache.
func (s *Server) cachedSummary(ctx context.Context, target compat.Target, changed time.Time) (store.Summary, error) {
	return s.summaries.Do(string(target), changed, func() (store.Summary, int, error) {
		v, err := s.store.Summary(ctx, target)
		return v, 2048, err
	})
}

// cachedFailures is Failures through the cache. The groups must not be modified.
func (s *Server) cachedFailures(ctx context.Context, target compat.Target, limit int, changed time.Time) ([]store.FailureGroup, error) {
	return s.failures.Do(string(target)+"|"+strconv.Itoa(limit), changed, func() ([]store.FailureGroup, int, error) {
		v, err := s.store.Failures(ctx, target, limit)
		return v, 512 * len(v), err
	})
}
