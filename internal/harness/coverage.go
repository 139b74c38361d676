package probe

import (
	"fmt"
	"os"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
)

// LoadListing reads a saved Hub listing (GET /api/models with config
// expanded) with the hub package's own parser.
func LoadListing(path string) ([]hub.ModelInfo, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("listing: %w", err)
	}
	l, err := hub.ParseModels(data)
	if err != nil {
		return nil, fmt.Errorf("listing: %s: %w", path, err)
	}
	return l, nil
}

// TaskCoverage is which share of a set of transformers-backed models (and
// of their downloads) falls in a task the harness exercises.
type TaskCoverage struct {
	Models           int   // transformers-backed models
	Covered          int   // of them, those whose task the harness exercises
	Downloads        int64 // the Models' downloads
	CoveredDownloads int64 // the Covered ones' downloads
}

// Add counts n models with downloads in all: those of a transformers
// library (TransformersModel) are counted, and covered when the harness
// supports their pipeline tag (or, without one, their architectures).
func (c *TaskCoverage) Add(library string, hasModelType bool, task string, architectures []string, n int, downloads int64) {
	if !TransformersModel(library, hasModelType) {
		return
	}
	c.Models += n
	c.Downloads += downloads
	if SupportedTask(task, architectures) {
		c.Covered += n
		c.CoveredDownloads += downloads
	}
}

// Share is Covered ÷ Models, nil when there are none.
func (c TaskCoverage) Share() *float64 {
	if c.Models == 0 {
		return nil
	}
	r := float64(c.Covered) / float64(c.Models)
	return &r
}

// DownloadShare is CoveredDownloads ÷ Downloads, nil when there are none.
func (c TaskCoverage) DownloadShare() *float64 {
	if c.Downloads == 0 {
		return nil
	}
	r := float64(c.CoveredDownloads) / float64(c.Downloads)
	return &r
}

// Coverage is the task coverage of a Hub listing (with config expanded).
func Coverage(listing []hub.ModelInfo) TaskCoverage {
	var c TaskCoverage
	for _, m := range listing {
		mt, _ := m.Config["model_type"].(string)
		c.Add(m.Library, mt != "", m.PipelineTag, architectures(m.Config), 1, m.Downloads)
	}
	return c
}

// ListedCandidate is what preflight can know of a model from its Hub
// listing alone: its tags, library, gating and the listing's excerpt of
// config.json (the scan adds the mode, and config.json once downloaded).
func ListedCandidate(m hub.ModelInfo, hasToken bool) Candidate {
	return Candidate{
		ID: m.ID, Revision: m.SHA, Task: m.PipelineTag, Library: m.Library, Tags: m.Tags,
		Gated: m.Gated, HasToken: hasToken, Disabled: m.Disabled, Config: m.Config,
	}
}
