// Package changetext words a status change for people: the one-line title
// the feed, its Atom form and the webhooks all show.
package changetext

import (
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// verb says what a status means in a sentence: "Qwen/x fails on tpu".
func verb(st compat.Status) string {
	switch st {
	case compat.StatusPass:
		return "passes"
	case compat.StatusFail:
		return "fails"
	case compat.StatusOOM:
		return "runs out of memory"
	case compat.StatusTimeout:
		return "times out"
	case compat.StatusCrash:
		return "crashes"
	case compat.StatusSkipped:
		return "is skipped"
	case compat.StatusError:
		return "could not be tested"
	case compat.StatusUntested:
		return "is untested"
	}
	return "is " + string(st)
}

// Title is the one-line summary of a status change, e.g.
// "Regression: org/model fails on tpu (forward, unsupported_op aten::_fft_r2c)".
func Title(e compat.Event) string {
	var parts []string
	if e.Stage != nil && *e.Stage != "" && e.ToStatus != compat.StatusPass {
		parts = append(parts, string(*e.Stage))
	}
	if e.Signature != nil && *e.Signature != "" {
		parts = append(parts, strings.Replace(*e.Signature, ":", " ", 1))
	}
	why := ""
	if len(parts) > 0 {
		why = " (" + strings.Join(parts, ", ") + ")"
	}
	on := " on " + string(e.Target)
	switch e.Kind {
	case compat.EventRegression:
		return "Regression: " + e.ModelID + " " + verb(e.ToStatus) + on + why
	case compat.EventFix:
		return "Fixed: " + e.ModelID + " " + verb(e.ToStatus) + on + wasStatus(e)
	case compat.EventNew:
		return "New: " + e.ModelID + " " + verb(e.ToStatus) + on + why
	case compat.EventTrainRegression:
		return "Train regression: " + e.ModelID + " " + verb(e.ToStatus) + " in the train step" + on + why
	case compat.EventTrainFix:
		return "Train fixed: " + e.ModelID + " " + verb(e.ToStatus) + " the train step" + on + wasStatus(e)
	case compat.EventServingNew:
		return "Serving measured: " + e.ModelID + " " + servingVerb(e.ToStatus) + " with " + vllm(e) + on + why
	case compat.EventServingRegression:
		return "Serving regression: " + e.ModelID + " stops serving with " + vllm(e) + on + ": " + verb(e.ToStatus) + why
	case compat.EventServingFix:
		return "Serving fixed: " + e.ModelID + " serves with " + vllm(e) + on + wasStatus(e)
	case compat.EventFlaky:
		return "Flaky: " + e.ModelID + on + ": " + string(e.ToStatus) + " did not reproduce" + keptStatus(e)
	}
	return "Changed: " + e.ModelID + " " + verb(e.ToStatus) + on + wasStatus(e) + why
}

func wasStatus(e compat.Event) string {
	if e.FromStatus == "" {
		return ""
	}
	return " (was " + string(e.FromStatus) + ")"
}

func keptStatus(e compat.Event) string {
	if e.FromStatus == "" {
		return ""
	}
	return " (kept " + string(e.FromStatus) + ")"
}

// servingVerb says what a measured serving status means: "serves", or the
// status's verb ("fails", "runs out of memory") for one held against it.
func servingVerb(st compat.Status) string {
	if st == compat.StatusPass {
		return "serves"
	}
	return verb(st) + " serving"
}

// vllm names the serving change's vLLM-TorchTPU: "vLLM-TorchTPU 0.29.0",
// without the version when the probe did not say it.
func vllm(e compat.Event) string {
	if e.Runtime.VLLMTorchTPU == "" {
		return "vLLM-TorchTPU"
	}
	return "vLLM-TorchTPU " + e.Runtime.VLLMTorchTPU
}
