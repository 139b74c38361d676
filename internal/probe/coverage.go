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

// Coverage counts how many models of a listing fall in a task the harness
// supports (SupportedTask on their pipeline tag, or their architectures
// when they have none), out of all of them.
func Coverage(listing []hub.ModelInfo) (supported, total int) {
	for _, m := range listing {
		if SupportedTask(m.PipelineTag, architectures(m.Config)) {
			supported++
		}
	}
	return supported, len(listing)
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
