package check

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// onRuntime is a result on tpu with torch_tpu version tt, tested day days
// after testedAt.
func onRuntime(status compat.Status, tt string, day int) compat.Result {
	return compat.Result{Target: compat.TargetTPU, Status: status, TestedAt: testedAt.Add(time.Duration(day) * 24 * time.Hour),
		Runtime: compat.Runtime{Torch: "2.15.0", TorchTPU: tt, Transformers: "5.23.0", Harness: "1"}}
}

func TestCheckSince(t *testing.T) {
	const v1 = "tpu~2.15.0~0.1.0~5.23.0~1"
	pass1, fail1 := onRuntime("pass", "0.1.0", 0), onRuntime("fail", "0.1.0", 0)
	pass2, fail2, err2 := onRuntime("pass", "0.2.0", 1), onRuntime("fail", "0.2.0", 1), onRuntime("error", "0.2.0", 2)
	crash3 := onRuntime("crash", "0.3.0", 3)
	err1 := onRuntime("error", "0.1.0", 0)
	err1.TestedAt = err1.TestedAt.Add(time.Hour) // a retest on the pinned runtime that the scanner itself failed
	detail := func(current compat.Result, history ...compat.Result) *modelDetail {
		c := current
		return &modelDetail{Model: compat.Model{ID: "org/m", Result: &c}, History: history}
	}
	tests := []struct {
		name     string
		detail   *modelDetail
		target   compat.Target
		since    string
		wantCode int
		wantLine string // a part of the line
	}{
		{"passed then, fails now", detail(fail2, fail2, pass1), "", v1, ExitNotPassing,
			"regressed since tpu~2.15.0~0.1.0~5.23.0~1: pass there, fail on tpu~2.15.0~0.2.0~5.23.0~1"},
		// The newest result is the scanner's own error: no verdict, exit 2
		// without --since; the last verdict after the pinned runtime was a
		// failure, so with it the check fails.
		{"regressed, then no verdict", detail(err2, err2, fail2, pass1), "", v1, ExitNotPassing, "regressed since"},
		{"no verdict, no regression", detail(err2, err2, pass2, pass1), "", v1, ExitUntested, "no verdict"},
		{"still passing", detail(pass2, pass2, pass1), "", v1, ExitPass, "org/m: pass on tpu"},
		{"failed then too", detail(fail2, fail2, fail1), "", v1, ExitNotPassing, "org/m: fail on tpu"},
		{"fixed since", detail(pass2, pass2, fail1), "", v1, ExitPass, "org/m: pass on tpu"},
		// The scanner's own error then, a pass now: a first verdict (the
		// feed's event is new, compare's kind new), never a regression.
		{"no verdict then, pass now", detail(pass2, pass2, err1), "", v1, ExitPass, "org/m: pass on tpu"},
		{"the newest verdict counts", detail(pass2, pass2, crash3, pass1), "", v1, ExitPass, "org/m: pass on tpu"},
		{"only the pinned runtime", detail(pass1, pass1), "tpu", v1, ExitPass, "org/m: pass on tpu"},
		{"no result on the runtime", detail(pass2, pass2), "", v1, ExitPass, "no result on runtime tpu~2.15.0~0.1.0~5.23.0~1 to compare with"},
		// The scanner's own error on the pinned runtime is no base: its verdict there is.
		{"an error on the pinned runtime is no base", detail(fail2, fail2, err1, pass1), "", v1, ExitNotPassing,
			"regressed since tpu~2.15.0~0.1.0~5.23.0~1: pass there, fail on"},
		{"only errors on the pinned runtime", detail(fail2, fail2, err1), "", v1, ExitNotPassing,
			"no verdict on runtime tpu~2.15.0~0.1.0~5.23.0~1 to compare with (only the scanner's own errors)"},
		{"a malformed key", detail(pass2, pass2), "", "tpu~0.1.0", ExitUntested, "--since: invalid runtime key"},
		{"a target that is not the runtime's", detail(pass2, pass2), "cpu", v1, ExitUntested, "--since names a tpu runtime, but --target is cpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen string
			srv := server(t, 0, tt.detail, &seen)
			code, line := Check(context.Background(), srv.URL, "org/m", tt.target, tt.since, "", srv.Client())
			if code != tt.wantCode || !strings.Contains(line, tt.wantLine) {
				t.Errorf("= %d %q\nwant %d and a line with %q", code, line, tt.wantCode, tt.wantLine)
			}
			if tt.wantCode != ExitUntested || strings.Contains(tt.wantLine, "verdict") {
				if seen != "/api/v1/models/org/m?target=tpu" {
					t.Errorf("requested %q: want the runtime's target", seen)
				}
			}
		})
	}
}
