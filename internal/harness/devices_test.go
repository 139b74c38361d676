package harness

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The table is well formed: positive peaks, a source for each, names that are
// already normalised and belong to one device only.
func TestDevicePeaksTable(t *testing.T) {
	seen := map[string]string{}
	for _, d := range DevicePeaks() {
		if d.Key == "" || d.Label == "" || d.Source == "" || (d.Target != "tpu" && d.Target != "cuda") {
			t.Errorf("%+v: key, label, source and target tpu|cuda are required", d)
		}
		if !(d.BF16FLOPS > 1e12 && d.BF16FLOPS < 1e16) || !(d.HBMBytesPerS > 1e11 && d.HBMBytesPerS < 1e14) {
			t.Errorf("%s: peaks %g FLOP/s, %g B/s out of any real device's range", d.Key, d.BF16FLOPS, d.HBMBytesPerS)
		}
		if d.Target == "tpu" && (d.Generation == "" || d.HBMBytes <= 0 || d.MXU <= 0) {
			t.Errorf("%s: a TPU needs generation, hbm_bytes and mxu (readiness checks them)", d.Key)
		}
		if len(d.Names) == 0 {
			t.Errorf("%s: no names", d.Key)
		}
		for _, n := range d.Names {
			if n != NormalizeDeviceName(n) {
				t.Errorf("%s: name %q is not normalised", d.Key, n)
			}
			if other, dup := seen[n]; dup {
				t.Errorf("name %q belongs to %s and %s", n, other, d.Key)
			}
			seen[n] = d.Key
		}
	}
}

// Runtime names, as torch_tpu (hardware.py: "TPU v7") and torch.cuda report
// them, find their device; anything else finds none.
func TestMatchDevicePeak(t *testing.T) {
	tests := []struct {
		target, name, key string
		flops, bw         float64
	}{
		{"tpu", "TPU v5e", "tpu-v5e", 197e12, 819e9},
		{"tpu", "TPU v5 lite", "tpu-v5e", 197e12, 819e9},
		{"tpu", "TPU v5p", "tpu-v5p", 459e12, 2765e9},
		{"tpu", "TPU v6e", "tpu-v6e", 918e12, 1638e9},
		{"tpu", "  tpu   V6E ", "tpu-v6e", 918e12, 1638e9},
		// one of Ironwood's two devices: half of 2307 TFLOP/s and 7380 GB/s
		{"tpu", "TPU v7", "tpu-v7x", 1153.5e12, 3690e9},
		{"cuda", "NVIDIA H100 80GB HBM3", "h100-sxm", 989.5e12, 3.35e12},
		{"cuda", "NVIDIA H100 PCIe", "h100-pcie", 756.5e12, 2e12},
		{"cuda", "NVIDIA H200", "h200", 989.5e12, 4.8e12},
		{"cuda", "NVIDIA H200 NVL", "h200-nvl", 835.5e12, 4.8e12},
		{"tpu", "TPU", "", 0, 0},                                // torch_tpu's name for an unrecognised chip
		{"tpu", "TPU v4", "", 0, 0},                             // not in the table
		{"cuda", "NVIDIA H100 80GB HBM3 MIG 1g.10gb", "", 0, 0}, // a slice has a fraction of the peak
		{"cpu", "Intel(R) Xeon(R) CPU @ 2.20GHz", "", 0, 0},
		{"cuda", "TPU v6e", "", 0, 0}, // the target must agree
	}
	for _, tt := range tests {
		d, ok := MatchDevicePeak(tt.target, tt.name)
		if ok != (tt.key != "") || d.Key != tt.key {
			t.Errorf("MatchDevicePeak(%q, %q) = %q, %v; want %q", tt.target, tt.name, d.Key, ok, tt.key)
			continue
		}
		if ok && (math.Abs(d.BF16FLOPS-tt.flops) > 1 || math.Abs(d.HBMBytesPerS-tt.bw) > 1) {
			t.Errorf("%s: %g FLOP/s %g B/s, want %g, %g", tt.key, d.BF16FLOPS, d.HBMBytesPerS, tt.flops, tt.bw)
		}
	}
}

// The harness normalises names the same way (harness_efficiency.py).
func TestHarnessNormalizesLikeGo(t *testing.T) {
	src, err := files.ReadFile("harness_efficiency.py")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`" "\.join\(str\(name\)\.lower\(\)\.split\(\)\)`).Match(src) {
		t.Error(`harness_efficiency.py must normalise device names as " ".join(str(name).lower().split()), as NormalizeDeviceName`)
	}
}

func TestParseDevicePeaksRejects(t *testing.T) {
	for _, bad := range []string{``, `{}`, `{"devices": []}`, `{"devices": 3}`} {
		if _, err := parseDevicePeaks([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestTopologies: every TPU lists the slices one host runs, each a
// topology of three or four dimensions whose product is the device count
// (torch_tpu's hardware.py tables, which tests/test_sharding.py
// compares with the installed torch_tpu); accelerators of other targets
// list none.
func TestTopologies(t *testing.T) {
	seen := 0
	for _, d := range DevicePeaks() {
		if d.Target != "tpu" {
			if len(d.Topologies) != 0 {
				t.Errorf("%s: topologies on a %s device", d.Key, d.Target)
			}
			continue
		}
		sizes := d.SliceSizes()
		if len(sizes) == 0 || len(sizes) != len(d.Topologies) {
			t.Errorf("%s: slice sizes %v of %v", d.Key, sizes, d.Topologies)
		}
		for _, n := range sizes {
			topo, ok := d.Topology(n)
			dims := strings.Split(topo, ",")
			product := 1
			for _, x := range dims {
				v, err := strconv.Atoi(x)
				if err != nil || v < 1 {
					t.Errorf("%s: topology %q of %d", d.Key, topo, n)
				}
				product *= v
			}
			if !ok || (len(dims) != 3 && len(dims) != 4) || product != n {
				t.Errorf("%s: %d devices as %q (product %d)", d.Key, n, topo, product)
			}
			seen++
		}
	}
	if seen < 4 {
		t.Errorf("only %d topologies in the table", seen)
	}
	v6e, _ := MatchDevicePeak("tpu", "TPU v6e")
	if got := v6e.SliceSizes(); !slices.Equal(got, []int{1, 4, 8}) {
		t.Errorf("v6e slices %v, want 1, 4, 8", got)
	}
	if _, ok := v6e.Topology(2); ok {
		t.Error("v6e has a 2-device topology; torch_tpu's table has none")
	}
}

// TestSliceSizesKeepOnlyRealCounts: a topology key that is not a positive
// device count (0, a word) is no slice size; the others come smallest first.
func TestSliceSizesKeepOnlyRealCounts(t *testing.T) {
	d := DevicePeak{Topologies: map[string]string{"0": "0,0,0", "x": "1,1,1", "4": "2,2,1", "1": "1,1,1"}}
	if got := d.SliceSizes(); !slices.Equal(got, []int{1, 4}) {
		t.Errorf("SliceSizes = %v, want [1 4]", got)
	}
}
