package api

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
)

// Sweep serves GET /api/v1/sweep: how many models of Google's sweep get a
// real verdict on the target, per task; the scanner's own errors are its gap.
func (h *Handler) Sweep(c *fiber.Ctx) error {
	return h.targetJSON(c, "web: api sweep", func(ctx context.Context, target compat.Target, changed time.Time) (any, error) {
		cov, err := h.Data.Sweep(ctx, target, changed)
		if err != nil {
			return nil, err
		}
		return data.NewSweepBody(target, h.Data.SweepList.Source, cov), nil
	})
}
