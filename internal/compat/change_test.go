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
