package changetext

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func TestTitle(t *testing.T) {
	stage := func(s compat.Stage) *compat.Stage { return &s }
	sig := func(s string) *string { return &s }
	ev := func(kind compat.EventKind, from, to compat.Status, st *compat.Stage, sg *string) compat.Event {
		return compat.Event{ModelID: "org/m", Target: compat.TargetTPU, Kind: kind, FromStatus: from, ToStatus: to, Stage: st, Signature: sg}
	}
	for _, tc := range []struct {
		e    compat.Event
		want string
	}{
		{ev(compat.EventRegression, compat.StatusPass, compat.StatusFail, stage("forward"), sig("unsupported_op:aten::_fft_r2c")),
			"Regression: org/m fails on tpu (forward, unsupported_op aten::_fft_r2c)"},
		{ev(compat.EventRegression, compat.StatusPass, compat.StatusOOM, stage("load"), nil), "Regression: org/m runs out of memory on tpu (load)"},
		{ev(compat.EventRegression, compat.StatusPass, compat.StatusTimeout, nil, sig("")), "Regression: org/m times out on tpu"},
		{ev(compat.EventRegression, compat.StatusPass, compat.StatusCrash, stage(""), sig("signal:SIGSEGV")), "Regression: org/m crashes on tpu (signal SIGSEGV)"},
		{ev(compat.EventFix, compat.StatusFail, compat.StatusPass, stage("generate"), sig("x:y")), "Fixed: org/m passes on tpu (was fail)"},
		{ev(compat.EventFix, "", compat.StatusPass, nil, nil), "Fixed: org/m passes on tpu"},
		{ev(compat.EventNew, "", compat.StatusSkipped, stage("config"), sig("remote_code")), "New: org/m is skipped on tpu (config, remote_code)"},
		{ev(compat.EventNew, "", compat.StatusPass, stage("generate"), nil), "New: org/m passes on tpu"},
		{ev(compat.EventTrainRegression, compat.StatusPass, compat.StatusFail, stage("train"), sig("nonfinite:loss")),
			"Train regression: org/m fails in the train step on tpu (train, nonfinite loss)"},
		{ev(compat.EventTrainFix, compat.StatusFail, compat.StatusPass, nil, nil), "Train fixed: org/m passes the train step on tpu (was fail)"},
		{ev(compat.EventFlaky, compat.StatusPass, compat.StatusFail, nil, nil), "Flaky: org/m on tpu: fail did not reproduce (kept pass)"},
		{ev(compat.EventFlaky, "", compat.StatusCrash, nil, nil), "Flaky: org/m on tpu: crash did not reproduce"},
		{ev("renamed", compat.StatusError, compat.StatusUntested, stage("load"), nil), "Changed: org/m is untested on tpu (was error) (load)"},
		{ev("other", "", compat.StatusError, nil, sig("environment:missing_package:x")),
			"Changed: org/m could not be tested on tpu (environment missing_package:x)"},
		{ev("other", "", "odd", nil, nil), "Changed: org/m is odd on tpu"},
	} {
		if got := Title(tc.e); got != tc.want {
			t.Errorf("Title(%+v)\n got %q\nwant %q", tc.e, got, tc.want)
		}
	}
}
