package probe

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// ListedModel is one model of a Hub listing (GET /api/models with
// config expanded), limited to the fields preflight looks at.
type ListedModel struct {
	ID          string   `json:"id"`
	PipelineTag string   `json:"pipeline_tag"`
	LibraryName string   `json:"library_name"`
	Tags        []string `json:"tags"`
	Downloads   int64    `json:"downloads"`
	// Gated is false, or the Hub's "auto" or "manual".
	Gated  any `json:"gated"`
	Config *struct {
		Architectures []string `json:"architectures"`
		ModelType     string   `json:"model_type"`
	} `json:"config"`
}

// IsGated reports whether the listing marks the model gated.
func (m ListedModel) IsGated() bool {
	switch g := m.Gated.(type) {
	case bool:
		return g
	case string:
		return g != "" && g != "false"
	}
	return false
}

// Architectures are the model's config.json architectures, if listed.
func (m ListedModel) Architectures() []string {
	if m.Config == nil {
		return nil
	}
	return m.Config.Architectures
}

// LoadListing reads a JSON array of ListedModel (a saved Hub listing).
func LoadListing(path string) ([]ListedModel, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("listing: %w", err)
	}
	var l []ListedModel
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("listing: %s: %w", path, err)
	}
	return l, nil
}

// Coverage counts how many models of a listing fall in a task the harness
// supports (SupportedTask on their pipeline tag, or their architectures
// when they have none), out of all of them.
func Coverage(listing []ListedModel) (supported, total int) {
	for _, m := range listing {
		if SupportedTask(m.PipelineTag, m.Architectures()) {
			supported++
		}
	}
	return supported, len(listing)
}

// Candidate turns a listed model into a preflight candidate, as far as the
// listing knows it (no weight files, no token).
func (m ListedModel) Candidate(mode compat.Mode) Candidate {
	c := Candidate{
		ID:      m.ID,
		Task:    m.PipelineTag,
		Library: m.LibraryName,
		Tags:    m.Tags,
		Gated:   m.IsGated(),
		Mode:    mode,
	}
	if m.Config != nil {
		c.Config = map[string]any{}
		if m.Config.ModelType != "" {
			c.Config["model_type"] = m.Config.ModelType
		}
		if m.Config.Architectures != nil {
			archs := make([]any, len(m.Config.Architectures))
			for i, a := range m.Config.Architectures {
				archs[i] = a
			}
			c.Config["architectures"] = archs
		}
	}
	return c
}
