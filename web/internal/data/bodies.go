package data

import (
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/internal/sweep"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// SweepBody is GET /api/v1/sweep: the scanner's coverage of Google's own
// TorchTPU Hugging Face sweep (internal/sweep) on a target, from the store's
// current results.
type SweepBody struct {
	Target string       `json:"target"`
	Source sweep.Source `json:"source"`
	sweep.Counts
	Share *float64    `json:"share"` // verdicts ÷ models; null when none
	Tasks []SweepTask `json:"tasks"`
	Gaps  []sweep.Gap `json:"gaps"`
}

// SweepTask is one task's coverage, with its share.
type SweepTask struct {
	sweep.TaskCounts
	Share *float64 `json:"share"`
}

func NewSweepBody(target compat.Target, src sweep.Source, cov sweep.Coverage) SweepBody {
	b := SweepBody{Target: string(target), Source: src, Counts: cov.Counts, Share: cov.Share(),
		Tasks: make([]SweepTask, len(cov.Tasks)), Gaps: cov.Gaps}
	for i, t := range cov.Tasks {
		b.Tasks[i] = SweepTask{TaskCounts: t, Share: t.Share()}
	}
	if b.Gaps == nil {
		b.Gaps = []sweep.Gap{}
	}
	return b
}

// CoverageBody is which share of the listed transformers-backed models
// (and of their downloads) falls in a task the harness exercises.
type CoverageBody struct {
	Models           int      `json:"models"`  // transformers-backed models
	Covered          int      `json:"covered"` // of them, in a task the harness exercises
	Share            *float64 `json:"share"`   // covered ÷ models; null when none
	Downloads        int64    `json:"downloads"`
	CoveredDownloads int64    `json:"covered_downloads"`
	DownloadShare    *float64 `json:"download_share"`
}

// TaskCoverage is the coverage figure of the stored models' task tallies.
// A model is transformers-backed by harness.TransformersModel; without a
// library name (or for sentence-transformers) its config.json's
// model_type is what decides, which the store knows only through the
// model's newest result: preflight accepted it (a result other than
// skipped unsupported_library) or not. An untested model without a
// library name is left out until then.
func TaskCoverage(tallies []store.TaskTally) harness.TaskCoverage {
	var c harness.TaskCoverage
	for _, t := range tallies {
		hasModelType := !t.LibraryRejected && (t.Library != "" || t.Tested)
		c.Add(t.Library, hasModelType, t.Task, nil, t.Models, t.Downloads)
	}
	return c
}

func NewCoverageBody(c harness.TaskCoverage) CoverageBody {
	return CoverageBody{Models: c.Models, Covered: c.Covered, Share: c.Share(), Downloads: c.Downloads,
		CoveredDownloads: c.CoveredDownloads, DownloadShare: c.DownloadShare()}
}
