package show

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
		{Num(nil, 1), "—"},
		{Num(f(math.NaN()), 1), "—"},
		{Num(f(math.Inf(1)), 1), "—"},
		{Num(f(math.Inf(-1)), 1), "—"},
		{Num(f(3.14159), 2), "3.14"},
		{Num(f(0), 1), "0.0"},

		{Bytes(nil), "—"},
		{Bytes(i(0)), "0 B"},
		{Bytes(i(1023)), "1023 B"},
		{Bytes(i(1024)), "1.0 KiB"},
		{Bytes(i(1536)), "1.5 KiB"},
		{Bytes(i(-2048)), "-2.0 KiB"},
		{Bytes(i(1 << 20)), "1.0 MiB"},
		{Bytes(i(5 << 30)), "5.0 GiB"},
		{Bytes(i(5 << 40)), "5.0 TiB"},
		{Bytes(i(3 << 50)), "3072.0 TiB"},

		{Count(0), "0"},
		{Count(999), "999"},
		{Count(1000), "1,000"},
		{Count(100000), "100,000"},
		{Count(1234567), "1,234,567"},
		{Count(-1234), "-1,234"},
		{Count(-999), "-999"},

		{Pct(nil), "—"},
		{Pct(f(math.NaN())), "—"},
		{Pct(f(0)), "0.0 %"},
		{Pct(f(0.1234)), "12.3 %"},
		{Pct(f(1)), "100.0 %"},

		{ShortSHA(""), ""},
		{ShortSHA("0123456789"), "0123456789"},
		{ShortSHA("0123456789a"), "0123456789"},
		{ShortSHA("0123456789abcdef0123456789abcdef01234567"), "0123456789"},

		{Words("out_of_memory"), "out of memory"},
		{Words(s("op_not_lowered")), "op not lowered"},
		{Words((*string)(nil)), ""},
		{Words(3), "3"},

		{TargetName(compat.TargetTPU), "TPU (TorchTPU)"},
		{TargetName(compat.TargetCPU), "CPU"},
		{TargetName(compat.TargetCUDA), "CUDA"},
		{TargetName(""), "any target"},
		{TargetName("npu"), "npu"},

		{Runtime(compat.Runtime{}), "—"},
		{Runtime(compat.Runtime{Torch: "2.15.0"}), "torch 2.15.0"},
		{Runtime(compat.Runtime{Python: "3.11.9", Torch: "2.15.0", TorchTPU: "0.3.1", Transformers: "5.23.0", Harness: "7",
			Device: "TPU v5e", DeviceCount: 1}),
			"torch 2.15.0 · torch_tpu 0.3.1 · transformers 5.23.0 · harness 7 · python 3.11.9 · TPU v5e"},
		{Runtime(compat.Runtime{Device: "TPU v5e", DeviceCount: 2}), "TPU v5e ×2"},
		{Runtime(compat.Runtime{Device: "cpu", DeviceCount: 0}), "cpu"},
		{Runtime(compat.Runtime{DeviceCount: 4}), "—"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
