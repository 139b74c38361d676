package compat

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// withMatrix is good() with a verdict matrix as the harness writes one.
func withMatrix() Result {
	r := good()
	f := func(v float64) *float64 { return &v }
	r.Modes = map[string]Verdict{
		ModeTrain: {Status: StatusPass, Stage: Ptr("numerics"), Metrics: ModeMetrics{
			Losses: []*float64{f(6.2), f(5.9), nil}, ReferenceLosses: []*float64{f(6.2), f(5.9), f(5.6)},
			StepMS: f(12), TokensPerS: f(700), PeakMemBytes: Ptr(int64(1 << 20)), ParamsChanged: f(1), LR: f(1e-3),
			Precision: Ptr("default")}, Note: "labels: the input ids"},
		ModeCompiled: {Status: StatusPass, Stage: Ptr("compile"), Metrics: ModeMetrics{Graphs: Ptr(int64(2)),
			GraphBreaks: Ptr(int64(1)), GraphBreakReasons: []string{"call_function graph_break"}}},
		ModeEagerDeferNever: {Status: StatusFail, Stage: Ptr("forward"), FailureClass: Ptr(ClassUnsupportedOp),
			Signature: Ptr("unsupported_op:aten::x"), Message: Ptr("boom")},
	}
	r.Metrics.GraphBreaks = Ptr(int64(1))
	r.Metrics.GraphBreakReasons = []string{"call_function graph_break"}
	r.Metrics.Precision = Ptr("default")
	r.Metrics.PrecisionChecks = map[string]PrecisionCheck{"default": {OK: true, MaxAbsDiff: f(0.01)},
		"highest": {OK: true, Top1Agreement: f(1)}}
	r.PrecisionSensitive = true
	return r
}

// TestValidateMatrix: what a worker may send in the matrix. Every case
// changes one thing of a good result.
func TestValidateMatrix(t *testing.T) {
	if err := withMatrix().Validate(); err != nil {
		t.Fatalf("a good matrix: %v", err)
	}
	edit := func(k string, f func(v *Verdict)) func(r *Result) {
		return func(r *Result) { v := r.Modes[k]; f(&v); r.Modes[k] = v }
	}
	for _, tc := range []struct {
		name  string
		edit  func(r *Result)
		field string
	}{
		{"a key with a space", func(r *Result) { r.Modes["a b"] = Verdict{Status: StatusPass} }, "modes"},
		{"too many modes", func(r *Result) {
			for i := 0; i <= MaxModes; i++ {
				r.Modes[strings.Repeat("m", i+1)] = Verdict{Status: StatusPass}
			}
		}, "modes"},
		{"status untested", edit(ModeTrain, func(v *Verdict) { v.Status = StatusUntested }), "modes.train.status"},
		{"bad class", edit(ModeTrain, func(v *Verdict) { v.FailureClass = Ptr(FailureClass("bad_luck")) }), "modes.train.failure_class"},
		{"a stage with an escape", edit(ModeTrain, func(v *Verdict) { v.Stage = Ptr("x\x1b[2J") }), "modes.train.stage"},
		{"a NaN loss", edit(ModeTrain, func(v *Verdict) { v.Metrics.Losses[0] = Ptr(math.NaN()) }), "modes.train.metrics.losses[0]"},
		{"too many losses", edit(ModeTrain, func(v *Verdict) { v.Metrics.Losses = make([]*float64, MaxLosses+1) }), "modes.train.metrics.losses"},
		{"a negative step time", edit(ModeTrain, func(v *Verdict) { v.Metrics.StepMS = Ptr(-1.0) }), "modes.train.metrics.step_ms"},
		{"params_changed over 1", edit(ModeTrain, func(v *Verdict) { v.Metrics.ParamsChanged = Ptr(1.5) }), "modes.train.metrics.params_changed"},
		{"negative graph breaks", edit(ModeCompiled, func(v *Verdict) { v.Metrics.GraphBreaks = Ptr(int64(-1)) }), "modes.compiled.metrics.graph_breaks"},
		{"a reason with a bidi control", edit(ModeCompiled, func(v *Verdict) { v.Metrics.GraphBreakReasons = []string{"a\u202eb"} }),
			"modes.compiled.metrics.graph_break_reasons[0]"},
		{"a long reason", func(r *Result) { r.Metrics.GraphBreakReasons = []string{strings.Repeat("r", MaxReasonBytes+1)} },
			"metrics.graph_break_reasons[0]"},
		{"negative result graph breaks", func(r *Result) { r.Metrics.GraphBreaks = Ptr(int64(-2)) }, "metrics.graph_breaks"},
		{"a precision check off range", func(r *Result) {
			r.Metrics.PrecisionChecks["highest"] = PrecisionCheck{Top1Agreement: Ptr(2.0)}
		}, "metrics.precision_checks.highest.top1_agreement"},
	} {
		r := withMatrix()
		tc.edit(&r)
		err := r.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, ErrInvalidResult) {
			t.Errorf("%s: %v, want a refusal of %s", tc.name, err, tc.field)
		}
	}
}

func TestCleanMatrix(t *testing.T) {
	r := withMatrix()
	v := r.Modes[ModeEagerDeferNever]
	v.Message = Ptr("RuntimeError\x1b[31m: red\n" + strings.Repeat("m", MaxMessageBytes))
	v.Note = "note\x07"
	r.Modes[ModeEagerDeferNever] = v
	r.Metrics.PrecisionChecks["default"] = PrecisionCheck{Why: Ptr("why\x1b]0;title\x07")}
	c := r.Clean()
	got := c.Modes[ModeEagerDeferNever]
	if strings.ContainsAny(*got.Message, "\x1b") || len(*got.Message) > MaxMessageBytes || !strings.HasPrefix(*got.Message, "RuntimeError") {
		t.Errorf("message not cleaned: %.80q (%d bytes)", *got.Message, len(*got.Message))
	}
	if got.Note != "note" || strings.ContainsAny(*c.Metrics.PrecisionChecks["default"].Why, "\x1b\x07") {
		t.Errorf("note %q, why %q", got.Note, *c.Metrics.PrecisionChecks["default"].Why)
	}
	if strings.ContainsAny(*r.Modes[ModeEagerDeferNever].Message, "\x1b") == false {
		t.Error("Clean changed its argument's matrix")
	}
}
