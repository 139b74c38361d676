package hub

import (
	"encoding/json"
	"fmt"
)

// ParseModels decodes a JSON array of models in the Hub's /api/models
// shape (a saved listing), field for field as ListModels reads a page.
func ParseModels(data []byte) ([]ModelInfo, error) {
	var items []apiModel
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("hub: listing: %w", err)
	}
	out := make([]ModelInfo, 0, len(items))
	for _, it := range items {
		out = append(out, it.info())
	}
	return out, nil
}
