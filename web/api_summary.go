package web

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// summaryBody is GET /api/v1/summary: the store's headline plus
// (extensions) the target it is for and the scheduler's state.
type summaryBody struct {
	Models           int                   `json:"models"`
	Tested           int                   `json:"tested"`
	Counts           map[compat.Status]int `json:"counts"`
	PassRate         *float64              `json:"pass_rate"` // pass ÷ tested; null when none
	WeightedPassRate *float64              `json:"download_weighted_pass_rate"`
	LastScan         *scanJSON             `json:"last_scan"`
	Runtime          *compat.Runtime       `json:"runtime"` // of the most recent result
	Target           string                `json:"target"`
	Scan             ScanState             `json:"scan_state"`
	Fit              fitSummary            `json:"readiness"` // models that fit one device per TPU generation
}

func newSummaryBody(sum store.Summary, target compat.Target, state ScanState) summaryBody {
	b := summaryBody{Models: sum.Models, Tested: sum.Tested, Counts: sum.Counts, PassRate: sum.PassRate,
		WeightedPassRate: sum.WeightedPassRate, Runtime: sum.Runtime, Target: string(target), Scan: state,
		Fit: newFitSummary(sum.Fit)}
	if sum.LastScan != nil {
		sc := newScanJSON(*sum.LastScan)
		b.LastScan = &sc
	}
	return b
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
	return c.JSON(newSummaryBody(sum, target, s.scanState()))
}

// failuresBody is GET /api/v1/failures.
type failuresBody struct {
	Target   string         `json:"target"`
	Failures []failureGroup `json:"failures"`
}

// failureGroup is one root cause and what it blocks, as the API shows it.
type failureGroup struct {
	Signature     string              `json:"signature"`
	FailureClass  compat.FailureClass `json:"failure_class"`
	Op            *string             `json:"op"`
	Models        int                 `json:"models"`
	Downloads     int64               `json:"downloads"`
	DownloadShare float64             `json:"download_share"` // of all known models' downloads
	Examples      []string            `json:"examples"`       // a few model ids
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
	out := failuresBody{Target: string(target), Failures: make([]failureGroup, len(groups))}
	for i, g := range groups {
		out.Failures[i] = failureGroup(g)
	}
	return c.JSON(out)
}
