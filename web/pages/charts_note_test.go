package pages

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// resultNote says where and why a result ended, then on what runtime; each
// part is left out (with its separator) when there is nothing to say.
func TestResultNote(t *testing.T) {
	sig, empty := "unsupported_op:aten::x", ""
	forward, load := compat.StageForward, compat.StageLoad
	oom := compat.ClassOOM
	rt := compat.Runtime{TorchTPU: "0.2.0"}
	for _, c := range []struct {
		name string
		r    compat.Result
		want string
	}{
		{"failure with signature and runtime", compat.Result{Status: compat.StatusFail, Stage: &forward, Signature: &sig,
			FailureClass: compat.Ptr(compat.ClassUnsupportedOp), Runtime: rt}, "forward, unsupported_op:aten::x · torch_tpu 0.2.0"},
		{"an empty signature gives way to the class", compat.Result{Status: compat.StatusOOM, Stage: &load, Signature: &empty,
			FailureClass: &oom, Runtime: rt}, "load, oom · torch_tpu 0.2.0"},
		{"no stage: the reason alone", compat.Result{Status: compat.StatusSkipped, Reason: compat.Ptr(compat.ReasonTooLarge),
			Runtime: rt}, "too_large · torch_tpu 0.2.0"},
		{"a pass says no stage", compat.Result{Status: compat.StatusPass, Stage: &forward, Runtime: rt}, "torch_tpu 0.2.0"},
		{"no runtime", compat.Result{Status: compat.StatusFail, Stage: &forward, Signature: &sig}, "forward, unsupported_op:aten::x"},
		{"stage only", compat.Result{Status: compat.StatusError, Stage: &load}, "load"},
		{"nothing at all", compat.Result{Status: compat.StatusPass}, ""},
	} {
		if got := resultNote(c.r); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
