package probe

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// The fake torch_tpu's messages (../harness/testdata/fake_torch_tpu/site/torch_tpu/_loader.py), written here
// independently of its source.
const (
	fakeLoaderText  = "libtpu.so: undefined symbol: _ZN3c1019fake_abi_mismatchEv"
	fakeFirstOpText = "The TPU is already in use by process with pid 4242"
)

// fakeTPURunner runs the embedded harness with an interpreter that sees the
// fake torch_tpu distribution besides the project's environment (made by
// ../harness/testdata/fake_torch_tpu/mkpython.py: a venv layout whose .pth file adds
// both, which python -I still reads), its behaviour set by TORCH_TPU_FAKE
// through the runner's allow-listed environment.
func fakeTPURunner(t *testing.T, mode string) *Runner {
	t.Helper()
	out, err := exec.Command(projectPython(t), "../harness/testdata/fake_torch_tpu/mkpython.py", t.TempDir()).Output()
	if err != nil {
		t.Fatalf("mkpython.py: %v", err)
	}
	py := strings.TrimSpace(string(out))
	return realRunner(t, func(c *Config) {
		c.Python = py
		c.Environ = append(os.Environ(), "TORCH_TPU_FAKE="+mode)
	})
}

// TestRealHarnessBrokenTorchTPU: on a host whose torch_tpu cannot load, or
// whose TPU runtime fails its first op, cpu still works, tpu is the
// environment's error with torch_tpu's own message, and auto runs on cpu
// (issue 15). Without the harness's autoload switch `import torch` itself
// fails there (tests/test_tpu_load.py proves the fake reaches torch's
// autoload).
func TestRealHarnessBrokenTorchTPU(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: six real harness runs")
	}
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct{ mode, text string }{
		{"loader-raises", fakeLoaderText},
		{"first-op-fails", fakeFirstOpText},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			r := fakeTPURunner(t, tc.mode)
			if target, rt, err := r.Env(ctx, compat.TargetCPU); err != nil || target != compat.TargetCPU || rt.Torch == "" {
				t.Errorf("Env(cpu) = %q %+v %v", target, rt, err)
			}
			target, rt, err := r.Env(ctx, compat.TargetTPU)
			if !errors.Is(err, ErrDeviceUnavailable) || target != compat.TargetTPU || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("Env(tpu) = %q %+v %v; want ErrDeviceUnavailable with %q", target, rt, err, tc.text)
			}
			if target, _, err := r.Env(ctx, compat.TargetAuto); err != nil || target != compat.TargetCPU {
				t.Errorf("Env(auto) = %q %v", target, err)
			}
			if tc.mode != "loader-raises" {
				return
			}
			res := r.Probe(ctx, Request{ModelID: "tiny/llama", Revision: "abc", SnapshotDir: tinySnapshot(t),
				Task: "text-generation", Target: compat.TargetTPU, Mode: compat.ModeArch, NoCompile: true, NoGenerate: true})
			if res.Status != compat.StatusError || str(res.Stage) != "env" || str(res.FailureClass) != "device_unavailable" ||
				res.Target != compat.TargetTPU || !strings.Contains(str(res.Message), tc.text) {
				t.Errorf("probe tpu: %s/%s/%s on %q: %s\n%s", res.Status, str(res.Stage), str(res.FailureClass), res.Target,
					str(res.Message), tail(res.LogTail))
			}
		})
	}
}
