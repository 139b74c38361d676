package harness

import "testing"

// TestTaskCoverageShares: only transformers-backed models count, covered
// ones by their task (or, untagged, their architecture), and the shares
// are covered over counted, by models and by downloads.
func TestTaskCoverageShares(t *testing.T) {
	var c TaskCoverage
	if c.Share() != nil || c.DownloadShare() != nil {
		t.Fatalf("no models: shares %v, %v, want none", c.Share(), c.DownloadShare())
	}
	c.Add("transformers", true, "text-generation", nil, 3, 600)            // counted, covered
	c.Add("transformers", false, "text-to-image", nil, 1, 200)             // counted, not covered
	c.Add("", true, "", []string{"BertModel"}, 1, 200)                     // counted, covered by its architecture
	c.Add("diffusers", true, "text-to-image", nil, 5, 10_000)              // not transformers: not counted
	c.Add("sentence-transformers", false, "feature-extraction", nil, 7, 7) // no model_type: not counted
	want := TaskCoverage{Models: 5, Covered: 4, Downloads: 1000, CoveredDownloads: 800}
	if c != want {
		t.Fatalf("coverage %+v, want %+v", c, want)
	}
	if s := c.Share(); s == nil || *s != 0.8 {
		t.Errorf("share %v, want 0.8", s)
	}
	if s := c.DownloadShare(); s == nil || *s != 0.8 {
		t.Errorf("download share %v, want 0.8", s)
	}
	// Models without downloads: a model share, but no download share.
	quiet := TaskCoverage{Models: 2, Covered: 1}
	if s := quiet.Share(); s == nil || *s != 0.5 || quiet.DownloadShare() != nil {
		t.Errorf("no downloads: shares %v, %v, want 0.5 and none", s, quiet.DownloadShare())
	}
}
