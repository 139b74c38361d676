package hub

import (
	"context"
	"testing"
)

// TestListModelsDefaultLimit: without a positive Limit, a listing brings
// DefaultListLimit (100) models.
func TestListModelsDefaultLimit(t *testing.T) {
	e := newEnv(t, nil, manyRepos(150)...)
	for _, limit := range []int{0, -5} {
		got, err := e.c.ListModels(context.Background(), ListOptions{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != DefaultListLimit {
			t.Errorf("Limit %d: %d models, want %d", limit, len(got), DefaultListLimit)
		}
	}
}
