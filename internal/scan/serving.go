package scan

import (
	"context"
	"errors"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// servingWait bounds the read of the pinned release's registry (its
// wheel's download included) at a scan's start.
const servingWait = 3 * time.Minute

// declareServing makes sure the store holds what the pinned
// vllm-torchtpu release declares it serves (serving.Version): read once per
// release (Scanner.Serving), then kept. A failure is logged and retried at
// the next scan; it never ends this one: the serving cells stay unknown.
func (r *run) declareServing(ctx context.Context) {
	if r.s.Serving == nil {
		return
	}
	_, err := r.s.Store.ServingRegistry(ctx, serving.Version)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		if err != nil {
			r.s.log().Warn("serving registry", "version", serving.Version, "err", err)
		}
		return
	}
	rctx, cancel := context.WithTimeout(ctx, servingWait)
	defer cancel()
	reg, err := r.s.Serving(rctx)
	if err == nil {
		err = r.s.Store.PutServingRegistry(ctx, reg)
	}
	if err != nil {
		r.s.log().Warn("serving registry: the serving cells stay unknown until a scan reads it", "package", serving.Package,
			"version", serving.Version, "err", err)
		return
	}
	r.s.log().Info("serving registry read", "package", serving.Package, "version", reg.Version, "vllm", reg.VLLMVersion,
		"architectures", len(reg.Archs))
}

// loadServing keeps the pinned release's registry for the scan's serving
// probes (serveProbe, or a fleet job's Serve: declaredServed); without
// Scanner.ServeProbe or a fleet it reads nothing.
func (r *run) loadServing(ctx context.Context) {
	if r.s.ServeProbe == nil && r.s.Fleet == nil {
		return
	}
	reg, err := r.s.Store.ServingRegistry(ctx, serving.Version)
	switch {
	case err != nil && r.s.ServeProbe == nil: // a fleet's server: its workers are asked for none
		r.s.log().Info("serving registry not read: the fleet's jobs ask for no serving probe", "version", serving.Version, "err", err)
		return
	case err != nil:
		r.s.log().Warn("serving probe: no registry, so no model is declared served and none is probed", "version", serving.Version, "err", err)
		return
	}
	r.serving = &reg
}

// serveProbe runs the measured serving probe (Scanner.ServeProbe) after a
// model's probe, on the devices it still holds, when that probe ran in
// full mode (vLLM needs the real weights and the tokenizer) and the
// model's serving cell is declared served (serving.Declare over its
// config.json's architectures); nil when it did not run, could not start,
// or was cut by the scan's end (a verdict the shutdown made is not
// stored). The time counts as the devices' busy time.
func (r *run) serveProbe(ctx context.Context, held []int, j *entry, res compat.Result) *compat.ServingMeasured {
	if r.s.ServeProbe == nil || res.Mode == nil || *res.Mode != compat.ModeFull || ctx.Err() != nil || !r.declaredServed(j) {
		return nil
	}
	start := time.Now()
	m, err := r.s.ServeProbe(ctx, j.snapshot, res)
	r.mu.Lock()
	r.busy += time.Since(start) * time.Duration(max(len(held), 1))
	r.mu.Unlock()
	switch {
	case ctx.Err() != nil:
		return nil
	case err != nil:
		r.s.log().Warn("serving probe", "model", j.info.ID, "err", err)
		return nil
	}
	r.s.log().Info("serving probe", "model", j.info.ID, "status", m.Status, "runtime", m.Runtime.Key())
	m.Revision = res.Revision // the snapshot it ran on: its serving change names it
	return &m
}

// declaredServed says the pinned release's registry (as loadServing
// kept it) declares model j served (serving.Declare over its config.json's
// architectures): the models a serving probe is run on, here or on a
// fleet's worker (fleet.Job.Serve). False without a registry.
func (r *run) declaredServed(j *entry) bool {
	if r.serving == nil {
		return false
	}
	cell, ok := serving.Declare(*r.serving, j.info.ID, readiness.Architectures(j.config), nil)
	return ok && cell.Served
}

// putServing stores a measured serving verdict (nil: none) beside the
// model's result, never in its place; a failure is logged.
func (r *run) putServing(ctx context.Context, j *entry, m *compat.ServingMeasured) {
	if m == nil {
		return
	}
	if err := r.s.Store.PutServingResult(ctx, j.info.ID, *m); err != nil {
		r.s.log().Warn("store serving result", "model", j.info.ID, "err", err)
	}
}
