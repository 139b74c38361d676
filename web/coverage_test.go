package web

import (
	"context"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
	"github.com/google-pytorch/torchtpu-scanner/web/api"
)

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
