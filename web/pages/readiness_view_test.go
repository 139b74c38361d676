package pages

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
)

// The readiness block lists a device count per TPU generation only when
// min_devices is known.
func TestReadinessViewDevicesOnlyWhenKnown(t *testing.T) {
	known := newReadinessView(&readiness.Readiness{MinDevices: map[string]int{"v5e": 4, "v5p": 1, "v6e": 2, "v7x": 1}})
	if len(known.Devices) != len(readiness.Generations) {
		t.Fatalf("%d device rows, want one per generation (%d)", len(known.Devices), len(readiness.Generations))
	}
	for _, d := range known.Devices {
		if want := map[string]int{"v5e": 4, "v5p": 1, "v6e": 2, "v7x": 1}[d.Name]; d.N != want {
			t.Errorf("%s: %d devices, want %d", d.Name, d.N, want)
		}
	}
	if unknown := newReadinessView(&readiness.Readiness{}); len(unknown.Devices) != 0 {
		t.Errorf("device rows without min_devices: %+v", unknown.Devices)
	}
}

// The summary's share of models that fit one device is of the models whose
// device count is known, and null when none is.
func TestFitSummaryShares(t *testing.T) {
	s := data.NewFitSummary(store.Fit{Known: 8, One: map[string]int{"v5e": 2, "v5p": 6}})
	got := map[string]float64{}
	for _, f := range s.One {
		if f.Share == nil {
			t.Fatalf("%s: no share of 8 known", f.Generation)
		}
		got[f.Generation] = *f.Share
	}
	for g, want := range map[string]float64{"v5e": 0.25, "v5p": 0.75, "v6e": 0, "v7x": 0} {
		if got[g] != want {
			t.Errorf("%s: share %v, want %v", g, got[g], want)
		}
	}
	for _, f := range data.NewFitSummary(store.Fit{}).One {
		if f.Share != nil {
			t.Errorf("%s: a share of no known models: %v", f.Generation, *f.Share)
		}
	}
}

// MFU and MBU rows: the share, its peak and device, and " · the reduced
// (arch) model's" only for a reduced model; unmeasured, a dash and the
// harness's note when it gave one.
func TestEfficiencyRows(t *testing.T) {
	mfu, mbu, flops, bw := 0.25, 0.5, 197e12, 819e9
	for _, c := range []struct {
		name     string
		m        compat.Metrics
		mfu, mbu string
	}{
		{"full model", compat.Metrics{MFU: &mfu, MBU: &mbu, Efficiency: &compat.Efficiency{Device: "v5e", PeakBF16FLOPS: &flops, PeakHBMBytesPerS: &bw, Model: "full"}},
			"25.0 % of 197 TFLOP/s (v5e)", "50.0 % of 819 GB/s (v5e)"},
		{"reduced model", compat.Metrics{MFU: &mfu, Efficiency: &compat.Efficiency{Device: "v5e", PeakBF16FLOPS: &flops, Model: "reduced", Note: "why"}},
			"25.0 % of 197 TFLOP/s (v5e) · the reduced (arch) model's", "— (why)"},
		{"not measured, with a note", compat.Metrics{Efficiency: &compat.Efficiency{Note: "no peak for this device"}},
			"— (no peak for this device)", "— (no peak for this device)"},
		{"not measured, no note", compat.Metrics{}, "—", "—"},
	} {
		rows := efficiencyRows(c.m)
		if rows[0].Name != "MFU" || rows[0].Value != c.mfu || rows[1].Name != "MBU" || rows[1].Value != c.mbu {
			t.Errorf("%s: %+v, want MFU %q and MBU %q", c.name, rows, c.mfu, c.mbu)
		}
	}
}
