package harness

import (
	"math"
	"regexp"
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

// NormalizeDeviceName is how the harness's match_device
// (harness_efficiency.py) compares a runtime device name with the table's
// names: lowercased, with runs of white space collapsed to one space. The
// Go side matches no device itself; this and MatchDevicePeak hold the table
// to the harness's rule.
func NormalizeDeviceName(name string) string {
	return strings.Join(strings.Fields(strings.ToLower(name)), " ")
}

// MatchDevicePeak finds the table entry for a device the runtime names name
// on target, as match_device does. Only an exact name matches: an unknown
// device gets no peak rather than a guessed one.
func MatchDevicePeak(target, name string) (DevicePeak, bool) {
	n := NormalizeDeviceName(name)
	for _, d := range devicePeaks {
		if d.Target != target {
			continue
		}
		for _, alias := range d.Names {
			if alias == n {
				return d, true
			}
		}
	}
	return DevicePeak{}, false
}
