package compat

import "testing"

// TestVerdictChange: an error (the scanner's own) is never a change of what
// is known of the model; a result after one is compared with the last
// verdict before it; everything else is ClassifyChange's.
func TestVerdictChange(t *testing.T) {
	tests := []struct {
		name      string
		last, new Status
		want      EventKind
		ok        bool
	}{
		{"first result", "", StatusPass, EventNew, true},
		{"first result failing", "", StatusFail, EventNew, true},
		{"first result an error", "", StatusError, "", false},
		{"pass to the scanner's error", StatusPass, StatusError, "", false},
		{"fail to the scanner's error", StatusFail, StatusError, "", false},
		{"back to the verdict before the error", StatusPass, StatusPass, "", false},
		{"a regression across an error", StatusPass, StatusFail, EventRegression, true},
		{"a fix across an error", StatusOOM, StatusPass, EventFix, true},
		{"fail to oom", StatusFail, StatusOOM, EventChange, true},
		{"pass to skipped", StatusPass, StatusSkipped, EventChange, true},
		{"the same verdict", StatusFail, StatusFail, "", false},
	}
	for _, tt := range tests {
		kind, ok := VerdictChange(tt.last, tt.new)
		if kind != tt.want || ok != tt.ok {
			t.Errorf("%s: VerdictChange(%q, %q) = %q, %v; want %q, %v", tt.name, tt.last, tt.new, kind, ok, tt.want, tt.ok)
		}
	}
}

// TestClassifyChange: a regression is from pass to a status held against
// the model, never to an error.
func TestClassifyChange(t *testing.T) {
	tests := []struct {
		old, new Status
		want     EventKind
	}{
		{"", StatusFail, EventNew},
		{StatusUntested, StatusPass, EventNew},
		{StatusPass, StatusFail, EventRegression},
		{StatusPass, StatusCrash, EventRegression},
		{StatusPass, StatusError, EventChange},
		{StatusPass, StatusSkipped, EventChange},
		{StatusFail, StatusPass, EventFix},
		{StatusFail, StatusTimeout, EventChange},
	}
	for _, tt := range tests {
		if got := ClassifyChange(tt.old, tt.new); got != tt.want {
			t.Errorf("ClassifyChange(%q, %q) = %q, want %q", tt.old, tt.new, got, tt.want)
		}
	}
}

// TestReproducible: the scanner's errors that the float32 CPU reference
// shares repeat for a revision and runtime; an environment's do not.
func TestReproducible(t *testing.T) {
	sig := func(s string) *string { return &s }
	tests := []struct {
		name string
		r    Result
		want bool
	}{
		{"the harness's inputs", Result{Status: StatusError, Signature: sig("harness_inputs:IndexError: index out of range in self")}, true},
		{"building the model", Result{Status: StatusError, Signature: sig("harness_load:RuntimeError: Unknown model <q>")}, true},
		{"the reference itself", Result{Status: StatusError, Signature: sig("reference:oom:numerics")}, true},
		{"a missing package", Result{Status: StatusError, Signature: sig("environment:missing_package:timm")}, false},
		{"no device", Result{Status: StatusError, Signature: sig("device_unavailable:tpu")}, false},
		{"no signature", Result{Status: StatusError}, false},
		{"a verdict with such a signature", Result{Status: StatusFail, Signature: sig("harness_inputs:x")}, false},
	}
	for _, tt := range tests {
		if got := tt.r.Reproducible(); got != tt.want {
			t.Errorf("%s: Reproducible() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestEventAboutVerdicts: events to or from an error are not about verdicts.
func TestEventAboutVerdicts(t *testing.T) {
	for _, tt := range []struct {
		from, to Status
		want     bool
	}{
		{"", StatusPass, true},
		{StatusPass, StatusFail, true},
		{StatusPass, StatusError, false},
		{StatusError, StatusPass, false},
		{"", StatusError, false},
	} {
		if got := (Event{FromStatus: tt.from, ToStatus: tt.to}).AboutVerdicts(); got != tt.want {
			t.Errorf("%q -> %q: AboutVerdicts() = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}
