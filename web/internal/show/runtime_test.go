package show

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func ref(t compat.Target, torch, tt, tf, h string) compat.RuntimeRef {
	return compat.RuntimeRef{Target: t, Torch: torch, TorchTPU: tt, Transformers: tf, Harness: h}
}

func TestRuntimeLabel(t *testing.T) {
	v1 := ref("tpu", "2.15.0", "0.1.0", "5.23.0", "1")
	for _, c := range []struct {
		name string
		prev *compat.RuntimeRef
		cur  compat.RuntimeRef
		want string
	}{
		{"first on tpu", nil, v1, "torch_tpu 0.1.0"},
		{"first on cpu", nil, ref("cpu", "2.15.0", "", "5.23.0", "1"), "torch 2.15.0"},
		{"torch_tpu changed", &v1, ref("tpu", "2.15.0", "0.2.0", "5.23.0", "1"), "torch_tpu 0.2.0"},
		{"two changed", &v1, ref("tpu", "2.16.0", "0.1.0", "5.24.0", "1"), "torch 2.16.0, transformers 5.24.0"},
		{"harness dropped", &v1, ref("tpu", "2.15.0", "0.1.0", "5.23.0", ""), "harness none"},
		{"another target", &v1, ref("cpu", "2.15.0", "", "5.23.0", "1"), "torch 2.15.0 on cpu"},
		{"no versions at all", nil, compat.RuntimeRef{Target: "cpu"}, "no versions"},
	} {
		if got := RuntimeLabel(c.prev, c.cur); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestHeadline(t *testing.T) {
	share := func(f float64) *float64 { return &f }
	for _, c := range []struct {
		h    compare.Headline
		want string
	}{
		{compare.Headline{Counts: map[compare.Kind]int{compare.Fixed: 14, compare.Regressed: 2}, FixedShare: share(0.09), RegressedShare: share(0.004)},
			"torch_tpu 0.2.0 fixes 14 models (9.0 % of downloads), breaks 2 (0.4 % of downloads)"},
		{compare.Headline{Counts: map[compare.Kind]int{compare.Fixed: 1}, FixedShare: share(0.5), RegressedShare: share(0)},
			"torch_tpu 0.2.0 fixes 1 model (50.0 % of downloads), breaks 0"},
		{compare.Headline{Counts: map[compare.Kind]int{compare.Fixed: 3, compare.Regressed: 1}},
			"torch_tpu 0.2.0 fixes 3 models, breaks 1"}, // no downloads: no shares
		{compare.Headline{Counts: map[compare.Kind]int{compare.Regressed: 2}, FixedShare: share(0), RegressedShare: share(0.25)},
			"torch_tpu 0.2.0 fixes 0 models, breaks 2 (25.0 % of downloads)"}, // nothing fixed: no share of it
	} {
		if got := Headline("torch_tpu 0.2.0", c.h); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}
