package compat

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// good is a result every check accepts: a passing tpu run with every
// figure measured at a sane value.
func good() Result {
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	return Result{
		Target: TargetTPU, Status: StatusPass, Stage: Ptr(StageGenerate), Mode: Ptr(ModeFull),
		Revision: "0123456789abcdef0123456789abcdef01234567", TestedAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),
		DurationS: 42.5,
		Runtime: Runtime{Python: "3.11.9", Torch: "2.15.0+cpu", Transformers: "5.23.0", TorchTPU: "0.2.0",
			Harness: "1.4.0+sha256:0123456789ab", Device: "TPU v6e", DeviceCount: 8, LibTPU: "0.0.52", DeviceMemGB: f(31.25)},
		Metrics: Metrics{LoadS: f(1.5), FirstForwardS: f(0.2), ForwardMS: f(12), CompileS: f(30), TokensPerS: f(1234.5),
			PeakMemBytes: i(3 << 30), MaxAbsDiff: f(0.01), Top1Agreement: f(1), MFU: f(0.31), MBU: f(0.6),
			CompiledStepMS: f(3), TTFTMS: f(20), Perplexity: f(12.5), Tolerance: f(0.05), ParamCount: i(494032768),
			RelError: f(0.001), CosineSimilarity: f(0.99999),
			Efficiency: &Efficiency{Device: "v6e", PeakBF16FLOPS: f(918e12), PeakHBMBytesPerS: f(1.6e12), Tokens: i(128),
				FLOPsPerToken: f(1e9), WeightBytesPerToken: f(1e9), ForwardTiming: "compiled", Model: "full"}},
		Repro:  "scanner probe org/m --revision 0123 --target tpu --mode full",
		Task:   "text-generation",
		Stages: []StageRun{{Stage: StageLoad, OK: true, DurationS: 1.5, Note: "weights: 2 files"}},
		Worker: "tpu-worker-0",
		Op:     Ptr("aten::_fft_r2c"), Signature: Ptr("unsupported_op:aten::_fft_r2c"),
	}
}

