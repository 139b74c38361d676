package show

import (
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func TestMeasuredChips(t *testing.T) {
	tpu := func(device string, n int) *compat.Result {
		return &compat.Result{Target: compat.TargetTPU, Runtime: compat.Runtime{Device: device}, DevicesUsed: n}
	}
	for _, tt := range []struct {
		r    *compat.Result
		want string
	}{
		{nil, ""},
		{tpu("TPU v6e", 1), ""},
		{tpu("TPU v6e", 8), "8 × v6e, measured"},
		{tpu("TPU v7", 4), "4 × v7x, measured"},
		{tpu("TPU v9", 4), "4 × TPU v9, measured"},
		{&compat.Result{Target: compat.TargetCPU, Runtime: compat.Runtime{Device: "Intel Xeon"}, DevicesUsed: 2}, "2 × cpu, measured"},
		{&compat.Result{Target: compat.TargetCUDA, Runtime: compat.Runtime{Device: "NVIDIA H200"}, DevicesUsed: 2}, "2 × NVIDIA H200, measured"},
	} {
		if got := MeasuredChips(tt.r); got != tt.want {
			t.Errorf("measuredChips(%+v) = %q, want %q", tt.r, got, tt.want)
		}
	}
	if got := ShardedOn(compat.Result{Target: compat.TargetCPU, DevicesUsed: 2}); !strings.Contains(got, "not reported") {
		t.Errorf("a sharded result without its sharding: %q", got)
	}
}
