package scan

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
)

// discover returns the models this scan covers, in order: the most popular
// from the Hub listing, exactly the --model ids, or the models already in
// the local cache. invalid lists ids that could not be scanned at all, with
// why, so the scan record says so.
func (r *run) discover(ctx context.Context) (models []hub.ModelInfo, invalid []string, err error) {
	switch {
	case r.opts.Source == "cache":
		return r.fromCache()
	case len(r.opts.Models) > 0:
		return r.exactModels(ctx)
	}
	var onPage func(int)
	if r.hooks.Progress != nil {
		onPage = func(got int) {
			r.s.log().Info("listing models", "got", got, "limit", r.opts.Limit)
		}
	}
	list, err := r.s.Hub.ListModels(ctx, hub.ListOptions{
		Sort: r.opts.Sort, Limit: r.opts.Limit, PipelineTags: r.opts.Tasks, OnPage: onPage,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: list models: %w", ErrHub, err)
	}
	return list, nil, nil
}

// exactModels resolves each --model id at its current revision. A model the
// Hub answers for (gated, missing, disabled) is still scanned, so that its
// skip is recorded; an id that is not a Hub id at all is reported instead.
func (r *run) exactModels(ctx context.Context) ([]hub.ModelInfo, []string, error) {
	var out, unreachable []hub.ModelInfo
	var invalid []string
	seen := map[string]bool{}
	for _, id := range r.opts.Models {
		if err := compat.ValidateModelID(id); err != nil {
			invalid = append(invalid, fmt.Sprintf("%q: %v", id, err))
			r.s.log().Warn("not a valid Hub model id", "model", id, "err", err)
			continue
		}
		info, err := r.s.Hub.ModelInfo(ctx, id, "main")
		if err != nil {
			var he *hub.Error
			if errors.As(err, &he) && he.Reason() != "" {
				// The Hub answered: the model gets a skipped result below.
				info = hub.ModelInfo{ID: id, RequestedID: id, Gated: he.Reason() == compat.ReasonGated}
				out = append(out, info)
				r.known(id, he)
				continue
			}
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			unreachable = append(unreachable, hub.ModelInfo{ID: id})
			r.s.log().Error("model info", "model", id, "err", err)
			if len(unreachable) == len(r.opts.Models) {
				return nil, nil, fmt.Errorf("%w: model info %s: %w", ErrHub, id, err)
			}
			invalid = append(invalid, fmt.Sprintf("%s: %v", id, err))
			continue
		}
		if seen[info.ID] {
			continue
		}
		seen[info.ID] = true
		out = append(out, info)
	}
	return out, invalid, nil
}

// known remembers a Hub refusal for an exact model id, so prepare records
// it as a skip without asking again.
func (r *run) known(id string, he *hub.Error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refusals == nil {
		r.refusals = map[string]*hub.Error{}
	}
	r.refusals[id] = he
}

func (r *run) refusal(id string) *hub.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refusals[id]
}

// fromCache lists the models already in the local Hub cache, for air-gapped
// hosts that mirror models that way.
func (r *run) fromCache() ([]hub.ModelInfo, []string, error) {
	list := r.s.ListCache
	if list == nil {
		list = hub.ScanCache
	}
	models, err := list(r.s.CacheDir)
	if err != nil {
		return nil, nil, fmt.Errorf("scan: read cache %s: %w", r.s.CacheDir, err)
	}
	models = keepIn(models, r.opts.Models, func(m hub.ModelInfo) string { return m.ID })
	models = keepIn(models, r.opts.Tasks, func(m hub.ModelInfo) string { return m.PipelineTag })
	if len(models) > r.opts.Limit {
		models = models[:r.opts.Limit]
	}
	return models, nil, nil
}

// keepIn keeps the models whose key is in want; an empty want keeps all.
func keepIn(models []hub.ModelInfo, want []string, key func(hub.ModelInfo) string) []hub.ModelInfo {
	if len(want) == 0 {
		return models
	}
	kept := models[:0]
	for _, m := range models {
		if slices.Contains(want, key(m)) {
			kept = append(kept, m)
		}
	}
	return kept
}
