package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving/measure"
)

// ServeProbe runs the measured serving probe (internal/serving/measure) on
// the snapshot an ordinary probe (res) fetched: `scanner probe MODEL
// --vllm-python PATH`. vLLM needs the real weights and the tokenizer, so
// res must be a full-mode probe; its tensor_parallel_size is the devices
// that probe ran on, rounded up to a power of two (serving.TensorParallel).
func ServeProbe(ctx context.Context, cfg config.Config, id string, res compat.Result) (measure.Result, error) {
	return ServeProbeIn(ctx, cfg, hub.SnapshotDir(cfg.CacheDir, id, res.Revision), res)
}

// ServeProbeIn is ServeProbe on the snapshot in dir (a scan's, where its
// probe found the files): a scan's serving probe (scan.Scanner.ServeProbe)
// and a fleet worker's. When res shows that the transformers CPU reference
// cannot run the model (measure.WithoutReference), the serving probe is
// not run: its verdict is not judged (skipped, reason no_reference).
func ServeProbeIn(ctx context.Context, cfg config.Config, dir string, res compat.Result) (measure.Result, error) {
	if cfg.VLLMPython == "" {
		return measure.Result{}, errors.New("no --vllm-python")
	}
	if res.Mode == nil || *res.Mode != compat.ModeFull {
		return measure.Result{}, fmt.Errorf("the serving probe needs the real weights: the probe ran in %s mode (pass --mode full)",
			modeOf(res))
	}
	tp := serving.TensorParallel(max(res.DevicesUsed, 1))
	if why, none := measure.WithoutReference(res); none { // no tokens to hold vLLM's to: not judged, not run
		return measure.NoReference(tp, why), nil
	}
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		return measure.Result{}, fmt.Errorf("the serving probe needs the model's snapshot: %w", err)
	}
	return measure.Run(ctx, measure.Request{VLLMPython: cfg.VLLMPython, Python: pythonOf(cfg), ModelDir: dir,
		TensorParallel: tp, Timeout: cfg.Timeout}), nil
}

func modeOf(r compat.Result) string {
	if r.Mode == nil {
		return "no"
	}
	return string(*r.Mode)
}

// serveProbeOf is the serving probe a scan and a fleet worker run after a
// model's probe (ServeProbeIn with cfg), nil without --vllm-python: one
// step, wired to both (scan.Scanner.ServeProbe, worker.Config.ServeProbe).
func serveProbeOf(cfg config.Config) func(ctx context.Context, dir string, res compat.Result) (compat.ServingMeasured, error) {
	if cfg.VLLMPython == "" {
		return nil
	}
	return func(ctx context.Context, dir string, res compat.Result) (compat.ServingMeasured, error) {
		return ServeProbeIn(ctx, cfg, dir, res)
	}
}
