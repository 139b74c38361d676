package data

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/internal/sweep"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
)

// Reader is the store with the reads that several audiences share, each
// kept until the data changes.
type Reader struct {
	Store     Store      // the server's, whose version moves with the known issues too
	SweepList sweep.File // Google's sweep (internal/sweep)
	Caches    Caches

	// servingRegs is the pinned vllm-torchtpu's registry, read once per
	// data version: every model JSON, row and badge needs it.
	servingRegs cached.Map[string, *serving.Registry]
}

// Caches are the Reader's reads kept per data version (the caches'
// accounting tests read them).
type Caches struct {
	Lists       cached.Map[string, ListPage]
	Summaries   cached.Map[string, store.Summary]
	Failures    cached.Map[string, []store.FailureGroup]
	Runtimes    cached.Map[string, []store.RuntimeStats]
	Comparisons cached.Map[string, *Comparison]
	Sweeps      cached.Map[string, sweep.Coverage]  // the sweep's coverage per target
	Predicted   cached.Map[string, store.Predicted] // the predictions' sum
	OpsLists    cached.Map[string, missingOpsRead]  // the fix list per ?table=
}

// NewReader reads st; list is Google's sweep.
func NewReader(st Store, list sweep.File) *Reader {
	r := &Reader{Store: st, SweepList: list}
	r.servingRegs.MaxBytes = 1 << 12
	c := &r.Caches
	c.Lists.MaxBytes = 32 << 20
	c.Summaries.MaxBytes = 1 << 20
	c.Failures.MaxBytes = 4 << 20
	c.Runtimes.MaxBytes = 4 << 20
	c.Comparisons.MaxBytes = 32 << 20
	c.Sweeps.MaxBytes = 1 << 20
	c.Predicted.MaxBytes = 1 << 12
	c.OpsLists.MaxBytes = 8 << 20
	return r
}

// Changed is the data's version: the store's last change, moved on by
// every replacement of the known-issues table (Known.Versioned). Every
// answer kept per data version is keyed by it; it makes the Reader a
// cached.Source.
func (r *Reader) Changed(ctx context.Context) (time.Time, error) { return r.Store.Changed(ctx) }

// ServingRegistry is the pinned release's registry (serving.Version), nil
// when no scan has read it yet.
func (r *Reader) ServingRegistry(ctx context.Context) (*serving.Registry, error) {
	changed, err := r.Changed(ctx)
	if err != nil {
		return nil, fmt.Errorf("web: serving registry: %w", err)
	}
	return r.servingRegs.Do("", changed, func() (*serving.Registry, int, error) {
		reg, err := r.Store.ServingRegistry(ctx, serving.Version)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, 0, nil
		case err != nil:
			return nil, 0, fmt.Errorf("web: serving registry: %w", err)
		}
		return &reg, 0, nil
	})
}

// ServingCell is m's serving cell under reg: nil when nothing is known (no
// registry, no readiness, no architectures).
func ServingCell(reg *serving.Registry, m compat.Model) *compat.ServingCell {
	if reg == nil || m.Readiness == nil {
		return nil
	}
	c, ok := serving.Declare(*reg, m.ID, m.Readiness.Architectures, m.Readiness)
	if !ok {
		return nil
	}
	return &c
}

// WithMeasured adds each model's measured serving verdict (a scan's
// serving probe, store.ServingResults) to its serving cell; a model
// without a cell (no registry read, no architectures) shows none.
func (r *Reader) WithMeasured(ctx context.Context, models ...*compat.Model) error {
	var ids []string
	for _, m := range models {
		if m.Serving != nil {
			ids = append(ids, m.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	got, err := r.Store.ServingResults(ctx, ids)
	if err != nil {
		return fmt.Errorf("web: serving results: %w", err)
	}
	for _, m := range models {
		if v, ok := got[m.ID]; ok && m.Serving != nil {
			m.Serving.Measured = &v
		}
	}
	return nil
}
