package app

import (
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/config"
)

// TestDeviceEnv: each device's probes see only that device, under the
// variable torch_tpu itself reads (TPU_VISIBLE_DEVICES) and libtpu's.
func TestDeviceEnv(t *testing.T) {
	env := deviceEnv(3)
	for _, want := range []string{"TPU_VISIBLE_DEVICES=3", "TPU_VISIBLE_CHIPS=3", "CUDA_VISIBLE_DEVICES=3"} {
		if !slices.Contains(env, want) {
			t.Errorf("deviceEnv(3) lacks %s: %v", want, env)
		}
	}
}

func TestAPIRate(t *testing.T) {
	for _, tt := range []struct {
		perMinute int
		want      float64
	}{{0, -1}, {-5, -1}, {600, 10}, {30, 0.5}} {
		if got := apiRate(tt.perMinute); got != tt.want {
			t.Errorf("apiRate(%d) = %v, want %v", tt.perMinute, got, tt.want)
		}
	}
}

// TestDeviceRunnersAccepted: the runner takes the pinning variables (it
// refuses credentials and the variables it pins itself).
func TestDeviceRunnersAccepted(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH")
	}
	cfg := config.Defaults()
	cfg.Python, cfg.Devices = "python3", 2
	p := newRunner(cfg, slog.New(slog.DiscardHandler), deviceEnv(1))
	if b, ok := p.(brokenProber); ok {
		t.Fatalf("runner refused the device environment: %v", b.err)
	}
	if c, ok := p.(io.Closer); ok {
		c.Close()
	}
}
