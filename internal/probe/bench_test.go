package probe

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// BenchmarkHarnessOverhead measures what the harness's machinery costs: a
// probe's wall time (process start, stages, result file, Go supervision)
// against ../harness/bench_bare.py, a bare script that loads the same model and
// runs the same forward, numerics reference and generate. Both run in the
// same benchmark, alternating (probe, bare, bare, probe) so that a noisy
// neighbour hits both alike. Target: probe ≤ 1.15 × bare.
func BenchmarkHarnessOverhead(b *testing.B) {
	py := os.Getenv("SCANNER_PYTHON")
	if py == "" {
		b.Skip("SCANNER_PYTHON is not set (make bench sets it)")
	}
	dir := b.TempDir()
	cfg := `{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":64,"intermediate_size":128,` +
		`"num_attention_heads":4,"num_key_value_heads":2,"num_hidden_layers":2,"vocab_size":256,"max_position_embeddings":256,` +
		`"bos_token_id":1,"eos_token_id":2}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	r, err := NewRunner(Config{Python: py, MemLimitBytes: 8 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	bare, err := filepath.Abs("../harness/bench_bare.py")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	probeOnce := func() time.Duration {
		start := time.Now()
		res := r.Probe(ctx, Request{ModelID: "bench/llama", Revision: "bench", SnapshotDir: dir, Task: "text-generation",
			Target: compat.TargetCPU, Mode: compat.ModeArch, NoCompile: true})
		if res.Status != compat.StatusPass {
			b.Fatalf("probe: %s %v", res.Status, res.Message)
		}
		return time.Since(start)
	}
	bareOnce := func() time.Duration {
		start := time.Now()
		cmd := exec.CommandContext(ctx, py, bare, "--model-dir", dir, "--target", "cpu", "--mode", "arch",
			"--task", "text-generation", "--no-compile")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "HF_HUB_OFFLINE=1", "PYTHONDONTWRITEBYTECODE=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("bare: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	for i := 0; i < b.N; i++ {
		probeOnce() // warm the page cache for both
		var p, q time.Duration
		p += probeOnce()
		q += bareOnce()
		q += bareOnce()
		p += probeOnce()
		b.ReportMetric(p.Seconds()/2, "probe_s")
		b.ReportMetric(q.Seconds()/2, "bare_s")
		b.ReportMetric(p.Seconds()/q.Seconds(), "overhead_ratio")
		b.Logf("probe %.2fs, bare %.2fs: overhead %.3fx (target <= 1.15x)", p.Seconds()/2, q.Seconds()/2, p.Seconds()/q.Seconds())
	}
}
