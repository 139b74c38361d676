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
	served := func(e compat.Event) compat.Event { e.Runtime.VLLMTorchTPU = "0.29.0"; return e }
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
		{served(ev(compat.EventServingNew, "", compat.StatusPass, nil, nil)), "Serving measured: org/m serves with vLLM-TorchTPU 0.29.0 on tpu"},
		{ev(compat.EventServingNew, "", compat.StatusFail, nil, sig("load_error:vllm_unsupported_architecture")),
			"Serving measured: org/m fails serving with vLLM-TorchTPU on tpu (load_error vllm_unsupported_architecture)"},
		{served(ev(compat.EventServingRegression, compat.StatusPass, compat.StatusOOM, nil, sig("oom:load"))),
			"Serving regression: org/m stops serving with vLLM-TorchTPU 0.29.0 on tpu: runs out of memory (oom load)"},
		{served(ev(compat.EventServingFix, compat.StatusFail, compat.StatusPass, nil, sig("x:y"))),
			"Serving fixed: org/m serves with vLLM-TorchTPU 0.29.0 on tpu (was fail)"},
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
