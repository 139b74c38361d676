package scan

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// envProber is a fakeProber whose environment is target and runtime.
type envProber struct {
	*fakeProber
	target compat.Target
	rt     compat.Runtime
}

func (p *envProber) Env(ctx context.Context, t compat.Target) (compat.Target, compat.Runtime, error) {
	return p.target, p.rt, nil
}

// The scan's plan is logged with its budget and one device's memory in
// GiB: here both are the 16 GiB the harness reported for a TPU the tables
// do not know.
func TestScanPlannedLogsItsBudget(t *testing.T) {
	f := newFixture(t)
	gb := 16.0
	f.s.Prober = &envProber{fakeProber: f.prober, target: compat.TargetTPU,
		rt: compat.Runtime{Torch: "2.15.0", Device: "unknown accelerator", DeviceCount: 1, DeviceMemGB: &gb}}
	var buf bytes.Buffer
	f.s.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	if _, err := f.s.Run(context.Background(), Options{Target: compat.TargetTPU, Mode: compat.ModeArch}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`msg="scan planned" scan_id=1 models=0 target=tpu mode=arch devices=1 budget_gib=16 budget_of="tpu: device memory"`,
		`device_memory_gib=16 device_memory_of="tpu: device memory"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log has no %s:\n%s", want, buf.String())
		}
	}
}
