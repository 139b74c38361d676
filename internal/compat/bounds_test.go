package compat

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestValidateAtTheBounds: each range and cap accepts its bound and refuses
// one past it. The bounds are the documented ones: a device count up to
// 65536 (1<<16), a time in milliseconds up to 1e7 s = 1e10 ms, at most 4
// precision checks, a label of at most its cap in bytes.
func TestValidateAtTheBounds(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name  string
		edit  func(r *Result)
		field string // "" when the result stays valid
	}{
		{"65536 devices", func(r *Result) { r.Runtime.DeviceCount = 1 << 16 }, ""},
		{"65537 devices", func(r *Result) { r.Runtime.DeviceCount = 1<<16 + 1 }, "runtime.device_count"},
		{"forward_ms 20 s", func(r *Result) { r.Metrics.ForwardMS = f(20e3) }, ""},
		{"forward_ms 1e10", func(r *Result) { r.Metrics.ForwardMS = f(1e10) }, ""},
		{"forward_ms past 1e10", func(r *Result) { r.Metrics.ForwardMS = f(1.0001e10) }, "metrics.forward_ms"},
		{"compiled_step_ms 20 s", func(r *Result) { r.Metrics.CompiledStepMS = f(20e3) }, ""},
		{"compiled_step_ms 1e10", func(r *Result) { r.Metrics.CompiledStepMS = f(1e10) }, ""},
		{"compiled_step_ms past 1e10", func(r *Result) { r.Metrics.CompiledStepMS = f(1.0001e10) }, "metrics.compiled_step_ms"},
		{"ttft_ms 20 s", func(r *Result) { r.Metrics.TTFTMS = f(20e3) }, ""},
		{"ttft_ms 1e10", func(r *Result) { r.Metrics.TTFTMS = f(1e10) }, ""},
		{"ttft_ms past 1e10", func(r *Result) { r.Metrics.TTFTMS = f(1.0001e10) }, "metrics.ttft_ms"},
		{"task of 128 bytes", func(r *Result) { r.Task = strings.Repeat("t", MaxTaskBytes) }, ""},
		{"task of 129 bytes", func(r *Result) { r.Task = strings.Repeat("t", MaxTaskBytes+1) }, "task"},
		{"4 precision checks", func(r *Result) {
			r.Metrics.PrecisionChecks = map[string]PrecisionCheck{"a": {}, "b": {}, "c": {}, "d": {}}
		}, ""},
		{"5 precision checks", func(r *Result) {
			r.Metrics.PrecisionChecks = map[string]PrecisionCheck{"a": {}, "b": {}, "c": {}, "d": {}, "e": {}}
		}, "metrics.precision_checks"},
		{"a verdict's step_ms, forward_ms, compiled_step_ms 1e10", func(r *Result) {
			r.Modes = map[string]Verdict{"m": {Status: StatusPass, Metrics: ModeMetrics{StepMS: f(1e10), ForwardMS: f(1e10), CompiledStepMS: f(1e10)}}}
		}, ""},
		{"a verdict's step_ms past 1e10", func(r *Result) {
			r.Modes = map[string]Verdict{"m": {Status: StatusPass, Metrics: ModeMetrics{StepMS: f(1.0001e10)}}}
		}, "modes.m.metrics.step_ms"},
		{"a verdict's forward_ms past 1e10", func(r *Result) {
			r.Modes = map[string]Verdict{"m": {Status: StatusPass, Metrics: ModeMetrics{ForwardMS: f(1.0001e10)}}}
		}, "modes.m.metrics.forward_ms"},
		{"a verdict's compiled_step_ms past 1e10", func(r *Result) {
			r.Modes = map[string]Verdict{"m": {Status: StatusPass, Metrics: ModeMetrics{CompiledStepMS: f(1.0001e10)}}}
		}, "modes.m.metrics.compiled_step_ms"},
		{"a mode key of 64 bytes", func(r *Result) { r.Modes = map[string]Verdict{strings.Repeat("k", 64): {Status: StatusPass}} }, ""},
		{"a mode key of 65 bytes", func(r *Result) { r.Modes = map[string]Verdict{strings.Repeat("k", 65): {Status: StatusPass}} }, "modes"},
		{"16 graph-break reasons", func(r *Result) { r.Metrics.GraphBreakReasons = reasons(16) }, ""},
		{"17 graph-break reasons", func(r *Result) { r.Metrics.GraphBreakReasons = reasons(17) }, "metrics.graph_break_reasons"},
		{"a version starting with '|'", func(r *Result) { r.Runtime.Torch = "|2.15" }, "runtime.torch"},
		{"a version starting with a space", func(r *Result) { r.Runtime.Harness = " 1.4" }, "runtime.harness"},
		{"a version starting with é", func(r *Result) { r.Runtime.TorchTPU = "é0.2" }, "runtime.torch_tpu"},
		{"an op starting with ESC", func(r *Result) { r.Op = Ptr("\x1b[2Jaten::x") }, "op"},
		{"64 stages", func(r *Result) { r.Stages = stages(MaxStages) }, ""},
		{"65 stages", func(r *Result) { r.Stages = stages(MaxStages + 1) }, "stages"},
		{"16 modes", func(r *Result) { r.Modes = modes(16) }, ""},
		{"17 modes", func(r *Result) { r.Modes = modes(17) }, "modes"},
		{"16 losses", func(r *Result) {
			r.Modes = map[string]Verdict{ModeTrain: {Status: StatusPass, Metrics: ModeMetrics{Losses: losses(16)}}}
		}, ""},
		{"17 losses", func(r *Result) {
			r.Modes = map[string]Verdict{ModeTrain: {Status: StatusPass, Metrics: ModeMetrics{Losses: losses(17)}}}
		},
			"modes.train.metrics.losses"},
	}
	for _, tt := range tests {
		r := good()
		tt.edit(&r)
		wantRefused(t, tt.name, r.Validate(), tt.field)
	}
}

