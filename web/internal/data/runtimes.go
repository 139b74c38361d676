package data

import (
	"context"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// Runtimes is Store.Runtimes through the cache. Read only.
func (r *Reader) Runtimes(ctx context.Context, target compat.Target, changed time.Time) ([]store.RuntimeStats, error) {
	return r.Caches.Runtimes.Do(string(target), changed, func() ([]store.RuntimeStats, int, error) {
		v, err := r.Store.Runtimes(ctx, target)
		return v, 256 * len(v), err
	})
}

// Predicted is the predictions' sum, kept until the data changes.
func (r *Reader) Predicted(ctx context.Context, changed time.Time) (store.Predicted, error) {
	return r.Caches.Predicted.Do("", changed, func() (store.Predicted, int, error) {
		v, err := r.Store.PredictedTally(ctx)
		return v, 128 + len(v.Table), err
	})
}

// TargetSummaries are each concrete target's summary, through the cache.
func (r *Reader) TargetSummaries(ctx context.Context, changed time.Time) (map[compat.Target]store.Summary, error) {
	out := make(map[compat.Target]store.Summary, len(compat.Targets))
	for _, t := range compat.Targets {
		sum, err := r.Summary(ctx, t, changed)
		if err != nil {
			return nil, err
		}
		out[t] = sum
	}
	return out, nil
}

// Previous is the runtime before st on its target, among rts (newest first).
func Previous(rts []store.RuntimeStats, st store.RuntimeStats) (store.RuntimeStats, bool) {
	on := OnTarget(rts, st.Ref.Target)
	for i := range on {
		if on[i].Ref == st.Ref && i+1 < len(on) {
			return on[i+1], true
		}
	}
	return store.RuntimeStats{}, false
}

// OnTarget keeps the runtimes of target t, in their order.
func OnTarget(rts []store.RuntimeStats, t compat.Target) []store.RuntimeStats {
	var out []store.RuntimeStats
	for _, st := range rts {
		if st.Ref.Target == t {
			out = append(out, st)
		}
	}
	return out
}
