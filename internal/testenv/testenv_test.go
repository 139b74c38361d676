package testenv

import (
	"fmt"
	"strings"
	"testing"
	"time"
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

// fatalRecorder is a testing.TB that records a Fatalf instead of ending.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Helper()                           {}
func (r *fatalRecorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, "the third ask", time.Second, func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("asked %d times, want 3", n)
	}
	r := &fatalRecorder{TB: t}
	start := time.Now()
	asks := 0
	Eventually(r, "never", 150*time.Millisecond, func() bool { asks++; return r.fatal != "" })
	if took := time.Since(start); !strings.Contains(r.fatal, "timed out after 150ms waiting for never") || took < 150*time.Millisecond || took > 2*time.Second {
		t.Errorf("fatal %q after %v", r.fatal, took)
	}
	// 5, 10, 20, 40, 80, 100 ms: about 6 asks in 150 ms, never a busy loop.
	if asks < 3 || asks > 10 {
		t.Errorf("asked %d times in 150 ms", asks)
	}
}

func TestEventuallyShowing(t *testing.T) {
	r := &fatalRecorder{TB: t}
	shown := 0
	EventuallyShowing(r, "never", 20*time.Millisecond, func() bool { return r.fatal != "" }, func() string { shown++; return "the log" })
	if r.fatal != "timed out after 20ms waiting for never:\nthe log" || shown != 1 {
		t.Errorf("fatal %q, shown %d times", r.fatal, shown)
	}
	EventuallyShowing(t, "at once", time.Second, func() bool { return true }, func() string { t.Error("shown without a failure"); return "" })
}

func TestSourcesAndCopies(t *testing.T) {
	src := Sources(t, ".go", ".md")
	if _, ok := src["internal/testenv/sources.go"]; !ok {
		t.Error("Sources misses internal/testenv/sources.go")
	}
	if _, ok := src["README.md"]; !ok {
		t.Error("Sources misses README.md")
	}
	for path := range src {
		if strings.HasSuffix(path, "_test.go") || strings.Contains(path, "testdata/") || strings.HasPrefix(path, ".") {
			t.Errorf("Sources reads %s", path)
		}
	}
	const word = "func Copies(t testing.TB"
	if got := Copies(t, []string{".go"}, nil, word); len(got) != 1 || got[0] != "internal/testenv/sources.go: "+word {
		t.Errorf("Copies = %v", got)
	}
	if got := Copies(t, []string{".go"}, []string{"internal/testenv/sources.go"}, word); len(got) != 0 {
		t.Errorf("Copies with the owner left out = %v", got)
	}
}
