package check

import (
	"context"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func TestCheckModeTrain(t *testing.T) {
	withTrain := func(inference *compat.Result, v *compat.Verdict) *modelDetail {
		if v != nil {
			inference.Modes = map[string]compat.Verdict{compat.ModeTrain: *v}
		}
		return &modelDetail{Model: compat.Model{ID: "gpt2", Result: inference}}
	}
	l := func(x float64) *float64 { return &x }
	tests := []struct {
		name     string
		detail   *modelDetail
		wantCode int
		wantLine string
	}{
		{"train passes", withTrain(passResult(), &compat.Verdict{Status: compat.StatusPass, Stage: compat.Ptr("numerics"),
			Metrics: compat.ModeMetrics{Losses: []*float64{l(6.25), l(5.5), l(4.75)}, StepMS: l(12.34)}}),
			ExitPass, "gpt2: train pass on tpu: loss 6.25 → 4.75, step 12.3 ms (full, 2026-11-30, torch_tpu 0.2.0)"},
		{"inference passes, train fails at backward", withTrain(passResult(), &compat.Verdict{Status: compat.StatusFail,
			Stage: compat.Ptr("backward"), Signature: compat.Ptr("other:harness_test::no_backward has no autograd")}),
			ExitNotPassing, "gpt2: train fail on tpu at backward: other:harness_test::no_backward has no autograd (full,"},
		{"inference fails, train passes", withTrain(failResult(), &compat.Verdict{Status: compat.StatusPass}),
			ExitPass, "gpt2: train pass on tpu (arch,"},
		{"train skipped: no loss", withTrain(passResult(), &compat.Verdict{Status: compat.StatusSkipped,
			Reason: compat.Ptr("no_loss"), Message: compat.Ptr("BertModel's forward takes no labels")}),
			ExitNotPassing, "gpt2: train skipped on tpu: BertModel's forward takes no labels"},
		{"train: the scanner's error", withTrain(passResult(), &compat.Verdict{Status: compat.StatusError}),
			ExitUntested, "gpt2: train error on tpu"},
		{"a result from before the matrix", withTrain(passResult(), nil),
			ExitUntested, "gpt2: no train verdict on tpu (inference pass;"},
		{"untested", &modelDetail{Model: compat.Model{ID: "gpt2"}}, ExitUntested, "gpt2: untested on tpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen string
			srv := server(t, 0, tt.detail, &seen)
			code, line := Check(context.Background(), srv.URL, "gpt2", compat.TargetTPU, "", compat.ModeTrain, srv.Client())
			if code != tt.wantCode || !strings.HasPrefix(line, tt.wantLine) {
				t.Errorf("got %d %q\nwant %d %q", code, line, tt.wantCode, tt.wantLine)
			}
		})
	}
}
