package compat

import "testing"

// TestClassifyChange is the one rule for a change of status, written out
// by hand: a fix needs a failure held against the model before, a
// regression a pass before; a verdict after none (no result, the scanner's
// error, a skip) is new, so error → pass is new and never a fix.
func TestClassifyChange(t *testing.T) {
	for _, tc := range []struct {
		old, new Status
		want     EventKind
	}{
		{"", StatusPass, EventNew},
		{"", StatusFail, EventNew},
		{"", StatusError, EventNew},
		{StatusUntested, StatusSkipped, EventNew},
		{StatusError, StatusPass, EventNew},
		{StatusError, StatusCrash, EventNew},
		{StatusSkipped, StatusPass, EventNew},
		{StatusSkipped, StatusOOM, EventNew},
		{StatusPass, StatusFail, EventRegression},
		{StatusPass, StatusOOM, EventRegression},
		{StatusPass, StatusTimeout, EventRegression},
		{StatusPass, StatusCrash, EventRegression},
		{StatusFail, StatusPass, EventFix},
		{StatusOOM, StatusPass, EventFix},
		{StatusTimeout, StatusPass, EventFix},
		{StatusCrash, StatusPass, EventFix},
		{StatusFail, StatusOOM, EventChange},
		{StatusPass, StatusError, EventChange},
		{StatusPass, StatusSkipped, EventChange},
		{StatusFail, StatusError, EventChange},
		{StatusError, StatusSkipped, EventChange},
	} {
		if got := ClassifyChange(tc.old, tc.new); got != tc.want {
			t.Errorf("ClassifyChange(%q, %q) = %s, want %s", tc.old, tc.new, got, tc.want)
		}
	}
}

func TestIsVerdict(t *testing.T) {
	want := map[Status]bool{StatusPass: true, StatusFail: true, StatusOOM: true, StatusTimeout: true, StatusCrash: true}
	for _, s := range append([]Status{""}, Statuses...) {
		if s.IsVerdict() != want[s] {
			t.Errorf("%q.IsVerdict() = %v", s, s.IsVerdict())
		}
	}
}

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
