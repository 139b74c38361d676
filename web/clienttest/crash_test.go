//go:build clients

package clienttest

import "testing"

// TestCrashedItself: only a traceback without a failures report is the
// tool's own crash (retried once); a run that reports failures is a finding.
func TestCrashedItself(t *testing.T) {
	for out, want := range map[string]bool{
		"Traceback (most recent call last):\n  File ...\nKeyError: 'x'":                       true,
		"=================================== FAILURES ===\nTraceback (most recent call last)": false,
		"=== FAILURES ===\n1. Test Case ID":                                                   false,
		"":                                                                                    false,
	} {
		if got := crashedItself(out); got != want {
			t.Errorf("crashedItself(%.40q) = %v, want %v", out, got, want)
		}
	}
}