// wantRefused checks err, Validate's answer: nil when field is "", else a
// FieldError naming field.
func wantRefused(t *testing.T, name string, err error, field string) {
	t.Helper()
	var fe *FieldError
	switch {
	case field == "" && err != nil:
		t.Errorf("%s: refused: %v", name, err)
	case field == "":
	case !errors.As(err, &fe) || fe.Field != field:
		t.Errorf("%s: %v, want the field %s refused", name, err, field)
	}
}

// reasons is n graph-break reasons.
func reasons(n int) []string {
	rs := make([]string, n)
	for i := range rs {
		rs[i] = "call_function " + strconv.Itoa(i)
	}
	return rs
}

// stages is n load stages that went well.
func stages(n int) []StageRun {
	ss := make([]StageRun, n)
	for i := range ss {
		ss[i] = StageRun{Stage: StageLoad, OK: true, DurationS: 1}
	}
	return ss
}

// modes is a matrix of n passing verdicts, keyed m0, m1, ….
func modes(n int) map[string]Verdict {
	m := map[string]Verdict{}
	for i := range n {
		m["m"+strconv.Itoa(i)] = Verdict{Status: StatusPass}
	}
	return m
}

// losses is n losses of 1.
func losses(n int) []*float64 {
	xs := make([]*float64, n)
	for i := range xs {
		xs[i] = Ptr(1.0)
	}
	return xs
}

func TestCheckLabelAtItsCap(t *testing.T) {
	if err := CheckLabel("f", "0123456789", 10); err != nil {
		t.Errorf("10 bytes, cap 10: %v", err)
	}
	if err := CheckLabel("f", "0123456789a", 10); err == nil || err.Error() != "f: 11 bytes, over 10" {
		t.Errorf("11 bytes, cap 10: %v, want \"f: 11 bytes, over 10\"", err)
	}
}

// TestRefusalQuotesAtMost64Bytes: an error quotes a refused value whole up
// to 64 bytes, else its first 64 bytes (whole runes) and "…".
func TestRefusalQuotesAtMost64Bytes(t *testing.T) {
	s64 := strings.Repeat("s", 64)
	for _, tc := range []struct{ status, quoted string }{
		{s64, `"` + s64 + `"`},
		{s64 + "t", `"` + s64 + `…"`},
		{strings.Repeat("s", 63) + "é", `"` + strings.Repeat("s", 63) + `…"`}, // 65 bytes: é would be cut
	} {
		r := good()
		r.Status = Status(tc.status)
		want := "status: " + tc.quoted + " is not a result status"
		if err := r.Validate(); err == nil || err.Error() != want {
			t.Errorf("status of %d bytes: %v, want %q", len(tc.status), err, want)
		}
	}
}

