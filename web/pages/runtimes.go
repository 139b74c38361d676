package pages

import (
	"fmt"
	"html/template"
	"slices"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// A runtime is a target and the versions that decide a retest; it is named
// by compat.RuntimeRef.Key. The store counts each model once per runtime,
// by its newest result there.

// runtimeRow is one runtime on the runtimes page.
type runtimeRow struct {
	store.RuntimeStats
	Key        string
	Label      string
	Versions   string
	CompareURL string // with the runtime before it on its target; "" for the first
}

// runtimeGroup is one target's runtimes: a chart and a table.
type runtimeGroup struct {
	Target compat.Target
	Rows   []runtimeRow // newest first
	Chart  template.HTML
}

// runtimesView is the data of templates/runtimes.html.
type runtimesView struct {
	layout
	Groups []runtimeGroup
	// Kernels are the TorchTPU kernel tables kept, newest first.
	Kernels []data.KernelTable
}

// Runtimes serves GET /runtimes: each target's runtimes, newest first,
// with their pass rates over time.
func (h *Handler) Runtimes(c *fiber.Ctx) error {
	ctx := c.UserContext()
	changed, err := h.Data.Changed(ctx)
	if err != nil {
		return fmt.Errorf("web: runtimes: %w", err)
	}
	rts, err := h.Data.Runtimes(ctx, "", changed)
	if err != nil {
		return fmt.Errorf("web: runtimes: %w", err)
	}
	v := runtimesView{}
	v.Canonical = "/runtimes"
	for _, t := range compat.Targets {
		on := data.OnTarget(rts, t)
		if len(on) == 0 {
			continue
		}
		g := runtimeGroup{Target: t, Chart: h.trendChart(t, on, "runtimes-"+string(t))}
		labels := show.RuntimeLabels(on)
		for i, st := range on {
			row := runtimeRow{RuntimeStats: st, Key: st.Ref.Key(), Label: labels[i], Versions: show.Versions(st.Ref)}
			if i+1 < len(on) {
				row.CompareURL = show.CompareURL(on[i+1].Ref.Key(), row.Key)
			}
			g.Rows = append(g.Rows, row)
		}
		v.Groups = append(v.Groups, g)
	}
	if v.Kernels, err = h.Data.KernelTables(ctx); err != nil {
		return fmt.Errorf("web: runtimes: %w", err)
	}
	return h.render(c, "runtimes", v)
}

// oldestFirst returns a reversed copy of newest-first runtimes.
func oldestFirst(rts []store.RuntimeStats) []store.RuntimeStats {
	out := slices.Clone(rts)
	slices.Reverse(out)
	return out
}
