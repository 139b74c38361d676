package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// UseKernelTable hands the runner a kernel table kept elsewhere (the
// database's, for the versions KernelVersions named), so that KernelTable
// answers with it instead of reading it again; a table already read or
// handed stays.
func (r *Runner) UseKernelTable(kt compat.KernelTable) {
	r.found.kmu.Lock()
	defer r.found.kmu.Unlock()
	if !r.found.kernels.done {
		r.found.kernels = kernelCache{done: true, table: kt}
		r.log.Info("probe: TorchTPU kernel table kept before, not read again", "table", kt.Name())
	}
}

// KernelVersions are the torch and torch_tpu versions this runner's
// kernel table is (or would be) kept under, read from the packages' files
// (harness_kernels.py --versions: no import, a fraction of a second
// against the table's ~25 s). The error says why there are none (torch_tpu
// not installed).
func (r *Runner) KernelVersions(ctx context.Context) (torch, torchTPU string, err error) {
	var v struct {
		Torch    string `json:"torch"`
		TorchTPU string `json:"torch_tpu"`
	}
	if err := r.runKernels(ctx, "kernel versions", []string{"--versions"}, func(path string) error {
		data, err := readCapped(path, 4096)
		if err == nil {
			err = json.Unmarshal(data, &v)
		}
		for _, f := range []struct{ field, s string }{{"torch", v.Torch}, {"torch_tpu", v.TorchTPU}} {
			if err == nil && f.s == "" {
				err = fmt.Errorf("%s: empty", f.field)
			}
			if err == nil {
				err = compat.CheckLabel(f.field, f.s, compat.MaxVersionBytes)
			}
		}
		if err != nil {
			return fmt.Errorf("kernel versions: %w", err)
		}
		return nil
	}); err != nil {
		return "", "", err
	}
	return v.Torch, v.TorchTPU, nil
}

func (r *Runner) readKernelTable(ctx context.Context) (compat.KernelTable, error) {
	var t compat.KernelTable
	err := r.runKernels(ctx, "kernel table", nil, func(path string) (err error) {
		t, err = readKernelFile(path)
		return err
	})
	return t, err
}

// runKernels runs harness_kernels.py with args (and --out), confined like
// the harness, and hands its output file to read.
func (r *Runner) runKernels(ctx context.Context, what string, args []string, read func(path string) error) error {
	wd, err := r.newWorkDir("kernels")
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer wd.remove()
	kctx, cancel := context.WithTimeout(ctx, r.cfg.EnvTimeout)
	defer cancel()
	args = append(slices.Clone(args), "--out", wd.result)
	spec := r.spec(ctx, wd, "", args, nil)
	spec.script = filepath.Join(filepath.Dir(r.script), harness.KernelsScript)
	spec.args = args // not the harness's (spec adds --host-root)
	spec.env = append(spec.env, "TPU_SKIP_MDS_QUERY=1")
	out := runProc(kctx, spec)
	switch {
	case out.startErr != nil:
		return fmt.Errorf("%s: cannot start %s: %w", what, r.python, out.startErr)
	case out.killed:
		return fmt.Errorf("%s: %s ran past %s", what, harness.KernelsScript, r.cfg.EnvTimeout)
	case !out.state.Success():
		return fmt.Errorf("%s: %s: %s", what, out.state, lastLine(out.stderrTail))
	}
	return read(wd.result)
}

// readCapped reads a file of at most limit bytes.
func readCapped(path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%d bytes, over %d", fi.Size(), limit)
	}
	return os.ReadFile(path)
}

// readKernelFile reads and checks harness_kernels.py's output.
func readKernelFile(path string) (compat.KernelTable, error) {
	data, err := readCapped(path, maxKernelTableBytes)
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