// TestCleanAtTheCaps: a message is cut to its first MaxMessageBytes, a log
// tail to its last MaxLogTailBytes, each at a rune boundary; text at its cap
// is kept whole.
func TestCleanAtTheCaps(t *testing.T) {
	r := good()
	exact := strings.Repeat("m", MaxMessageBytes)
	r.Message = &exact
	r.LogTail = strings.Repeat("l", MaxLogTailBytes)
	c := r.Clean()
	if *c.Message != exact || c.LogTail != r.LogTail {
		t.Errorf("text at its cap was cut: message %d bytes, log tail %d", len(*c.Message), len(c.LogTail))
	}
	// An "é" (2 bytes) across the message's cap: it goes, whole.
	across := strings.Repeat("m", MaxMessageBytes-1) + "é"
	r.Message = &across
	// An "é" across the start of the log tail's last MaxLogTailBytes.
	r.LogTail = "é" + strings.Repeat("l", MaxLogTailBytes-1)
	c = r.Clean()
	if want := strings.Repeat("m", MaxMessageBytes-1); *c.Message != want {
		t.Errorf("message: %d bytes ending %q, want the %d bytes before the é", len(*c.Message), (*c.Message)[len(*c.Message)-3:], len(want))
	}
	if want := strings.Repeat("l", MaxLogTailBytes-1); c.LogTail != want || !utf8.ValidString(c.LogTail) {
		t.Errorf("log tail: %d bytes starting %q, want the %d bytes after the é", len(c.LogTail), c.LogTail[:3], len(want))
	}
}

// TestCleanLeavesCleanTextAlone: a result whose free text needs nothing is
// the same result after Clean, to the last nil slice (callers compare
// results with reflect.DeepEqual and JSON).
func TestCleanLeavesCleanTextAlone(t *testing.T) {
	for name, r := range map[string]Result{
		"good":                  good(),
		"without stages":        func() Result { r := good(); r.Stages = nil; return r }(),
		"with the matrix":       withMatrix(),
		"nothing but a verdict": {Target: TargetCPU, Status: StatusPass},
	} {
		if c := r.Clean(); !reflect.DeepEqual(c, r) {
			t.Errorf("%s: Clean changed a clean result:\n got %#v\nwant %#v", name, c, r)
		}
	}
}

// TestRuntimeKeyBounds: a key of MaxRuntimeKey bytes is read, one of a
// byte more is not; a byte under 0x10 is escaped with a leading 0 and read
// back; an escape that is not two upper-case hex digits is named as such.
func TestRuntimeKeyBounds(t *testing.T) {
	long := RuntimeRef{Target: TargetTPU, Torch: strings.Repeat("a", MaxRuntimeKey-len("tpu~~~~"))}
	key := long.Key()
	if len(key) != MaxRuntimeKey {
		t.Fatalf("key of %d bytes, want %d", len(key), MaxRuntimeKey)
	}
	if got, err := ParseRuntimeKey(key); err != nil || got != long {
		t.Errorf("a key of %d bytes: %+v, %v", MaxRuntimeKey, got, err)
	}
	if _, err := ParseRuntimeKey(key[:4] + "a" + key[4:]); !errors.Is(err, ErrRuntimeKey) {
		t.Errorf("a key of %d bytes: %v, want refused", MaxRuntimeKey+1, err)
	}
	tab := RuntimeRef{Target: TargetCPU, Harness: "a\tb\x01"}
	if got := tab.Key(); got != "cpu~~~~a_09b_01" {
		t.Errorf("Key() = %q, want %q", got, "cpu~~~~a_09b_01")
	}
	if got, err := ParseRuntimeKey("cpu~~~~a_09b_01"); err != nil || got != tab {
		t.Errorf("ParseRuntimeKey(cpu~~~~a_09b_01) = %+v, %v; want %+v", got, err, tab)
	}
	for _, key := range []string{"cpu~_ZZ~~~", "cpu~_2b~~~", "cpu~_G0~~~", "cpu~_0g~~~"} {
		if _, err := ParseRuntimeKey(key); err == nil || !strings.Contains(err.Error(), "a bad escape at byte 0") {
			t.Errorf("ParseRuntimeKey(%q): %v, want \"a bad escape at byte 0\"", key, err)
		}
	}
}
