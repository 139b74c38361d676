package web

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

func TestTrainBadgeFor(t *testing.T) {
	withTrain := func(v compat.Verdict) *compat.Model {
		r := result(compat.StatusPass) // the inference passes in every case: the badge must not show it
		r.Metrics.TokensPerS = compat.Ptr(312.4)
		r.Modes = map[string]compat.Verdict{compat.ModeTrain: v}
		return &compat.Model{ID: "org/m", Result: r}
	}
	tests := []struct {
		name  string
		model *compat.Model
		label string
		want  badge
	}{
		{"pass", withTrain(compat.Verdict{Status: compat.StatusPass, Stage: compat.Ptr("numerics")}), "",
			badge{"TorchTPU train", "passing", tonePass}},
		{"fail at backward", withTrain(compat.Verdict{Status: compat.StatusFail, Stage: compat.Ptr("backward")}), "",
			badge{"TorchTPU train", "failing · backward", toneFail}},
		{"skipped no loss", withTrain(compat.Verdict{Status: compat.StatusSkipped, Reason: compat.Ptr("no_loss")}), "t",
			badge{"t", "skipped · no loss", toneNeutral}},
		{"hostile stage", withTrain(compat.Verdict{Status: compat.StatusFail, Stage: compat.Ptr("<b>\x00x")}), "",
			badge{"TorchTPU train", "failing · <b>x", toneFail}},
		{"result without a matrix", &compat.Model{ID: "org/m", Result: result(compat.StatusPass)}, "",
			badge{"TorchTPU train", "untested", toneNeutral}},
		{"untested model", &compat.Model{ID: "org/m"}, "", badge{"TorchTPU train", "untested", toneNeutral}},
		{"unknown", nil, "", badge{"TorchTPU train", "unknown", toneNeutral}},
	}
	for _, tc := range tests {
		if got := trainBadgeFor(tc.model, compat.TargetTPU, tc.label); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
