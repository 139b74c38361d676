package compat

import (
	"strings"
	"testing"
	"time"
)

// TestValidate: the one check of a result that may be recorded (the
// runner, the fleet and the store call it). Each case breaks one rule of a
// valid result and must be refused naming it.
func TestValidate(t *testing.T) {
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
