package web

import (
	"math"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// The page formatters write what a reader sees: expectations are written
// out by hand, and a value that was not measured is a dash, never 0.
func TestFormatters(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	s := func(v string) *string { return &v }
	for _, tt := range []struct{ got, want string }{
		{fmtNum(nil, 1), "—"},
		{fmtNum(f(math.NaN()), 1), "—"},
		{fmtNum(f(math.Inf(1)), 1), "—"},
		{fmtNum(f(math.Inf(-1)), 1), "—"},
		{fmtNum(f(3.14159), 2), "3.14"},
		{fmtNum(f(0), 1), "0.0"},

		{fmtBytes(nil), "—"},
		{fmtBytes(i(0)), "0 B"},
		{fmtBytes(i(1023)), "1023 B"},
		{fmtBytes(i(1024)), "1.0 KiB"},
		{fmtBytes(i(1536)), "1.5 KiB"},
		{fmtBytes(i(-2048)), "-2.0 KiB"},
		{fmtBytes(i(1 << 20)), "1.0 MiB"},
		{fmtBytes(i(5 << 30)), "5.0 GiB"},
		{fmtBytes(i(5 << 40)), "5.0 TiB"},
		{fmtBytes(i(3 << 50)), "3072.0 TiB"},

		{fmtCount(0), "0"},
		{fmtCount(999), "999"},
		{fmtCount(1000), "1,000"},
		{fmtCount(100000), "100,000"},
		{fmtCount(1234567), "1,234,567"},
		{fmtCount(-1234), "-1,234"},
		{fmtCount(-999), "-999"},

		{fmtPct(nil), "—"},
		{fmtPct(f(math.NaN())), "—"},
		{fmtPct(f(0)), "0.0 %"},
		{fmtPct(f(0.1234)), "12.3 %"},
		{fmtPct(f(1)), "100.0 %"},

		{shortSHA(""), ""},
		{shortSHA("0123456789"), "0123456789"},
		{shortSHA("0123456789a"), "0123456789"},
		{shortSHA("0123456789abcdef0123456789abcdef01234567"), "0123456789"},

		{words("out_of_memory"), "out of memory"},
		{words(s("op_not_lowered")), "op not lowered"},
		{words((*string)(nil)), ""},
		{words(3), "3"},

		{targetName(compat.TargetTPU), "TPU (TorchTPU)"},
		{targetName(compat.TargetCPU), "CPU"},
		{targetName(compat.TargetCUDA), "CUDA"},
		{targetName(""), "any target"},
		{targetName("npu"), "npu"},

		{fmtRuntime(compat.Runtime{}), "—"},
		{fmtRuntime(compat.Runtime{Torch: "2.15.0"}), "torch 2.15.0"},
		{fmtRuntime(compat.Runtime{Python: "3.11.9", Torch: "2.15.0", TorchTPU: "0.3.1", Transformers: "5.23.0", Harness: "7",
			Device: "TPU v5e", DeviceCount: 1}),
			"torch 2.15.0 · torch_tpu 0.3.1 · transformers 5.23.0 · harness 7 · python 3.11.9 · TPU v5e"},
		{fmtRuntime(compat.Runtime{Device: "TPU v5e", DeviceCount: 2}), "TPU v5e ×2"},
		{fmtRuntime(compat.Runtime{Device: "cpu", DeviceCount: 0}), "cpu"},
		{fmtRuntime(compat.Runtime{DeviceCount: 4}), "—"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
