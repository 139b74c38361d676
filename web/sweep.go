package web

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/sweep"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// sweepBody is GET /api/v1/sweep: the scanner's coverage of Google's own
// TorchTPU Hugging Face sweep (internal/sweep) on a target, from the store's
// current results.
type sweepBody struct {
	Target string       `json:"target"`
	Source sweep.Source `json:"source"`
	sweep.Counts
	Share *float64        `json:"share"` // verdicts ÷ models; null when none
	Tasks []sweepTaskJSON `json:"tasks"`
	Gaps  []sweep.Gap     `json:"gaps"`
}

// sweepTaskJSON is one task's coverage, with its share.
type sweepTaskJSON struct {
	sweep.TaskCounts
	Share *float64 `json:"share"`
}

func newSweepBody(target compat.Target, src sweep.Source, cov sweep.Coverage) sweepBody {
	b := sweepBody{Target: string(target), Source: src, Counts: cov.Counts, Share: cov.Share(),
		Tasks: make([]sweepTaskJSON, len(cov.Tasks)), Gaps: cov.Gaps}
	for i, t := range cov.Tasks {
		b.Tasks[i] = sweepTaskJSON{TaskCounts: t, Share: t.Share()}
	}
	if b.Gaps == nil {
		b.Gaps = []sweep.Gap{}
	}
	return b
}

// apiSweep serves GET /api/v1/sweep: how many models of Google's sweep get a
// real verdict on the target, per task; the scanner's own errors are its gap.
func (s *Server) apiSweep(c *fiber.Ctx) error {
	target, err := httpx.ParseTarget(c.Query("target"))
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	changed, fresh, err := cached.Check(c, s.store, c.OriginalURL())
	if err != nil {
		return fmt.Errorf("web: api sweep: %w", err)
	}
	if fresh {
		return cached.Unchanged(c)
	}
	cov, err := s.data.Sweep(ctx, target, changed)
	if err != nil {
		return fmt.Errorf("web: api sweep: %w", err)
	}
	return c.JSON(newSweepBody(target, s.data.SweepList.Source, cov))
}
