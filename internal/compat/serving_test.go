package compat_test

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// TestServingVerdict: a measured verdict outranks the declared one, but a
// measured probe that judged nothing (the scanner's own error, or not
// judged for want of a CPU reference) leaves the declared one standing:
// never a pass, never a fail.
func TestServingVerdict(t *testing.T) {
	for _, tc := range []struct {
		name     string
		served   bool
		measured string // "" for none
		pass     bool
		evidence string
	}{
		{"declared served", true, "", true, "declared"},
		{"declared not served", false, "", false, "declared"},
		{"measured pass beats not declared", false, "pass", true, "measured"},
		{"measured fail beats declared", true, "fail", false, "measured"},
		{"measured oom", true, "oom", false, "measured"},
		{"scanner error judges nothing", true, "error", true, "declared"},
		{"not judged: no reference", true, "skipped", true, "declared"},
		{"not judged, not declared", false, "skipped", false, "declared"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := compat.ServingCell{Evidence: compat.ServingEvidenceDeclared, Served: tc.served}
			if tc.measured != "" {
				c.Measured = &compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: tc.measured}
			}
			pass, ev := c.Verdict()
			if pass != tc.pass || ev != tc.evidence {
				t.Errorf("Verdict() = %v, %q; want %v, %q", pass, ev, tc.pass, tc.evidence)
			}
		})
	}
}
