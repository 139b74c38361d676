package scan

import (
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/config"
)

// withDefaults fills every option left zero (or a negative count or
// duration) from config.Defaults, the one owner of the defaults, and keeps
// every option set.
func TestWithDefaults(t *testing.T) {
	d := config.Defaults()
	def := Options{Trigger: "cli", Source: d.Source, Limit: d.Limit, Sort: d.Sort, Target: d.Target, Mode: d.Mode,
		Timeout: d.Timeout, Devices: d.Devices}
	if def.Source == "" || def.Limit <= 0 || def.Sort == "" || def.Target == "" || def.Mode == "" || def.Timeout <= 0 || def.Devices <= 0 {
		t.Fatalf("config.Defaults leaves an option zero: %+v", def)
	}
	set := Options{Trigger: "manual", Source: "cache", Limit: 1, Sort: "likes", Target: compat.TargetCPU, Mode: compat.ModeFull,
		Timeout: time.Nanosecond, Devices: 1, Tasks: []string{"text-generation"}, DeviceMemory: 1 << 30, ScanTimeout: time.Hour}
	for _, tt := range []struct {
		name    string
		in, out Options
	}{
		{"zero", Options{}, def},
		{"negative counts and durations", Options{Limit: -1, Timeout: -time.Second, Devices: -1}, def},
		{"all set", set, set},
	} {
		got := withDefaults(tt.in)
		if got.Trigger != tt.out.Trigger || got.Source != tt.out.Source || got.Limit != tt.out.Limit || got.Sort != tt.out.Sort ||
			got.Target != tt.out.Target || got.Mode != tt.out.Mode || got.Timeout != tt.out.Timeout || got.Devices != tt.out.Devices ||
			len(got.Tasks) != len(tt.out.Tasks) || got.DeviceMemory != tt.out.DeviceMemory || got.ScanTimeout != tt.out.ScanTimeout {
			t.Errorf("%s: withDefaults = %+v, want %+v", tt.name, got, tt.out)
		}
	}
}
