package api

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// Sweep serves GET /api/v1/sweep: how many models of Google's sweep get a
// real verdict on the target, per task; the scanner's own errors are its gap.
func (h *Handler) Sweep(c *fiber.Ctx) error {
	target, err := httpx.ParseTarget(c.Query("target"))
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	changed, fresh, err := cached.Check(c, h.data.Store, c.OriginalURL())
	if err != nil {
		return fmt.Errorf("web: api sweep: %w", err)
	}
	if fresh {
		return cached.Unchanged(c)
	}
	cov, err := h.data.Sweep(ctx, target, changed)
	if err != nil {
		return fmt.Errorf("web: api sweep: %w", err)
	}
	return c.JSON(data.NewSweepBody(target, h.data.SweepList.Source, cov))
}
