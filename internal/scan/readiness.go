package scan

import (
	"context"
	"path/filepath"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/preflight"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// prepare prepares one model (prepareEntry) and stores its readiness, so
// that every listed model has one, tested, skipped, gated or unchanged.
func (r *run) prepare(ctx context.Context, m hub.ModelInfo) *entry {
	j := r.prepareEntry(ctx, m)
	if r.refusal(m.ID) == nil && ctx.Err() == nil {
		var cfg map[string]any
		if j != nil {
			cfg = j.config
		}
		r.saveReadiness(ctx, m, cfg)
	}
	return j
}

// readinessInput is what readiness reads for a listed model: config.json as
// the scan fetched it (cfg), else as the Hub cache holds it for this
// revision (models not retested, or declined before any download), else
// the listing's summary of it; and the Hub's safetensors counts. full says
// config.json itself was read. No request is made for it: a model the
// listing declines costs none.
func (r *run) readinessInput(m hub.ModelInfo, cfg map[string]any) (in readiness.Input, full bool) {
	in.Safetensors = m.Safetensors
	if cfg == nil && m.SHA != "" {
		cfg, _ = preflight.ReadConfig(filepath.Join(hub.SnapshotDir(r.s.CacheDir, m.ID, m.SHA), "config.json"))
	}
	switch {
	case cfg != nil:
		in.Config, full = cfg, true
	case r.opts.Source == "cache": // a cache listing's Config is the snapshot's config.json
		in.Config, full = m.Config, m.Config != nil
	default:
		in.Config, in.Summary = m.Config, true
	}
	return in, full
}

// saveReadiness computes and stores a model's readiness; a failure to store
// it is logged, never the model's outcome.
func (r *run) saveReadiness(ctx context.Context, m hub.ModelInfo, cfg map[string]any) {
	in, full := r.readinessInput(m, cfg)
	u := store.ReadinessUpdate{ModelID: m.ID, SHA: m.SHA, Version: readiness.Version, Full: full, Readiness: readiness.Compute(in)}
	if err := r.s.Store.SetReadiness(ctx, u); err != nil && ctx.Err() == nil {
		r.s.log().Warn("store readiness", "model", m.ID, "err", err)
	}
}
