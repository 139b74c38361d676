package api

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// SummaryBody is GET /api/v1/summary: the store's headline plus
// (extensions) the target it is for and the scheduler's state.
type SummaryBody struct {
	Models           int                   `json:"models"`
	Tested           int                   `json:"tested"`
	Counts           map[compat.Status]int `json:"counts"`
	PassRate         *float64              `json:"pass_rate"` // pass ÷ tested; null when none
	WeightedPassRate *float64              `json:"download_weighted_pass_rate"`
	LastScan         *scanJSON             `json:"last_scan"`
	Runtime          *compat.Runtime       `json:"runtime"` // of the most recent result
	Target           string                `json:"target"`
	Scan             data.ScanState        `json:"scan_state"`
	Coverage         data.CoverageBody     `json:"coverage"`
	Fit              data.FitSummary       `json:"readiness"` // models that fit one device per TPU generation
	// The pass figures tier by tier of evidence (issue 37), each from its
	// own results only, whatever ?target= says: measured on each target,
	// predicted (the TorchTPU predictions' figures; null when no model has one), and the headline's
	// answer in words.
	Measured  map[compat.Target]data.Figures `json:"measured"`
	Predicted *data.Figures                  `json:"predicted"`
	Headline  string                         `json:"headline"`
}

func newSummaryBody(sum store.Summary, target compat.Target, state data.ScanState, byTarget map[compat.Target]store.Summary, pred store.Predicted) SummaryBody {
	h := data.NewHeadline(byTarget, pred)
	b := SummaryBody{Models: sum.Models, Tested: sum.Tested, Counts: sum.Counts, PassRate: sum.PassRate,
		WeightedPassRate: sum.WeightedPassRate, Runtime: sum.Runtime, Target: string(target), Scan: state,
		Fit: data.NewFitSummary(sum.Fit), Coverage: data.NewCoverageBody(data.TaskCoverage(sum.Tasks)),
		Measured: map[compat.Target]data.Figures{}, Predicted: h.Predicted, Headline: h.Sentence()}
	for _, t := range compat.Targets {
		b.Measured[t] = data.MeasuredFigures(t, byTarget[t])
	}
	if sum.LastScan != nil {
		sc := newScanJSON(*sum.LastScan)
		b.LastScan = &sc
	}
	return b
}

// Summary serves GET /api/v1/summary: counts per status, pass rates,
// the last scan and runtime versions.
func (h *Handler) Summary(c *fiber.Ctx) error {
	target, err := httpx.ParseTarget(c.Query("target"))
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	sum, err := h.Data.Store.Summary(ctx, target)
	if err != nil {
		return fmt.Errorf("web: api summary: %w", err)
	}
	changed, err := h.Data.Changed(ctx)
	if err != nil {
		return fmt.Errorf("web: api summary: %w", err)
	}
	byTarget, err := h.Data.TargetSummaries(ctx, changed)
	if err != nil {
		return fmt.Errorf("web: api summary: %w", err)
	}
	pred, err := h.Data.Predicted(ctx, changed)
	if err != nil {
		return fmt.Errorf("web: api summary: %w", err)
	}
	return c.JSON(newSummaryBody(sum, target, data.StateOf(h.scans), byTarget, pred))
}

// FailuresBody is GET /api/v1/failures.
type FailuresBody struct {
	Target   string         `json:"target"`
	Failures []FailureGroup `json:"failures"`
}

// FailureGroup is one root cause and what it blocks, as the API shows it.
type FailureGroup struct {
	Signature     string              `json:"signature"`
	FailureClass  compat.FailureClass `json:"failure_class"`
	Op            *string             `json:"op"`
	Models        int                 `json:"models"`
	Downloads     int64               `json:"downloads"`
	DownloadShare float64             `json:"download_share"` // of all known models' downloads
	Examples      []string            `json:"examples"`       // a few model ids
	// KnownIssue is where the signature is tracked (--known-issues), null if not.
	KnownIssue *compat.KnownIssue `json:"known_issue"`
}

// Failures serves GET /api/v1/failures: failure signatures with the
// models they block and those models' summed downloads.
func (h *Handler) Failures(c *fiber.Ctx) error {
	target, err := httpx.ParseTarget(c.Query("target"))
	if err != nil {
		return err
	}
	limit, err := httpx.ParseLimit(c.Query("limit"), 100)
	if err != nil {
		return err
	}
	groups, err := h.Data.Store.Failures(c.UserContext(), target, limit)
	if err != nil {
		return fmt.Errorf("web: api failures: %w", err)
	}
	out := FailuresBody{Target: string(target), Failures: make([]FailureGroup, len(groups))}
	for i, g := range groups {
		out.Failures[i] = FailureGroup{Signature: g.Signature, FailureClass: g.FailureClass, Op: g.Op, Models: g.Models,
			Downloads: g.Downloads, DownloadShare: g.DownloadShare, Examples: g.Examples, KnownIssue: h.Known.Table().Match(g.Signature)}
	}
	return c.JSON(out)
}
