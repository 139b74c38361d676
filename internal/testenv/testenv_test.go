package testenv

import (
	"strings"
	"testing"
)

// recorder is a testing.TB that records how Missing ended the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skip(args ...any)                  { r.skipped = args[0].(string) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = format }

func TestMissing(t *testing.T) {
	for _, tt := range []struct {
		value      string
		skip, fail bool
	}{{"", true, false}, {"0", true, false}, {"1", false, true}} {
		t.Setenv(RequireAllVar, tt.value)
		r := &recorder{TB: t}
		Missing(r, "no %s here", "python3")
		if (r.skipped != "") != tt.skip || (r.failed != "") != tt.fail {
			t.Errorf("%s=%q: skipped %q, failed %q", RequireAllVar, tt.value, r.skipped, r.failed)
		}
		if tt.skip && r.skipped != "no python3 here" {
			t.Errorf("skip message %q", r.skipped)
		}
		if tt.fail && !strings.Contains(r.failed, "every test must run") {
			t.Errorf("failure format %q", r.failed)
		}
	}
}
