package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
)

// A fleet worker's serving verdict (fleet.ResultRequest.Serving, for a
// job that asked for it) is stored with the job's result, in the same
// transaction and as a local scan's: its own table, a serving change of
// its own kind, dated by the server's clock. An invalid one refuses the
// whole result (the lease stays), and nothing is stored.
func TestCompleteJobStoresTheServingVerdict(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.UpsertModels(ctx, []ModelUpsert{{ID: "q/llama", SHA: "sha"}}); err != nil {
		t.Fatal(err)
	}
	scanID, err := s.StartScan(ctx, Scan{Trigger: "test", Target: "cpu", Runtime: wrtA})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueJobs(ctx, scanID, []NewJob{{RuntimeKey: wrtA.RetestKey(), Job: fleet.Job{ModelID: "q/llama", Revision: "sha",
		Target: compat.TargetCPU, Mode: compat.ModeFull, Files: []string{"config.json"}, TimeoutS: 60, Serve: true}}}); err != nil {
		t.Fatal(err)
	}
	leases, _, err := s.LeaseJobs(ctx, worker("a", wrtA), 1, wt0, wttl)
	if err != nil || len(leases) != 1 || !leases[0].Job.Serve {
		t.Fatalf("leases %+v %v: want the job, asking for a serving probe", leases, err)
	}
	req := resultFor(leases[0], compat.StatusPass, wt0)
	req.WorkerID = "a"
	req.Serving = &compat.ServingMeasured{Evidence: "measured", Status: "served", TensorParallelSize: 1, MeasuredAt: wt0}
	if _, err := s.CompleteJob(ctx, req, wt0.Add(time.Second)); !errors.Is(err, fleet.ErrBadResult) {
		t.Fatalf("an invalid serving verdict: %v", err)
	}
	if _, err := s.ServingResult(ctx, "q/llama"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a refused result stored its serving verdict: %v", err)
	}
	tps := 40.0
	req.Serving = &compat.ServingMeasured{Evidence: "measured", Status: "pass", TensorParallelSize: 1, MaxModelLen: 256,
		MeasuredAt: wt0.Add(time.Minute), Metrics: compat.ServingMetrics{TokensPerS: &tps},
		Runtime: compat.ServingRuntime{VLLMTorchTPU: compat.Ptr("0.29.0")}, Revision: "not-the-job's"}
	out, err := s.CompleteJob(ctx, req, wt0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.ServingResult(ctx, "q/llama")
	if err != nil || got.Status != "pass" || got.Metrics.TokensPerS == nil || *got.Metrics.TokensPerS != 40 ||
		!got.MeasuredAt.Equal(wt0.Add(2*time.Second)) || out.Serving == nil {
		t.Fatalf("stored %+v (%v), outcome %+v: the worker's pass, dated by the server", got, err, out.Serving)
	}
	evs, err := s.ModelEvents(ctx, "q/llama", 10)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[compat.EventKind]int{}
	for _, e := range evs {
		kinds[e.Kind]++
		if e.Serving() && e.Revision != "sha" {
			t.Errorf("serving change at revision %q: want the job's, sha", e.Revision)
		}
	}
	if kinds[compat.EventServingNew] != 1 || kinds[compat.EventNew] != 1 {
		t.Errorf("events %v: the result's new and the serving verdict's serving_new", kinds)
	}
}
