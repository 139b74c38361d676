package hub

import (
	"context"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/config"
)

// TestListModelsDefaultLimit: without a positive Limit, a listing brings
// config.DefaultLimit (100, the contract's --limit) models.
func TestListModelsDefaultLimit(t *testing.T) {
	e := newEnv(t, nil, manyRepos(150)...)
	for _, limit := range []int{0, -5} {
		got, err := e.c.ListModels(context.Background(), ListOptions{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != config.DefaultLimit {
			t.Errorf("Limit %d: %d models, want %d", limit, len(got), config.DefaultLimit)
		}
	}
}

// TestSortsAreConfigs: the Hub's sort keys are mapped for exactly the words
// --sort takes (config.Sorts), and nothing else is a sort.
func TestSortsAreConfigs(t *testing.T) {
	if len(sortKeys) != len(config.Sorts) {
		t.Errorf("sort keys %v, --sort words %v", sortKeys, config.Sorts)
	}
	for _, s := range config.Sorts {
		if _, err := sortParam(s); err != nil {
			t.Errorf("--sort %s: %v", s, err)
		}
	}
	for _, s := range []string{"trendingScore", "trending_score", "Downloads", " likes", "stars"} {
		if key, err := sortParam(s); err == nil {
			t.Errorf("sort %q is %q, want refused as config.Validate refuses it", s, key)
		}
	}
	if key, err := sortParam(""); err != nil || key != "downloads" {
		t.Errorf("no sort: %q %v, want the default, downloads", key, err)
	}
}
