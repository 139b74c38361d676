package app

import (
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

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

// TestDeviceProbers: --devices N gives N runners, each pinned to its
// device by the probe package (probe.DeviceEnv, tested there); one device
// or a runner that could not be built gives none.
func TestDeviceProbers(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.Missing(t, "python3 not on PATH")
	}
	cfg := config.Defaults()
	cfg.Python, cfg.Devices = "python3", 4
	p := newRunner(cfg, slog.New(slog.DiscardHandler))
	if b, ok := p.(brokenProber); ok {
		t.Fatalf("runner not built: %v", b.err)
	}
	defer p.(io.Closer).Close()
	got := deviceProbers(p, 4)
	if len(got) != 4 {
		t.Fatalf("%d device probers, want 4", len(got))
	}
	for i, d := range got {
		if _, ok := d.(*probe.Runner); !ok || d == p {
			t.Errorf("prober %d is %T (the shared runner: %v)", i, d, d == p)
		}
	}
	if n := len(deviceProbers(p, 2)); n != 2 {
		t.Errorf("two devices: %d device probers, want 2", n)
	}
	if n := len(deviceProbers(p, 1)); n != 0 {
		t.Errorf("one device: %d device probers", n)
	}
	if n := len(deviceProbers(brokenProber{}, 4)); n != 0 {
		t.Errorf("broken runner: %d device probers", n)
	}
}

// TestMetricsFromTheStart: a fresh scanner exports every counter at 0
// (rate() needs a sample before the first event) and its build info; the
// device-busy gauge waits for a scan that measured it.
func TestMetricsFromTheStart(t *testing.T) {
	r := metrics.NewRegistry()
	newAppMetrics(r, "v1.2.3")
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`scanner_scans_total{status="done"} 0`, `scanner_scans_total{status="failed"} 0`, `scanner_scans_total{status="interrupted"} 0`,
		`scanner_probes_total{status="pass"} 0`, `scanner_probes_total{status="error"} 0`, `scanner_probe_duration_seconds_count{status="oom"} 0`,
		`scanner_hub_requests_total{code="200"} 0`, `scanner_hub_requests_total{code="429"} 0`,
		"scanner_hub_rate_limit_waits_total 0", "scanner_hub_rate_limit_wait_seconds_total 0",
		`scanner_build_info{version="v1.2.3",goversion="` + runtime.Version() + `",requirements="` + harness.RequirementsHash() + `"} 1`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(out, `scanner_probes_total{status="untested"}`) {
		t.Error("untested is not a probe outcome")
	}
	if strings.Contains(out, "\nscanner_device_busy_fraction ") {
		t.Error("device busy exported before any scan measured it")
	}
}

// TestNewRunnerPython: --python names the interpreter, and only an empty
// one falls back to the project's environment under the cache home (or
// python3 on PATH when there is none); a --python that does not exist
// gives the broken prober, whose every scan says why, not another Python.
func TestNewRunnerPython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.Missing(t, "python3 not on PATH")
	}
	log := slog.New(slog.DiscardHandler)
	cfg := config.Defaults()
	cfg.CacheHome = t.TempDir() // no environment here: the fallback is python3
	cfg.Python = filepath.Join(t.TempDir(), "no-such-python")
	b, ok := newRunner(cfg, log).(brokenProber)
	if !ok || !strings.Contains(b.err.Error(), "no usable Python for the harness") || !strings.Contains(b.err.Error(), "no-such-python") {
		t.Errorf("--python %s: %#v, want the broken prober naming it", cfg.Python, b)
	}
	cfg.Python = ""
	p := newRunner(cfg, log)
	r, ok := p.(*probe.Runner)
	if !ok {
		t.Fatalf("no --python: %T %v, want a runner on python3", p, p)
	}
	r.Close()
}

// TestMemLimit: each probe may take three quarters of the host's memory,
// split between the probes that run side by side; an unknown host (or a
// share of 0 bytes) runs without a limit.
func TestMemLimit(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	const gib = 1 << 30
	for _, tt := range []struct {
		total   uint64
		err     error
		devices int
		want    uint64
	}{
		{16 * gib, nil, 1, 12 * gib},
		{16 * gib, nil, 4, 3 * gib},
		{16 * gib, nil, 0, 12 * gib},
		{4, nil, 1, 3},             // 4 / 4 × 3
		{3, nil, 1, probe.NoLimit}, // a share of 0 bytes
		{16 * gib, errors.New("no /proc"), 1, probe.NoLimit},
		{0, errors.New("no /proc"), 1, probe.NoLimit},
	} {
		if got := memLimitOf(tt.total, tt.err, tt.devices, log); got != tt.want {
			t.Errorf("memLimitOf(%d, %v, %d) = %d, want %d", tt.total, tt.err, tt.devices, got, tt.want)
		}
	}
}
