package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if _, dup := m[k]; !ok || dup {
			t.Errorf("entry %q malformed or repeated in %v", kv, env)
		}
		m[k] = v
	}
	return m
}

// TestDeviceEnv: the variables that pin a probe to one device, per TPU
// generation. The expectations are torch_tpu's (csrc/common/environment.cc,
// _internal/utils/hardware.py), written out here.
func TestDeviceEnv(t *testing.T) {
	pin := func(i int, bounds string) map[string]string {
		m := map[string]string{
			"TPU_VISIBLE_DEVICES": fmt.Sprint(i), "TPU_VISIBLE_CHIPS": fmt.Sprint(i), "ALLOW_MULTIPLE_LIBTPU_LOAD": "1",
			"TPU_PROCESS_PORT": fmt.Sprint(8476 + i), "CUDA_VISIBLE_DEVICES": fmt.Sprint(i),
		}
		if bounds != "" {
			m["TPU_PROCESS_BOUNDS"], m["TPU_CHIPS_PER_PROCESS_BOUNDS"] = bounds, bounds
		}
		return m
	}
	tests := []struct {
		device string
		i      int
		want   map[string]string
	}{
		{"TPU v7", 0, pin(0, "1,1,1,1")},
		{"TPU v7", 3, pin(3, "1,1,1,1")},
		{"TPU v7x", 1, pin(1, "1,1,1,1")},
		{"TPU v6e", 2, pin(2, "1,1,1")},
		{"TPU v6 lite", 2, pin(2, "1,1,1")},
		{"TPU v5e", 1, pin(1, "1,1,1")},
		{"TPU v5p", 0, pin(0, "1,1,1")},
		{"TPU v4", 7, pin(7, "1,1,1")},
		{"TPU", 1, pin(1, "")},    // torch_tpu's name for a TPU it cannot tell
		{"TPU v9", 1, pin(1, "")}, // a generation this table does not know
		{"", 0, pin(0, "")},       // no Env found a TPU
		{"standin v7", 0, pin(0, "")},
	}
	for _, tt := range tests {
		if got := envMap(t, DeviceEnv(tt.i, tt.device)); !maps.Equal(got, tt.want) {
			t.Errorf("DeviceEnv(%d, %q) = %v, want %v", tt.i, tt.device, got, tt.want)
		}
	}
}

// TestForDeviceOnAV7Host: --devices 4 on a v7 host. The runner learns the
// generation from what Env found (the stand-in reports "TPU v7" as the real
// harness reports torch.tpu.get_device_name()), and each device's harness
// process really gets its own pinning, next to the runner's pinned variables.
func TestForDeviceOnAV7Host(t *testing.T) {
	t.Parallel()
	environ := append(os.Environ(), "TPU_STANDIN_DEVICE=TPU v7")
	r := standinRunner(t, func(c *Config) { c.Environ = environ })
	ctx := context.Background()
	devs := []*Runner{r.ForDevice(0), r.ForDevice(1), r.ForDevice(2), r.ForDevice(3)}

	// Before any Env the generation is unknown: the bounds are left out.
	if got := probeEnv(t, devs[2]); got["TPU_VISIBLE_DEVICES"] != "2" || got["TPU_PROCESS_BOUNDS"] != "" {
		t.Errorf("before Env: %v", got)
	}
	target, rt, err := r.Env(ctx, compat.TargetAuto)
	if err != nil || target != compat.TargetTPU || rt.Device != "TPU v7" {
		t.Fatalf("Env(auto) = %q %+v %v", target, rt, err)
	}
	ports := map[string]bool{}
	for i, d := range devs {
		got := probeEnv(t, d)
		want := map[string]string{
			"TPU_VISIBLE_DEVICES": fmt.Sprint(i), "TPU_VISIBLE_CHIPS": fmt.Sprint(i), "CUDA_VISIBLE_DEVICES": fmt.Sprint(i),
			"ALLOW_MULTIPLE_LIBTPU_LOAD": "1", "TPU_PROCESS_BOUNDS": "1,1,1,1", "TPU_CHIPS_PER_PROCESS_BOUNDS": "1,1,1,1",
			"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "HF_HUB_OFFLINE": "1",
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("device %d: %s=%q, want %q", i, k, got[k], v)
			}
		}
		ports[got["TPU_PROCESS_PORT"]] = true
	}
	if len(ports) != 4 || ports[""] {
		t.Errorf("TPU_PROCESS_PORT values %v: want four distinct ports", ports)
	}
	// The shared runner stays unpinned, and a device runner resolves auto from the shared Env.
	if got := probeEnv(t, r); got["TPU_VISIBLE_DEVICES"] != "" || got["TPU_PROCESS_PORT"] != "" {
		t.Errorf("the unpinned runner got %v", got)
	}
	if devs[1].autoTarget() != compat.TargetTPU {
		t.Errorf("device runner's auto target %q", devs[1].autoTarget())
	}
}

// TestForDeviceCloseKeepsTheHarness: the device runners share the parent's
// extracted harness; closing one leaves it for the others.
func TestForDeviceCloseKeepsTheHarness(t *testing.T) {
	r := standinRunner(t, func(c *Config) { c.Script = "" })
	if err := r.ForDevice(1).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.script); err != nil {
		t.Errorf("the harness went with a device runner: %v", err)
	}
}

// probeEnv runs the stand-in's env behaviour with r and returns the
// environment its process saw.
func probeEnv(t *testing.T, r *Runner) map[string]string {
	t.Helper()
	res := r.Probe(context.Background(), standinRequest(t, "env"))
	var got struct{ Env map[string]string }
	if res.Status != compat.StatusPass || json.Unmarshal([]byte(str(res.Message)), &got) != nil {
		t.Fatalf("status %s: %s", res.Status, str(res.Message))
	}
	return got.Env
}
