package web

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
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
	Coverage         coverageBody          `json:"coverage"`
	Fit              fitSummary            `json:"readiness"` // models that fit one device per TPU generation
	// The pass figures tier by tier of evidence (issue 37), each from its
	// own results only, whatever ?target= says: measured on each target,
	// predicted (the TorchTPU predictions' figures; null when no model has one), and the headline's
	// answer in words.
	Measured  map[compat.Target]data.Figures `json:"measured"`
	Predicted *data.Figures                  `json:"predicted"`
	Headline  string                         `json:"headline"`
}

// coverageBody is which share of the listed transformers-backed models
// (and of their downloads) falls in a task the harness exercises.
type coverageBody struct {
	Models           int      `json:"models"`  // transformers-backed models
	Covered          int      `json:"covered"` // of them, in a task the harness exercises
	Share            *float64 `json:"share"`   // covered ÷ models; null when none
	Downloads        int64    `json:"downloads"`
	CoveredDownloads int64    `json:"covered_downloads"`
	DownloadShare    *float64 `json:"download_share"`
}

// taskCoverage is the coverage figure of the stored models' task tallies.
// A model is transformers-backed by harness.TransformersModel; without a
// library name (or for sentence-transformers) its config.json's
// model_type is what decides, which the store knows only through the
// model's newest result: preflight accepted it (a result other than
// skipped unsupported_library) or not. An untested model without a
// library name is left out until then.
func taskCoverage(tallies []store.TaskTally) harness.TaskCoverage {
	var c harness.TaskCoverage
	for _, t := range tallies {
		hasModelType := !t.LibraryRejected && (t.Library != "" || t.Tested)
		c.Add(t.Library, hasModelType, t.Task, nil, t.Models, t.Downloads)
	}
	return c
}

func newCoverageBody(c harness.TaskCoverage) coverageBody {
	return coverageBody{Models: c.Models, Covered: c.Covered, Share: c.Share(), Downloads: c.Downloads,
		CoveredDownloads: c.CoveredDownloads, DownloadShare: c.DownloadShare()}
}

func newSummaryBody(sum store.Summary, target compat.Target, state ScanState, byTarget map[compat.Target]store.Summary, pred store.Predicted) summaryBody {
	h := data.NewHeadline(byTarget, pred)
	b := summaryBody{Models: sum.Models, Tested: sum.Tested, Counts: sum.Counts, PassRate: sum.PassRate,
		WeightedPassRate: sum.WeightedPassRate, Runtime: sum.Runtime, Target: string(target), Scan: state,
		Fit: newFitSummary(sum.Fit), Coverage: newCoverageBody(taskCoverage(sum.Tasks)),
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

// apiSummary serves GET /api/v1/summary: counts per status, pass rates,
// the last scan and runtime versions.
func (s *Server) apiSummary(c *fiber.Ctx) error {
	target, err := httpx.ParseTarget(c.Query("target"))
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	sum, err := s.store.Summary(ctx, target)
	if err != nil {
		return fmt.Errorf("web: api summary: %w", err)
	}
	changed, err := s.store.Changed(ctx)
	if err != nil {
		return fmt.Errorf("web: api summary: %w", err)
	}
	byTarget, err := s.data.TargetSummaries(ctx, changed)
	if err != nil {
		return fmt.Errorf("web: api summary: %w", err)
	}
	pred, err := s.data.Predicted(ctx, changed)
	if err != nil {
		return fmt.Errorf("web: api summary: %w", err)
	}
	return c.JSON(newSummaryBody(sum, target, s.scanState(), byTarget, pred))
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
	// KnownIssue is where the signature is tracked (--known-issues), null if not.
	KnownIssue *compat.KnownIssue `json:"known_issue"`
}

// apiFailures serves GET /api/v1/failures: failure signatures with the
// models they block and those models' summed downloads.
func (s *Server) apiFailures(c *fiber.Ctx) error {
	target, err := httpx.ParseTarget(c.Query("target"))
	if err != nil {
		return err
	}
	limit, err := httpx.ParseLimit(c.Query("limit"), 100)
	if err != nil {
		return err
	}
	groups, err := s.store.Failures(c.UserContext(), target, limit)
	if err != nil {
		return fmt.Errorf("web: api failures: %w", err)
	}
	out := failuresBody{Target: string(target), Failures: make([]failureGroup, len(groups))}
	for i, g := range groups {
		out.Failures[i] = failureGroup{Signature: g.Signature, FailureClass: g.FailureClass, Op: g.Op, Models: g.Models,
			Downloads: g.Downloads, DownloadShare: g.DownloadShare, Examples: g.Examples, KnownIssue: s.known.Table().Match(g.Signature)}
	}
	return c.JSON(out)
}
