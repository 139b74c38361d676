package badge

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
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
			badge{Label: "TorchTPU train", Message: "passing", Tone: show.TonePass}},
		{"fail at backward", withTrain(compat.Verdict{Status: compat.StatusFail, Stage: compat.Ptr("backward")}), "",
			badge{Label: "TorchTPU train", Message: "failing · backward", Tone: show.ToneFail}},
		{"skipped no loss", withTrain(compat.Verdict{Status: compat.StatusSkipped, Reason: compat.Ptr("no_loss")}), "t",
			badge{Label: "t", Message: "skipped · no loss", Tone: show.ToneNeutral}},
		{"hostile stage", withTrain(compat.Verdict{Status: compat.StatusFail, Stage: compat.Ptr("<b>\x00x")}), "",
			badge{Label: "TorchTPU train", Message: "failing · <b>x", Tone: show.ToneFail}},
		{"result without a matrix", &compat.Model{ID: "org/m", Result: result(compat.StatusPass)}, "",
			badge{Label: "TorchTPU train", Message: "untested", Tone: show.ToneNeutral}},
		{"untested model", &compat.Model{ID: "org/m"}, "", badge{Label: "TorchTPU train", Message: "untested", Tone: show.ToneNeutral}},
		{"unknown", nil, "", badge{Label: "TorchTPU train", Message: "unknown", Tone: show.ToneNeutral}},
	}
	for _, tc := range tests {
		got := trainBadgeFor(tc.model, compat.TargetTPU, tc.label)
		got.Evidence = "" // TestBadgeEvidence
		if got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
