package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
)

// maxKernelTableBytes bounds the kernel table's file (torch 2.15: 140 kB).
const maxKernelTableBytes = 16 << 20

// kernelCache is the kernel table this host's torch_tpu reads as, once: the
// interpreter does not change under a runner. err is kept too, so that a
// host without torch_tpu asks once, not once per probe.
type kernelCache struct {
	done  bool
	table compat.KernelTable
	err   error
}

// KernelTable reads which operators the installed torch_tpu implements
// (harness_kernels.py, in a process of its own, confined like the harness:
// the harness never imports torch_tpu on a host without a chip), once per
// runner and its ForDevice runners. The error says why there is none
// (torch_tpu not installed, failing to import).
func (r *Runner) KernelTable(ctx context.Context) (compat.KernelTable, error) {
	r.found.kmu.Lock()
	defer r.found.kmu.Unlock()
	if !r.found.kernels.done {
		t, err := r.readKernelTable(ctx)
		if ctx.Err() != nil { // interrupted: ask again next time
			return t, err
		}
		r.found.kernels = kernelCache{done: true, table: t, err: err}
		if err != nil {
			r.log.Warn("probe: no TorchTPU kernel table: results carry no tpu_ops prediction", "err", err)
		} else {
			r.log.Info("probe: TorchTPU kernel table", "table", t.Name(), "native", t.Count(compat.OpNative),
				"default", t.Count(compat.OpDefault), "fallback", t.Count(compat.OpFallback))
		}
	}
	return r.found.kernels.table, r.found.kernels.err
}

func (r *Runner) readKernelTable(ctx context.Context) (compat.KernelTable, error) {
	wd, err := r.newWorkDir("kernels")
	if err != nil {
		return compat.KernelTable{}, fmt.Errorf("kernel table: %w", err)
	}
	defer wd.remove()
	kctx, cancel := context.WithTimeout(ctx, r.cfg.EnvTimeout)
	defer cancel()
	spec := r.spec(ctx, wd, "", []string{"--out", wd.result}, nil)
	spec.script = filepath.Join(filepath.Dir(r.script), harness.KernelsScript)
	spec.args = []string{"--out", wd.result} // not the harness's (spec adds --host-root)
	spec.env = append(spec.env, "TPU_SKIP_MDS_QUERY=1")
	out := runProc(kctx, spec)
	switch {
	case out.startErr != nil:
		return compat.KernelTable{}, fmt.Errorf("kernel table: cannot start %s: %w", r.python, out.startErr)
	case out.killed:
		return compat.KernelTable{}, fmt.Errorf("kernel table: %s ran past %s", harness.KernelsScript, r.cfg.EnvTimeout)
	case !out.state.Success():
		return compat.KernelTable{}, fmt.Errorf("kernel table: %s: %s", out.state, lastLine(out.stderrTail))
	}
	return readKernelFile(wd.result)
}

// readKernelFile reads and checks harness_kernels.py's output.
func readKernelFile(path string) (compat.KernelTable, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return compat.KernelTable{}, fmt.Errorf("kernel table: %w", err)
	}
	if fi.Size() > maxKernelTableBytes {
		return compat.KernelTable{}, fmt.Errorf("kernel table: %d bytes, over %d", fi.Size(), maxKernelTableBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return compat.KernelTable{}, fmt.Errorf("kernel table: %w", err)
	}
	var t compat.KernelTable
	if err := json.Unmarshal(data, &t); err != nil {
		return compat.KernelTable{}, fmt.Errorf("kernel table: %w", err)
	}
	t.ReadAt = time.Now().UTC()
	if err := t.Validate(); err != nil {
		return compat.KernelTable{}, fmt.Errorf("kernel table: %w", err)
	}
	return t, nil
}

// predict judges a result's op trace against the kernel table
// (result.tpu_ops, a prediction) and keeps the trace beside it: the store
// keeps it and judges it again against the newest kernel table it holds
// (store/traces.go). A tpu result is measured and gets neither; without a
// table the result carries the trace alone.
func (r *Runner) predict(ctx context.Context, res *compat.Result) {
	tr := res.OpsTraced
	if tr == nil || res.Target == compat.TargetTPU {
		res.OpsTraced = nil
		return
	}
	kt, err := r.KernelTable(ctx)
	if err != nil {
		return
	}
	p := harness.TPUOpsTable.Judge(kt, *tr)
	res.TPUOps = &p
}
