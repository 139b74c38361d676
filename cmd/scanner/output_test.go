package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving/measure"
)

func ptr[T any](v T) *T { return &v }

// TestWriteResult: `scanner probe MODEL` without --json prints the Result
// for a person: every field there is, "—" for what was not measured, the
// revision cut to 12 characters, and each stage's state.
func TestWriteResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    compat.Result
		want string
	}{{
		name: "a failure with everything",
		r: compat.Result{
			Target: compat.TargetCPU, Status: compat.StatusFail, Stage: ptr(compat.StageForward),
			FailureClass: ptr(compat.ClassUnsupportedOp), Op: ptr("aten::foo"), Message: ptr("out of luck"),
			Mode: ptr(compat.ModeArch), Revision: "0123456789abcdef0123", DurationS: 42.34,
			Runtime: compat.Runtime{Torch: "2.15.0", Transformers: "5.23.0", Harness: "h1", Device: "cpu", DeviceCount: 1},
			Metrics: compat.Metrics{LoadS: ptr(1.5), ForwardMS: ptr(12.345678), TokensPerS: ptr(123456.0),
				PeakMemBytes: ptr(int64(3<<20 + 1<<19)), MaxAbsDiff: ptr(0.0001234)},
			Stages: []compat.StageRun{
				{Stage: compat.StageLoad, OK: true, DurationS: 2.5, Note: "weights"},
				{Stage: compat.StageForward, DurationS: 0.25, Note: "boom"},
				{Stage: compat.StageCompile, Skipped: true},
			},
			Repro: "scanner probe org/model --revision 0123456789abcdef0123",
		},
		want: "org/model @ 0123456789ab\n" +
			"  status   fail (stage forward, unsupported_op aten::foo)\n" +
			"  target   cpu (cpu, 1 device(s)), mode arch\n" +
			"  runtime  torch 2.15.0, transformers 5.23.0, torch_tpu —, harness h1\n" +
			"  metrics  load 1.5 s, first forward — s, forward 12.35 ms, compile — s, 1.235e+05 tok/s, peak mem 3.5 MiB, max |diff| 0.0001234, top-1 —\n" +
			"    load      ok         2.50s weights\n" +
			"    forward   FAILED     0.25s boom\n" +
			"    compile   skipped    0.00s \n" +
			"  message  out of luck\n" +
			"  took     42.3s\n" +
			"  repro    scanner probe org/model --revision 0123456789abcdef0123\n",
	}, {
		name: "a skip: nothing measured",
		r:    compat.Result{Target: compat.TargetTPU, Status: compat.StatusSkipped, Reason: ptr(compat.ReasonGated)},
		want: "org/model @ —\n" +
			"  status   skipped reason gated\n" +
			"  target   tpu (—, 0 device(s)), mode —\n" +
			"  runtime  torch —, transformers —, torch_tpu —, harness —\n" +
			"  metrics  load — s, first forward — s, forward — ms, compile — s, — tok/s, peak mem —, max |diff| —, top-1 —\n" +
			"  took     0.0s\n" +
			"  repro    \n",
	}, {
		name: "a stage without a class or an op, a 12-character revision",
		r: compat.Result{Target: compat.TargetCPU, Status: compat.StatusTimeout, Stage: ptr(compat.StageLoad),
			Revision: "abcdef012345", Repro: "r"},
		want: "org/model @ abcdef012345\n" +
			"  status   timeout (stage load)\n" +
			"  target   cpu (—, 0 device(s)), mode —\n" +
			"  runtime  torch —, transformers —, torch_tpu —, harness —\n" +
			"  metrics  load — s, first forward — s, forward — ms, compile — s, — tok/s, peak mem —, max |diff| —, top-1 —\n" +
			"  took     0.0s\n" +
			"  repro    r\n",
	}} {
		var b bytes.Buffer
		printResult(&b, "org/model", tc.r)
		if b.String() != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, b.String(), tc.want)
		}
	}
}

// TestPrintResultEscapes: what the model's files and the harness said
// cannot act on the terminal.
func TestPrintResultEscapes(t *testing.T) {
	var b bytes.Buffer
	printResult(&b, "org/model", compat.Result{Status: compat.StatusFail, Message: ptr("red \x1b[31malert\x07")})
	if strings.ContainsAny(b.String(), "\x1b\x07") || !strings.Contains(b.String(), "alert") {
		t.Errorf("message not escaped, or lost:\n%q", b.String())
	}
}

// TestPrintServingNotJudged: a serving probe not judged says why (its
// reason and message), not only its status.
func TestPrintServingNotJudged(t *testing.T) {
	var b bytes.Buffer
	printServing(&b, measure.NoReference(1, "the inference probe's float32 CPU reference failed (reference:forward)"))
	got := b.String()
	for _, want := range []string{"serving  skipped (vLLM-TorchTPU —, measured; tensor_parallel_size 1",
		"no_reference: not judged: the inference probe's float32 CPU reference failed (reference:forward)"} {
		if !strings.Contains(got, want) {
			t.Errorf("printServing lacks %q:\n%s", want, got)
		}
	}
}
