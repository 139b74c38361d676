package scan

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// Simulated costs of the scan benchmark: each model's download takes
// benchFetch on the fake Hub, each probe holds the device for benchProbe.
const (
	benchModels = 200
	benchFetch  = 20 * time.Millisecond
	benchProbe  = 25 * time.Millisecond
)

func benchHub(b *testing.B) *hubtest.Hub {
	repos := make([]hubtest.Repo, benchModels)
	for i := range repos {
		repos[i] = hubtest.Repo{
			ID: fmt.Sprintf("bench/model-%03d", i), PipelineTag: "text-generation", Library: "transformers",
			Downloads: int64(benchModels - i), Config: map[string]any{"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama"},
			Files: map[string][]byte{"config.json": []byte(`{"architectures":["LlamaForCausalLM"],"model_type":"llama"}`)},
		}
	}
	h := hubtest.New(b, repos...)
	h.Fault("/bench/", hubtest.Slow(benchFetch).Times(-1)) // every file download is slow
	return h
}

// BenchmarkScanDeviceBusy runs a scan of 200 models against the fake Hub
// (each download delayed) with a stand-in harness of fixed duration, and a
// naive download-then-probe loop over the same models in the same run. It
// reports both device-busy fractions and the scheduler's overhead per model.
func BenchmarkScanDeviceBusy(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ctx := context.Background()
		h := benchHub(b)
		client, err := hub.New(hub.Options{Endpoint: h.URL(), CacheDir: filepath.Join(b.TempDir(), "hub")})
		if err != nil {
			b.Fatal(err)
		}
		prober := &fakeProber{answers: map[string][]compat.Status{}, delay: benchProbe, runtime: compat.Runtime{Torch: "bench"}}
		s := &Scanner{Hub: client, Prober: prober, Store: storetest.MustOpen(b), CacheDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler)}

		b.StartTimer()
		start := time.Now()
		sc, err := s.Run(ctx, Options{Limit: benchModels, Mode: compat.ModeArch, Target: compat.TargetCPU}, Hooks{})
		wall := time.Since(start)
		b.StopTimer()
		if err != nil || sc.Probed != benchModels || sc.DeviceBusy == nil {
			b.Fatalf("scan: %v, %+v", err, sc)
		}
		busy := time.Duration(benchModels) * benchProbe

		// The naive loop, on a fresh cache so it downloads as much.
		naiveClient, _ := hub.New(hub.Options{Endpoint: h.URL(), CacheDir: filepath.Join(b.TempDir(), "naive")})
		models, err := naiveClient.ListModels(ctx, hub.ListOptions{Limit: benchModels})
		if err != nil {
			b.Fatal(err)
		}
		naiveStart := time.Now()
		var naiveBusy time.Duration
		for _, m := range models {
			dir, err := naiveClient.Download(ctx, m.ID, m.SHA, []string{"config.json"})
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			prober.Probe(ctx, probe.Request{ModelID: m.ID, Revision: m.SHA, SnapshotDir: dir, Target: compat.TargetCPU, Mode: compat.ModeArch})
			naiveBusy += time.Since(t0)
		}
		naiveWall := time.Since(naiveStart)

		b.ReportMetric(*sc.DeviceBusy, "busy_fraction")
		b.ReportMetric(naiveBusy.Seconds()/naiveWall.Seconds(), "naive_busy_fraction")
		b.ReportMetric(float64(wall-busy)/float64(time.Millisecond)/benchModels, "overhead_ms/model")
		b.Logf("pipelined: %d models in %v, device busy %.2f; naive download-then-probe: %v, busy %.2f",
			benchModels, wall.Round(time.Millisecond), *sc.DeviceBusy, naiveWall.Round(time.Millisecond), naiveBusy.Seconds()/naiveWall.Seconds())
	}
}
