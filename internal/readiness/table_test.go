package readiness_test

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
)

// readiness's generations and the harness's device table (devices.json) say
// the same about every TPU generation: HBM per device and MXU width.
func TestGenerationsMatchDeviceTable(t *testing.T) {
	matched := 0
	for _, g := range readiness.Generations {
		found := false
		for _, d := range harness.DevicePeaks() {
			if d.Target != "tpu" || d.Generation != g.Name {
				continue
			}
			found = true
			matched++
			if d.HBMBytes != g.HBMBytes || d.MXU != g.MXU {
				t.Errorf("%s: readiness says %d B HBM, MXU %d; devices.json %s says %d B, MXU %d",
					g.Name, g.HBMBytes, g.MXU, d.Key, d.HBMBytes, d.MXU)
			}
		}
		if !found {
			t.Errorf("generation %s has no entry in devices.json", g.Name)
		}
	}
	for _, d := range harness.DevicePeaks() {
		if d.Target == "tpu" && !hasGeneration(d.Generation) {
			t.Errorf("devices.json %s names generation %q, which readiness does not count devices for", d.Key, d.Generation)
		}
	}
	if matched != len(readiness.Generations) {
		t.Errorf("%d table entries for %d generations", matched, len(readiness.Generations))
	}
}

func hasGeneration(name string) bool {
	for _, g := range readiness.Generations {
		if g.Name == name {
			return true
		}
	}
	return false
}
