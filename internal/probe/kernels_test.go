package probe

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
)

// TestPredict: a trace becomes a prediction off tpu and stays beside it
// (the store keeps it); a tpu result (measured) gets neither, a runner
// without a table keeps the trace alone.
func TestPredict(t *testing.T) {
	kt := compat.KernelTable{Torch: "2.15.0", TorchTPU: "0.2.0", Ops: map[string]string{
		"aten::addmm": compat.OpNative, "aten::median": compat.OpFallback}}
	r := &Runner{log: quietLogger(), found: &envCache{kernels: kernelCache{done: true, table: kt}}}
	trace := &compat.OpsTrace{Forward: []string{"aten::addmm", "aten::median"}}
	res := compat.Result{Target: compat.TargetCPU, OpsTraced: trace}
	r.predict(context.Background(), &res)
	if res.OpsTraced != trace || res.TPUOps == nil || !slices.Equal(res.TPUOps.Missing, []string{"aten::median"}) {
		t.Fatalf("cpu: trace %v, prediction %+v", res.OpsTraced, res.TPUOps)
	}
	tpu := compat.Result{Target: compat.TargetTPU, OpsTraced: trace}
	r.predict(context.Background(), &tpu)
	if tpu.TPUOps != nil || tpu.OpsTraced != nil {
		t.Errorf("tpu: %+v %+v", tpu.TPUOps, tpu.OpsTraced)
	}
	none := &Runner{log: quietLogger(), found: &envCache{kernels: kernelCache{done: true, err: os.ErrNotExist}}}
	res = compat.Result{Target: compat.TargetCPU, OpsTraced: trace}
	none.predict(context.Background(), &res)
	if res.TPUOps != nil || res.OpsTraced != trace {
		t.Errorf("no table: %+v %+v", res.TPUOps, res.OpsTraced)
	}
}

// realTable is the real torch_tpu's table, read once for the tests of
// this file (it imports torch_tpu: ~25 s on an idle host).
var realTable struct {
	once sync.Once
	r    *Runner // the runner that read it (closed after the first test: its cache stays)
	kt   compat.KernelTable
	err  error
}

// realKernelTable is a real runner and the table its KernelTable read
// (the first test to ask reads it; the others get the same).
func realKernelTable(t *testing.T) (*Runner, compat.KernelTable) {
	t.Helper()
	projectPython(t) // each test skips (or fails under make test) without the interpreter
	realTable.once.Do(func() {
		realTable.r = realRunner(t, func(c *Config) { c.EnvTimeout = 5 * time.Minute })
		realTable.kt, realTable.err = realTable.r.KernelTable(context.Background())
	})
	if realTable.err != nil {
		t.Fatalf("KernelTable: %v", realTable.err)
	}
	return realTable.r, realTable.kt
}

// TestRealKernelTable: the installed torch_tpu 0.2.0 read through the
// runner (issue 36's facts): at least 700 native ops, addmm among them,
// median a fallback; asked again, the runner answers from its cache.
func TestRealKernelTable(t *testing.T) {
	r, kt := realKernelTable(t)
	if kt.TorchTPU != "0.2.0" || kt.Count(compat.OpNative) < 700 {
		t.Errorf("%s: %d native", kt.Name(), kt.Count(compat.OpNative))
	}
	for op, want := range map[string]string{"aten::addmm": compat.OpNative, "aten::linear": compat.OpNative,
		"aten::median": compat.OpFallback, "aten::_scaled_dot_product_fused_attention_overrideable": compat.OpNative} {
		if got := kt.Ops[op]; got != want {
			t.Errorf("%s: %q, want %q", op, got, want)
		}
	}
	start := time.Now()
	again, err := r.KernelTable(context.Background())
	if err != nil || time.Since(start) > time.Second || !again.ReadAt.Equal(kt.ReadAt) {
		t.Errorf("asked again: %v after %s", err, time.Since(start))
	}
}

// TestRealKernelVersions: the versions the runner names without reading
// the table are the ones the table is kept under (torch's local tag
// included), in a fraction of the table's time; a table handed to a runner
// answers KernelTable with no read.
func TestRealKernelVersions(t *testing.T) {
	_, kt := realKernelTable(t)
	r := realRunner(t, func(c *Config) { c.EnvTimeout = 2 * time.Minute })
	start := time.Now()
	torch, tpu, err := r.KernelVersions(context.Background())
	took := time.Since(start)
	if err != nil || torch != kt.Torch || tpu != kt.TorchTPU {
		t.Fatalf("versions %q %q (%v), the table's %q %q", torch, tpu, err, kt.Torch, kt.TorchTPU)
	}
	t.Logf("kernel versions read in %s", took)
	if took > 10*time.Second {
		t.Errorf("the versions took %s: they import nothing", took)
	}
	r.UseKernelTable(kt)
	start = time.Now()
	got, err := r.KernelTable(context.Background())
	if err != nil || got.Name() != kt.Name() || time.Since(start) > time.Second {
		t.Errorf("handed a table: %s %v after %s", got.Name(), err, time.Since(start))
	}
}

// traceScript builds a tiny model whose forward dispatches aten::median and
// whose train step dispatches aten::nanmedian too (neither implemented by
// torch_tpu 0.2.0), traces it with the harness's tracer, and prints the trace.
const traceScript = `
import json, sys, os
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
sys.path.insert(0, sys.argv[1])
import torch, harness_ops as hops

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
    def forward(self, x):
        h = self.lin(x)
        return h - h.median()

m, x = Tiny(), torch.randn(2, 8)
t = hops.Tracer()
t.enabled = True
with torch.no_grad():
    t.call("forward", lambda: m(x))
def step():
    y = m(x)
    (y.sum() + torch.nanmedian(y)).backward()
t.call("train", step)
print(json.dumps(t.result()))
`

// TestRealPredictionOfMissingOps: a tiny model built to dispatch ops the
// real table lacks, traced by the harness's own tracer, is predicted to
// miss exactly those, the forward's and the train step's apart.
func TestRealPredictionOfMissingOps(t *testing.T) {
	r, kt := realKernelTable(t)
	dir, _, err := harness.Extract(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(r.python, "-I", "-c", traceScript, dir)
	cmd.Env = append(os.Environ(), "TORCH_DEVICE_BACKEND_AUTOLOAD=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("trace: %v", err)
	}
	var tr compat.OpsTrace
	if err := json.Unmarshal(out, &tr); err != nil {
		t.Fatalf("trace %q: %v", out, err)
	}
	p := harness.TPUOpsTable.Judge(kt, tr)
	if !slices.Equal(p.Missing, []string{"aten::median"}) || !slices.Equal(p.MissingTrain, []string{"aten::median", "aten::nanmedian"}) {
		t.Errorf("prediction %+v (trace %+v)", p, tr)
	}
	if p.Native == 0 || p.Traced < 3 {
		t.Errorf("prediction %+v", p)
	}
}
