package web

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/store"
)

// summaryBody is GET /api/v1/summary: the store's headline plus
// (extensions) the target it is for and the scheduler's state.
type summaryBody struct {
	store.Summary
	Target string    `json:"target"`
	Scan   ScanState `json:"scan_state"`
}

// apiSummary serves GET /api/v1/summary: counts per status, pass rates,
// the last scan and runtime versions.
func (s *Server) apiSummary(c *fiber.Ctx) error {
	target, err := parseTarget(c.Query("target"))
	if err != nil {
		return err
	}
	sum, err := s.store.Summary(c.UserContext(), target)
	if err != nil {
		return fmt.Errorf("web: api summary: %w", err)
	}
	return c.JSON(summaryBody{Summary: sum, Target: string(target), Scan: s.scanState()})
}

// failuresBody is GET /api/v1/failures.
type failuresBody struct {
	Target   string               `json:"target"`
	Failures []store.FailureGroup `json:"failures"`
}

// apiFailures serves GET /api/v1/failures: failure signatures with the
// models they block and those models' summed downloads.
func (s *Server) apiFailures(c *fiber.Ctx) error {
	target, err := parseTarget(c.Query("target"))
	if err != nil {
		return err
	}
	limit, err := parseLimit(c.Query("limit"), 100)
	if err != nil {
		return err
	}
	groups, err := s.store.Failures(c.UserContext(), target, limit)
	if err != nil {
		return fmt.Errorf("web: api failures: %w", err)
	}
	if groups == nil {
		groups = []store.FailureGroup{}
	}
	return c.JSON(failuresBody{Target: string(target), Failures: groups})
}
