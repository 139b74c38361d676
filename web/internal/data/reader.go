package data

import (
	"context"
	"errors"
	"fmt"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
)

// Reader is the store with the reads that several audiences share, each
// kept until the data changes.
type Reader struct {
	Store Store // the server's, whose version moves with the known issues too

	// servingRegs is the pinned vllm-torchtpu's registry, read once per
	// data version: every model JSON, row and badge needs it.
	servingRegs cached.Map[string, *serving.Registry]
}

// NewReader reads st.
func NewReader(st Store) *Reader {
	r := &Reader{Store: st}
	r.servingRegs.MaxBytes = 1 << 12
	return r
}

// ServingRegistry is the pinned release's registry (serving.Version), nil
// when no scan has read it yet.
func (r *Reader) ServingRegistry(ctx context.Context) (*serving.Registry, error) {
	changed, err := r.Store.Changed(ctx)
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
func ServingCell(reg *serving.Registry, m compat.Model) *serving.Cell {
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
