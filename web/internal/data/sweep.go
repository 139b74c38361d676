package data

import (
	"context"
	"errors"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/sweep"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// Sweep is the sweep's coverage on target, recomputed when the data
// changes (each model's current result, as its page shows it). Read only.
func (r *Reader) Sweep(ctx context.Context, target compat.Target, changed time.Time) (sweep.Coverage, error) {
	return r.Caches.Sweeps.Do(string(target), changed, func() (sweep.Coverage, int, error) {
		return r.measureSweep(ctx, target)
	})
}

// measureSweep is the sweep's coverage on target, and its estimated size.
func (r *Reader) measureSweep(ctx context.Context, target compat.Target) (sweep.Coverage, int, error) {
	results := make(map[string]*compat.Result, len(r.SweepList.Models))
	for _, m := range r.SweepList.Models {
		got, err := r.Store.GetModel(ctx, m.ModelID, target)
		if errors.Is(err, store.ErrNotFound) {
			continue // not listed yet: untested
		}
		if err != nil {
			return sweep.Coverage{}, 0, err
		}
		results[m.ModelID] = got.Result
	}
	v := sweep.Measure(r.SweepList, func(id string) *compat.Result { return results[id] })
	return v, 256 * len(r.SweepList.Models), nil
}
