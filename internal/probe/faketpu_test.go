package probe

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
)

// The fake torch_tpu's messages (../harness/testdata/fake_torch_tpu/site/torch_tpu/_loader.py), written here
// independently of its source.
const (
	fakeLoaderText  = "libtpu.so: undefined symbol: _ZN3c1019fake_abi_mismatchEv"
	fakeFirstOpText = "The TPU is already in use by process with pid 4242"
	fakeAbortText   = "compilation.cc:81] Check failed: status.ok() Failed to create default compilation context: " +
		"ABORTED: The TPU is already in use by process with pid 4242"
)

// fakeHostWithChip is a tree standing for / in the harness's PCI scan
// (Config.HostRoot) with one TPU v6e chip exposed through VFIO: the scan
// counts a chip, so the harness asks torch_tpu.
func fakeHostWithChip(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dev := filepath.Join(root, "sys", "bus", "pci", "devices", "0000:00:04.0")
	group := filepath.Join(root, "sys", "kernel", "iommu_groups", "10")
	for _, d := range []string{dev, group, filepath.Join(root, "dev", "vfio")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		filepath.Join(dev, "vendor"): "0x1ae0\n", filepath.Join(dev, "device"): "0x006f\n",
		filepath.Join(root, "dev", "vfio", "10"): "",
	} {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(group, filepath.Join(dev, "iommu_group")); err != nil {
		t.Fatal(err)
	}
	return root
}

// fakeTPURunner runs the embedded harness with an interpreter that sees the
// fake torch_tpu distribution before the project's environment and its real
// torch_tpu (made by ../harness/testdata/fake_torch_tpu/mkpython.py: a venv layout whose
// .pth file adds both, which python -I still reads), its behaviour set by
// TORCH_TPU_FAKE through the runner's allow-listed environment, on a host
// whose PCI scan (Config.HostRoot) shows a chip. Its log goes to logs.
func fakeTPURunner(t *testing.T, mode string, logs *proctest.Buffer) *Runner {
	t.Helper()
	out, err := exec.Command(projectPython(t), "../harness/testdata/fake_torch_tpu/mkpython.py", t.TempDir()).Output()
	if err != nil {
		t.Fatalf("mkpython.py: %v", err)
	}
	py := strings.TrimSpace(string(out))
	return realRunner(t, func(c *Config) {
		c.Python = py
		c.Environ = append(os.Environ(), "TORCH_TPU_FAKE="+mode)
		c.HostRoot = fakeHostWithChip(t)
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
}

// TestRealHarnessBrokenTorchTPU: on a host whose PCI scan finds a chip but
// whose torch_tpu cannot load, or whose TPU runtime fails its first op or
// aborts on it (libtpu's SIGABRT), cpu still works, tpu is the environment's
// error with torch_tpu's or libtpu's own words, the Landlock second opinion
// is asked, and auto runs on cpu (issues 15 and 22). Without the harness's
// autoload switch `import torch` itself fails there (tests/test_tpu_load.py
// proves the fake reaches torch's autoload).
func TestRealHarnessBrokenTorchTPU(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ten real harness runs")
	}
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct{ mode, text string }{
		{"loader-raises", fakeLoaderText},
		{"first-op-fails", fakeFirstOpText},
		{"first-op-aborts", fakeAbortText},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			var logs proctest.Buffer
			r := fakeTPURunner(t, tc.mode, &logs)
			if tc.mode == "loader-raises" { // cpu never loads torch_tpu: once is enough
				if target, rt, err := r.Env(ctx, compat.TargetCPU); err != nil || target != compat.TargetCPU || rt.Torch == "" {
					t.Errorf("Env(cpu) = %q %+v %v", target, rt, err)
				}
			}
			target, rt, err := r.Env(ctx, compat.TargetTPU)
			if !errors.Is(err, ErrDeviceUnavailable) || target != compat.TargetTPU || !strings.Contains(err.Error(), tc.text) ||
				rt.TorchTPU != "0.0.1+fake" {
				t.Errorf("Env(tpu) = %q %+v %v; want ErrDeviceUnavailable with %q", target, rt, err, tc.text)
			}
			if landlockABI() > 0 && !strings.Contains(logs.String(), "asked the harness again without Landlock") {
				t.Errorf("no Landlock second opinion after Env(tpu); log:\n%s", logs.String())
			}
			if target, _, err := r.Env(ctx, compat.TargetAuto); err != nil || target != compat.TargetCPU {
				t.Errorf("Env(auto) = %q %v", target, err)
			}
			if tc.mode != "first-op-aborts" {
				return
			}
			req := Request{ModelID: "tiny/llama", Revision: "abc", SnapshotDir: tinySnapshot(t), Task: "text-generation",
				Target: compat.TargetTPU, Mode: compat.ModeArch, SeqLen: 16, Steps: 1, NoCompile: true, NoGenerate: true}
			res := r.Probe(ctx, req)
			if res.Status != compat.StatusError || str(res.Stage) != "env" || str(res.FailureClass) != "device_unavailable" ||
				res.Target != compat.TargetTPU || !strings.Contains(str(res.Message), "SIGABRT") ||
				!strings.Contains(str(res.Message), tc.text) || res.Runtime.TorchTPU != "0.0.1+fake" {
				t.Errorf("probe tpu: %s/%s/%s on %q: %s\n%s", res.Status, str(res.Stage), str(res.FailureClass), res.Target,
					str(res.Message), tail(res.LogTail))
			}
			req.Target = compat.TargetAuto
			res = r.Probe(ctx, req)
			if res.Status != compat.StatusPass || res.Target != compat.TargetCPU || res.Runtime.TorchTPU != "" {
				t.Errorf("probe auto: %s/%s/%s on %q: %s\n%s", res.Status, str(res.Stage), str(res.FailureClass), res.Target,
					str(res.Message), tail(res.LogTail))
			}
		})
	}
}