// TestValidate: one table of what a result may carry, each refusal naming
// the field. Every case changes one thing of a good result.
func TestValidate(t *testing.T) {
	if err := good().Validate(); err != nil {
		t.Fatalf("a good result: %v", err)
	}
	big := strings.Repeat("x", 1<<20)
	tests := []struct {
		name  string
		edit  func(r *Result)
		field string // "" when the result stays valid
	}{
		{"status untested", func(r *Result) { r.Status = StatusUntested }, "status"},
		{"status unknown", func(r *Result) { r.Status = "great" }, "status"},
		{"target auto", func(r *Result) { r.Target = TargetAuto }, "target"},
		{"no tested_at", func(r *Result) { r.TestedAt = time.Time{} }, "tested_at"},
		{"tested_at after 2262", func(r *Result) { r.TestedAt = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC) }, "tested_at"},
		{"tested_at before 1970", func(r *Result) { r.TestedAt = time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC) }, "tested_at"},
		{"bad stage", func(r *Result) { r.Stage = Ptr(Stage("warp")) }, "stage"},
		{"bad class", func(r *Result) { r.FailureClass = Ptr(FailureClass("bad_luck")) }, "failure_class"},
		{"bad reason", func(r *Result) { r.Reason = Ptr(Reason("tired")) }, "reason"},
		{"mode auto", func(r *Result) { r.Mode = Ptr(ModeAuto) }, "mode"},
		{"bad stages entry", func(r *Result) { r.Stages[0].Stage = "warp" }, "stages[0].stage"},
		{"negative stage time", func(r *Result) { r.Stages[0].DurationS = -1 }, "stages[0].duration_s"},
		// Figures: a time is >= 0, a fraction 0..1, every figure finite and
		// within a generous bound.
		{"negative duration", func(r *Result) { r.DurationS = -3 }, "duration_s"},
		{"infinite duration", func(r *Result) { r.DurationS = math.Inf(1) }, "duration_s"},
		{"NaN duration", func(r *Result) { r.DurationS = math.NaN() }, "duration_s"},
		{"negative load", func(r *Result) { r.Metrics.LoadS = Ptr(-0.5) }, "metrics.load_s"},
		{"mfu 1e300", func(r *Result) { r.Metrics.MFU = Ptr(1e300) }, "metrics.mfu"},
		{"mbu above 1", func(r *Result) { r.Metrics.MBU = Ptr(1.01) }, "metrics.mbu"},
		{"top-1 7.0", func(r *Result) { r.Metrics.Top1Agreement = Ptr(7.0) }, "metrics.top1_agreement"},
		{"top-1 negative", func(r *Result) { r.Metrics.Top1Agreement = Ptr(-0.1) }, "metrics.top1_agreement"},
		{"309-digit tokens/s", func(r *Result) { r.Metrics.TokensPerS = Ptr(1e308) }, "metrics.tokens_per_s"},
		{"negative forward", func(r *Result) { r.Metrics.ForwardMS = Ptr(-1.0) }, "metrics.forward_ms"},
		{"negative peak memory", func(r *Result) { r.Metrics.PeakMemBytes = Ptr[int64](-1) }, "metrics.peak_mem_bytes"},
		{"negative params", func(r *Result) { r.Metrics.ParamCount = Ptr[int64](-5) }, "metrics.param_count"},
		{"cosine above 1", func(r *Result) { r.Metrics.CosineSimilarity = Ptr(1.5) }, "metrics.cosine_similarity"},
		{"cosine -1 is a cosine", func(r *Result) { r.Metrics.CosineSimilarity = Ptr(-1.0) }, ""},
		{"cosine rounded past 1", func(r *Result) { r.Metrics.CosineSimilarity = Ptr(1.0000001) }, ""},
		{"a huge but real diff", func(r *Result) { r.Metrics.MaxAbsDiff = Ptr(3e38) }, ""},
		{"a diff past float32", func(r *Result) { r.Metrics.MaxAbsDiff = Ptr(1e300) }, "metrics.max_abs_diff"},
		{"negative efficiency peak", func(r *Result) { r.Metrics.Efficiency.PeakBF16FLOPS = Ptr(-1.0) }, "metrics.efficiency.peak_bf16_flops"},
		{"nil figures are not measured", func(r *Result) { r.Metrics = Metrics{} }, ""},
		// Strings a worker or a harness supplies: capped, no control characters.
		{"device with ESC", func(r *Result) { r.Runtime.Device = "TPU\x1b[2J" }, "runtime.device"},
		{"1 MB device name", func(r *Result) { r.Runtime.Device = big }, "runtime.device"},
		{"torch with a newline", func(r *Result) { r.Runtime.Torch = "2.15\n0" }, "runtime.torch"},
		{"torch with a bar", func(r *Result) { r.Runtime.Torch = "2.15|x" }, "runtime.torch"},
		{"long harness", func(r *Result) { r.Runtime.Harness = strings.Repeat("1", 65) }, "runtime.harness"},
		{"bidi in transformers", func(r *Result) { r.Runtime.Transformers = "5.23\u202e" }, "runtime.transformers"},
		{"negative device count", func(r *Result) { r.Runtime.DeviceCount = -1 }, "runtime.device_count"},
		{"absurd device memory", func(r *Result) { r.Runtime.DeviceMemGB = Ptr(math.Inf(1)) }, "runtime.device_memory_gib"},
		{"op with BEL", func(r *Result) { r.Op = Ptr("aten::x\x07") }, "op"},
		{"long signature", func(r *Result) { r.Signature = Ptr(big) }, "signature"},
		{"revision with a space", func(r *Result) { r.Revision = "abc def" }, "revision"},
		{"worker with C1", func(r *Result) { r.Worker = "host\u0085" }, "worker"},
		{"task with NUL", func(r *Result) { r.Task = "text\x00gen" }, "task"},
		{"repro over its cap", func(r *Result) { r.Repro = big }, "repro"},
		{"not UTF-8", func(r *Result) { r.Runtime.Device = "\xff" }, "runtime.device"},
		// Free text is cleaned where it enters the store (Clean), not refused.
		{"message with ESC", func(r *Result) { r.Message = Ptr("\x1b[31mboom\x1b[0m") }, ""},
	}
	for _, tt := range tests {
		r := good()
		tt.edit(&r)
		err := r.Validate()
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.field == "":
		case err == nil:
			t.Errorf("%s: accepted, want %s refused", tt.name, tt.field)
		case !errors.Is(err, ErrInvalidResult):
			t.Errorf("%s: %v does not wrap ErrInvalidResult", tt.name, err)
		default:
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Errorf("%s: %v: want the field %s named", tt.name, err, tt.field)
			}
			if len(err.Error()) > 400 {
				t.Errorf("%s: the error quotes too much (%d bytes)", tt.name, len(err.Error()))
			}
		}
	}
}

// TestRuntimeValidate: a worker's runtime at registration is checked by the
// same rule as a result's.
func TestRuntimeValidate(t *testing.T) {
	if err := good().Runtime.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (Runtime{}).Validate(); err != nil {
		t.Errorf("an empty runtime (nothing reported yet): %v", err)
	}
	rt := good().Runtime
	rt.Python = strings.Repeat("9", 1<<20)
	var fe *FieldError
	if err := rt.Validate(); !errors.As(err, &fe) || fe.Field != "runtime.python" {
		t.Errorf("a 1 MB python version: %v", err)
	}
}

// TestCheckLabel: the rule for a short string from outside (worker ids,
// hosts, versions).
func TestCheckLabel(t *testing.T) {
	for _, tt := range []struct {
		s   string
		max int
		ok  bool
	}{
		{"tpu-worker-0.example", 253, true},
		{"", 10, true}, // required-ness is the caller's
		{"a b", 10, true},
		{"0123456789a", 10, false},
		{"x\ty", 10, false},
		{"x\u200fy", 10, false},
		{"x\xffy", 10, false},
	} {
		err := CheckLabel("f", tt.s, tt.max)
		if (err == nil) != tt.ok {
			t.Errorf("CheckLabel(%q, %d) = %v, want ok=%v", tt.s, tt.max, err, tt.ok)
		}
	}
}

