package compat

import (
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
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

// TestTargetNames: every target a result can carry has a page name and a
// badge label, written out here apart from the table; and no production
// source but the table spells them.
func TestTargetNames(t *testing.T) {
	for _, tc := range []struct {
		t           Target
		name, badge string
	}{
		{TargetTPU, "TPU (TorchTPU)", "TorchTPU"},
		{TargetCPU, "CPU", "PyTorch CPU"},
		{TargetCUDA, "CUDA", "PyTorch CUDA"},
		{TargetAuto, "auto", "TorchTPU"},
		{"", "any target", "TorchTPU"},
	} {
		if got := tc.t.Name(); got != tc.name {
			t.Errorf("Target(%q).Name() = %q, want %q", tc.t, got, tc.name)
		}
		if got := tc.t.BadgeLabel(); got != tc.badge {
			t.Errorf("Target(%q).BadgeLabel() = %q, want %q", tc.t, got, tc.badge)
		}
	}
	for _, target := range Targets {
		if _, ok := targetNames[target]; !ok {
			t.Errorf("target %s has no names", target)
		}
	}
}

// TestTargetNamesHaveNoCopies: the names are spelled in targetname.go
// only; pages and badges ask Target.Name and Target.BadgeLabel.
func TestTargetNamesHaveNoCopies(t *testing.T) {
	var words []string
	for _, n := range targetNames {
		if strings.Contains(n.Name, " ") {
			words = append(words, `"`+n.Name+`"`)
		}
		if strings.Contains(n.Badge, " ") {
			words = append(words, `"`+n.Badge+`"`)
		}
	}
	if len(words) < 3 {
		t.Fatalf("only %d distinctive names to look for: %v", len(words), words)
	}
	for _, c := range testenv.Copies(t, []string{".go", ".py", ".html"}, []string{"internal/compat/targetname.go"}, words...) {
		t.Errorf("%s: a copy of the target names (use compat.Target.Name or BadgeLabel)", c)
	}
}
