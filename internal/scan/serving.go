package scan

import (
	"context"
	"errors"
	"time"

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
