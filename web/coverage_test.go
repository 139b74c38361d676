package web

import (
	"context"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
	"github.com/google-pytorch/torchtpu-scanner/web/api"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
)

func TestTaskCoverage(t *testing.T) {
	tallies := []store.TaskTally{
		{Task: "text-generation", Library: "transformers", Models: 3, Downloads: 600},
		{Task: "zero-shot-image-classification", Library: "transformers", Tested: true, Models: 1, Downloads: 200},
		{Task: "text-to-image", Library: "transformers", Models: 1, Downloads: 100}, // backed, task not exercised
		{Task: "text-to-image", Library: "diffusers", Models: 5, Downloads: 5000},   // not transformers
		{Task: "sentence-similarity", Library: "sentence-transformers", Models: 1, Downloads: 50},
		{Task: "fill-mask", Library: "", Tested: true, Models: 1, Downloads: 40}, // no library, preflight took it
		{Task: "fill-mask", Library: "", Models: 1, Downloads: 30},               // no library, untested: unknown
		{Task: "", Library: "", Tested: true, LibraryRejected: true, Models: 1, Downloads: 20},
		{Task: "", Library: "transformers", Models: 1, Downloads: 10}, // no tag, untested
	}
	c := data.TaskCoverage(tallies)
	// backed: 3 + 1 + 1 + 1 + 1 + 1 = 8 models, 600+200+100+50+40+10 = 1000 downloads;
	// covered: all but text-to-image and the untagged one = 6 models, 890 downloads.
	if c.Models != 8 || c.Covered != 6 || c.Downloads != 1000 || c.CoveredDownloads != 890 {
		t.Errorf("coverage = %+v; want 8 models, 6 covered, 1000 downloads, 890 covered", c)
	}
	if s := c.Share(); s == nil || *s != 0.75 {
		t.Errorf("share = %v; want 0.75", s)
	}
	if empty := data.TaskCoverage(nil); empty.Share() != nil || empty.DownloadShare() != nil {
		t.Errorf("empty coverage shares = %v %v; want nil", empty.Share(), empty.DownloadShare())
	}
}

// TestCoverageInSummaryAndTable: the API and the table header carry the figure.
func TestCoverageInSummaryAndTable(t *testing.T) {
	db := storetest.MustOpen(t)
	ups := []store.ModelUpsert{
		{ID: "o/llm", Task: "text-generation", Library: "transformers", Downloads: 300},
		{ID: "o/clip", Task: "zero-shot-image-classification", Library: "transformers", Downloads: 100},
		{ID: "o/gen", Task: "text-to-image", Library: "transformers", Downloads: 100},
		{ID: "o/sd", Task: "text-to-image", Library: "diffusers", Downloads: 1000},
	}
	if err := db.UpsertModels(context.Background(), ups); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordResult(context.Background(), "o/llm", compat.Result{Target: "cpu", Status: "pass",
		Revision: "r", TestedAt: testTime, Runtime: storetest.Runtime}); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, 0, 0, Config{Store: db})
	sum := decode[api.SummaryBody](t, ts.get(t, "/api/v1/summary?target=tpu"))
	cov := sum.Coverage
	if cov.Models != 3 || cov.Covered != 2 || cov.Downloads != 500 || cov.CoveredDownloads != 400 ||
		cov.Share == nil || *cov.Share != 2.0/3 || cov.DownloadShare == nil || *cov.DownloadShare != 0.8 {
		t.Errorf("coverage = %+v; want 2 of 3 models, 400 of 500 downloads", cov)
	}
	page := ts.get(t, "/")
	if !strings.Contains(page.body, "Tasks covered") || !strings.Contains(page.body, "of 3 transformers models, 80") {
		t.Errorf("table header lacks the coverage figure:\n%s", page.body[:min(len(page.body), 3000)])
	}
}
