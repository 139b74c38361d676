package compat

import (
	"strings"
	"testing"
)

// TestTargetRules: the one table of what a request, a result and a filter
// may name, and where a request may end up running.
func TestTargetRules(t *testing.T) {
	tests := []struct {
		in                      string
		request, result, filter string // the parsed target, or "!" for an error
	}{
		{"tpu", "tpu", "tpu", "tpu"},
		{"cpu", "cpu", "cpu", "cpu"},
		{"cuda", "cuda", "cuda", "cuda"},
		{"auto", "auto", "!", ""},
		{"", "!", "!", ""},
		{"gpu", "!", "!", "!"},
		{"TPU", "!", "!", "!"},
	}
	show := func(t Target, err error) string {
		if err != nil {
			return "!"
		}
		return string(t)
	}
	for _, tt := range tests {
		if got := show(ParseTarget(tt.in)); got != tt.request {
			t.Errorf("ParseTarget(%q) = %q, want %q", tt.in, got, tt.request)
		}
		if got := show(ParseResultTarget(tt.in)); got != tt.result {
			t.Errorf("ParseResultTarget(%q) = %q, want %q", tt.in, got, tt.result)
		}
		if got := show(ParseTargetFilter(tt.in)); got != tt.filter {
			t.Errorf("ParseTargetFilter(%q) = %q, want %q", tt.in, got, tt.filter)
		}
	}

	admits := []struct {
		asked, got Target
		err        string // "" when admitted
	}{
		{TargetAuto, TargetTPU, ""},
		{TargetAuto, TargetCPU, ""},
		{TargetAuto, TargetCUDA, "auto is tpu or cpu"},
		{TargetTPU, TargetTPU, ""},
		{TargetTPU, TargetCPU, "target cpu on a tpu request"},
		{TargetCPU, TargetTPU, "target tpu on a cpu request"},
		{TargetCUDA, TargetCUDA, ""},
		{TargetCPU, TargetAuto, "not a concrete target"},
		{TargetAuto, "", "not a concrete target"},
	}
	for _, tt := range admits {
		err := tt.asked.Admits(tt.got)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s admits %q: %v, want nil", tt.asked, tt.got, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s admits %q: %v, want %q", tt.asked, tt.got, err, tt.err)
		}
	}
}
