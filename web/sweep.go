package web

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/sweep"
	"github.com/google-pytorch/torchtpu-scanner/store"
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
	cov, err := s.cachedSweep(ctx, target, changed)
	if err != nil {
		return fmt.Errorf("web: api sweep: %w", err)
	}
	return c.JSON(newSweepBody(target, s.sweepList.Source, cov))
}

// cachedSweep is the sweep's coverage on target, recomputed when the data
// changes (each model's current result, as its page shows it). Read only.
func (s *Server) cachedSweep(ctx context.Context, target compat.Target, changed time.Time) (sweep.Coverage, error) {
	return s.sweeps.Do(string(target), changed, func() (sweep.Coverage, int, error) {
		return s.measureSweep(ctx, target)
	})
}

// measureSweep is the sweep's coverage on target, and its estimated size.
func (s *Server) measureSweep(ctx context.Context, target compat.Target) (sweep.Coverage, int, error) {
	results := make(map[string]*compat.Result, len(s.sweepList.Models))
	for _, m := range s.sweepList.Models {
		got, err := s.store.GetModel(ctx, m.ModelID, target)
		if errors.Is(err, store.ErrNotFound) {
			continue // not listed yet: untested
		}
		if err != nil {
			return sweep.Coverage{}, 0, err
		}
		results[m.ModelID] = got.Result
	}
	v := sweep.Measure(s.sweepList, func(id string) *compat.Result { return results[id] })
	return v, 256 * len(s.sweepList.Models), nil
}