// TestRealHarnessNoTPUChip: with Google's real torch_tpu 0.2.0 (every
// environment has it) on this host, whose PCI bus has no TPU, tpu ends at
// once as the environment's error saying no chip was found and what the
// scan counted, without asking again outside Landlock (no PCI device is
// hidden by it), and auto resolves to cpu saying why.
func TestRealHarnessNoTPUChip(t *testing.T) {
	t.Parallel()
	var logs proctest.Buffer
	r := realRunner(t, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	ctx := context.Background()
	start := time.Now()
	target, rt, err := r.Env(ctx, compat.TargetTPU)
	if err == nil {
		t.Skip("this host has a usable TPU")
	}
	if !errors.Is(err, ErrDeviceUnavailable) || target != compat.TargetTPU ||
		!strings.Contains(err.Error(), "no TPU chip found on this host: the PCI scan counted 0 TPU chips") {
		t.Fatalf("Env(tpu) = %q %v; want ErrDeviceUnavailable saying no chip was found", target, err)
	}
	if rt.TorchTPU != "0.2.0" || rt.LibTPU != "0.0.52" {
		t.Errorf("Env(tpu) runtime %+v; want torch_tpu 0.2.0 and libtpu 0.0.52 recorded", rt)
	}
	if d := time.Since(start); d > 90*time.Second {
		t.Errorf("Env(tpu) took %s", d)
	}
	if strings.Contains(logs.String(), "asked the harness again without Landlock") {
		t.Errorf("a second opinion without Landlock on a host with no chip; log:\n%s", logs.String())
	}
	if target, rt, err := r.Env(ctx, compat.TargetAuto); err != nil || target != compat.TargetCPU || rt.TorchTPU != "" {
		t.Errorf("Env(auto) = %q %+v %v", target, rt, err)
	}
	if !strings.Contains(logs.String(), `msg="probe: target auto runs on cpu" why="auto -> cpu (no TPU chip found on this host`) {
		t.Errorf("Env(auto) did not say why it runs on cpu; log:\n%s", logs.String())
	}
}
