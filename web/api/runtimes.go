package api

import (
	"context"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// RuntimeJSON is one runtime in GET /api/v1/runtimes.
type RuntimeJSON struct {
	Key                      string   `json:"key"`
	Target                   string   `json:"target"`
	Torch                    string   `json:"torch"`
	TorchTPU                 string   `json:"torch_tpu"`
	Transformers             string   `json:"transformers"`
	Harness                  string   `json:"harness"`
	FirstSeen                string   `json:"first_seen"`
	LastSeen                 string   `json:"last_seen"`
	Tested                   int      `json:"tested"`
	PassRate                 *float64 `json:"pass_rate"`
	DownloadWeightedPassRate *float64 `json:"download_weighted_pass_rate"`
	// Extensions.
	Models int `json:"models"` // with a result on it, verdict or not
	Passed int `json:"passed"`
}

func toRuntimeJSON(st store.RuntimeStats) RuntimeJSON {
	return RuntimeJSON{
		Key: st.Ref.Key(), Target: string(st.Ref.Target), Torch: st.Ref.Torch, TorchTPU: st.Ref.TorchTPU,
		Transformers: st.Ref.Transformers, Harness: st.Ref.Harness,
		FirstSeen: st.FirstSeen.UTC().Format(time.RFC3339), LastSeen: st.LastSeen.UTC().Format(time.RFC3339),
		Tested: st.Tested, PassRate: st.PassRate, DownloadWeightedPassRate: st.WeightedPassRate,
		Models: st.Models, Passed: st.Passed,
	}
}

// RuntimesBody is GET /api/v1/runtimes.
type RuntimesBody struct {
	Runtimes []RuntimeJSON `json:"runtimes"`
	// KernelTables are the TorchTPU kernel tables kept, newest first.
	KernelTables []data.KernelTable `json:"kernel_tables"`
}

// Runtimes serves GET /api/v1/runtimes: every runtime with results
// (?target= for one target), newest first.
func (h *Handler) Runtimes(c *fiber.Ctx) error {
	return h.targetJSON(c, "web: api runtimes", func(ctx context.Context, target compat.Target, changed time.Time) (any, error) {
		rts, err := h.Data.Runtimes(ctx, target, changed)
		if err != nil {
			return nil, err
		}
		out := RuntimesBody{Runtimes: make([]RuntimeJSON, len(rts))}
		for i, st := range rts {
			out.Runtimes[i] = toRuntimeJSON(st)
		}
		out.KernelTables, err = h.Data.KernelTables(ctx)
		return out, err
	})
}

// targetJSON answers a GET of ?target= whose body depends only on its URL
// and the data's version: 304 when If-None-Match names it, else build's
// answer for the target at that version; what names the route in errors.
func (h *Handler) targetJSON(c *fiber.Ctx, what string, build func(ctx context.Context, target compat.Target, changed time.Time) (any, error)) error {
	target, err := httpx.ParseTarget(c.Query("target"))
	if err != nil {
		return err
	}
	changed, fresh, err := cached.Check(c, h.Data, c.OriginalURL())
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if fresh {
		return cached.Unchanged(c)
	}
	out, err := build(c.UserContext(), target, changed)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return c.JSON(out)
}