// TestClean: free text is kept without what would act on a terminal or a
// page, within its cap; the figures and ids are untouched.
func TestClean(t *testing.T) {
	r := good()
	r.Message = Ptr("\x1b[31mRuntimeError\x1b[0m: boom\x07\r\nline 2")
	r.LogTail = strings.Repeat("y", 2*MaxLogTailBytes) + "\x1b[1mlast line\x1b[m\n"
	r.Stages[0].Note = "note\u009b2J"
	r.Continuation = &Continuation{Prompt: "p\x1b]0;t\x07", Text: "t\x00ext"}
	r.Metrics.Efficiency.Note = "n\u202eote"
	c := r.Clean()
	if *c.Message != "RuntimeError: boom\nline 2" {
		t.Errorf("message %q", *c.Message)
	}
	if len(c.LogTail) > MaxLogTailBytes || !strings.HasSuffix(c.LogTail, "last line\n") {
		t.Errorf("log tail: %d bytes ending %q: want its end, within %d", len(c.LogTail), c.LogTail[max(len(c.LogTail)-20, 0):], MaxLogTailBytes)
	}
	if c.Stages[0].Note != "note" || c.Continuation.Prompt != "p" || c.Continuation.Text != "text" || c.Metrics.Efficiency.Note != "note" {
		t.Errorf("notes %q, continuation %+v, efficiency note %q", c.Stages[0].Note, *c.Continuation, c.Metrics.Efficiency.Note)
	}
	if r.Stages[0].Note != "note\u009b2J" || *r.Message == *c.Message {
		t.Error("Clean changed its receiver's slices or pointers")
	}
	long := good()
	long.Message = Ptr(strings.Repeat("é", MaxMessageBytes))
	if m := *long.Clean().Message; len(m) > MaxMessageBytes || !strings.HasPrefix(m, "éé") || !strings.HasSuffix(m, "é") {
		t.Errorf("a long message: %d bytes, want its start within %d, whole runes", len(m), MaxMessageBytes)
	}
	if c.Metrics.MFU != r.Metrics.MFU || c.Runtime.Device != r.Runtime.Device || c.Revision != r.Revision {
		t.Error("Clean touched a figure or the runtime")
	}
}

func TestRuntimeOfKey(t *testing.T) {
	rt := good().Runtime
	got, ok := RuntimeOfKey(rt.RetestKey())
	if !ok || got.RetestKey() != rt.RetestKey() || got.Torch != rt.Torch || got.Harness != rt.Harness || got.Device != "" {
		t.Errorf("RuntimeOfKey(%q) = %+v, %v", rt.RetestKey(), got, ok)
	}
	for _, bad := range []string{"", "a|b", "a|b|c|d|e"} {
		if _, ok := RuntimeOfKey(bad); ok {
			t.Errorf("RuntimeOfKey(%q) accepted", bad)
		}
	}
}
func TestValidateVocabulary(t *testing.T) {
	valid := func() Result {
		return Result{Target: TargetTPU, Status: StatusFail, TestedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
			Stage: Ptr(StageForward), FailureClass: Ptr(ClassUnsupportedOp), Mode: Ptr(ModeArch),
			Stages: []StageRun{{Stage: StageEnv}, {Stage: StageForward}}}
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("a valid result: %v", err)
	}
	skip := Result{Target: TargetCPU, Status: StatusSkipped, Reason: Ptr(ReasonGated), TestedAt: time.Now()}
	if err := skip.Validate(); err != nil {
		t.Errorf("a skip with its reason: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(r *Result)
		want   string
	}{
		{"untested", func(r *Result) { r.Status = StatusUntested }, "status"},
		{"unknown status", func(r *Result) { r.Status = "flaky" }, "status"},
		{"no target", func(r *Result) { r.Target = "" }, "target"},
		{"target auto", func(r *Result) { r.Target = TargetAuto }, "target"},
		{"no tested_at", func(r *Result) { r.TestedAt = time.Time{} }, "tested_at"},
		{"unknown stage", func(r *Result) { r.Stage = Ptr(Stage("warmup")) }, "stage"},
		{"unknown class", func(r *Result) { r.FailureClass = Ptr(FailureClass("gremlins")) }, "failure_class"},
		{"unknown reason", func(r *Result) { r.Reason = Ptr(Reason("bored")) }, "reason"},
		{"skip without reason", func(r *Result) { r.Status, r.Stage, r.FailureClass = StatusSkipped, nil, nil }, "skipped without a reason"},
		{"mode auto", func(r *Result) { r.Mode = Ptr(ModeAuto) }, "mode"},
		{"unknown stage in stages", func(r *Result) { r.Stages = append(r.Stages, StageRun{Stage: "warmup"}) }, "stages"},
	} {
		r := valid()
		tc.mutate(&r)
		if err := r.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
}
