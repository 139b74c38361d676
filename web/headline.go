package web

import (
	"context"
	"fmt"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// figures are the pass figures of one tier of evidence, each from its own
// results only: TorchTPU's from TPU runs, the CPU reference's from CPU
// runs (issue 37: a CPU rate is never shown as a TPU one).
type figures struct {
	Name     string              `json:"name"`     // what the figures are of, in words
	Evidence compat.EvidenceKind `json:"evidence"` // measured, or predicted (the kernel table's figures)
	Target   compat.Target       `json:"target"`
	Models   int                 `json:"models"`  // every known model
	Results  int                 `json:"results"` // models with a result on the target, verdict or not
	Tested   int                 `json:"tested"`  // of them, with a verdict (pass, fail, oom, timeout, crash)
	Passed   int                 `json:"passed"`
	// PassRate is Passed ÷ Tested, WeightedPassRate the same weighted by
	// downloads; null when Tested is 0.
	PassRate         *float64 `json:"pass_rate"`
	WeightedPassRate *float64 `json:"download_weighted_pass_rate"`
}

// passHeadline is what the table's headline and /api/v1/summary say of the
// pass rates, tier by tier: TorchTPU's figures only from TPU runs, and
// when there are none, the words that say so; the CPU reference's (and
// CUDA's) under their own names; predicted figures under theirs (the
// runtime's TorchTPU kernel table's, issue 36).
type passHeadline struct {
	// TPU is the figures measured on TPU; nil when no TPU run gave a verdict.
	TPU *figures
	// NoTPU says in words why there are no TPU figures ("" when there are).
	NoTPU string
	// Others are the figures measured on the other targets that have a
	// verdict, the CPU reference first.
	Others []figures
	// Predicted is the TorchTPU predictions' figures (the kernel table's,
	// from the ops of runs off tpu); nil when no model has a prediction.
	Predicted *figures
}

// The words of the headline when no TPU run gave a verdict.
const (
	noTPUResults  = "No TPU results on this instance yet"
	noTPUVerdicts = "No TPU verdicts on this instance yet"
)

// figuresName names each target's measured figures.
var figuresName = map[compat.Target]string{
	compat.TargetTPU:  "TorchTPU, measured on TPU",
	compat.TargetCPU:  "CPU reference, measured on CPU (not TorchTPU)",
	compat.TargetCUDA: "CUDA, measured on CUDA (not TorchTPU)",
}

// measuredFigures are target's figures from its summary (Store.Summary on
// that target alone).
func measuredFigures(target compat.Target, sum store.Summary) figures {
	return figures{Name: figuresName[target], Evidence: compat.EvidenceMeasured, Target: target, Models: sum.Models,
		Results: sum.Models - sum.Counts[compat.StatusUntested], Tested: sum.Tested, Passed: sum.Counts[compat.StatusPass],
		PassRate: sum.PassRate, WeightedPassRate: sum.WeightedPassRate}
}

// newHeadline is the one rule for the headline, from each target's own
// summary (a target missing from byTarget has no results), and the
// predictions' sum.
func newHeadline(byTarget map[compat.Target]store.Summary, pred store.Predicted) passHeadline {
	var h passHeadline
	h.Predicted = predictedFigures(byTarget[compat.TargetTPU].Models, pred)
	for _, t := range compat.Targets {
		f := measuredFigures(t, byTarget[t])
		switch {
		case t == compat.TargetTPU && f.Tested > 0:
			h.TPU = &f
		case t == compat.TargetTPU && f.Results > 0:
			h.NoTPU = fmt.Sprintf("%s: %d %s on TPU, none a verdict (skipped or the scanner's own errors)", noTPUVerdicts, f.Results,
				plural(f.Results, "result", "results"))
		case t == compat.TargetTPU:
			h.NoTPU = noTPUResults
		case f.Tested > 0:
			h.Others = append(h.Others, f)
		}
	}
	return h
}

// predictedFigures are the TorchTPU predictions' figures: of the models
// with a prediction, those that need no operator the kernel table lacks
// for inference ("Passed" here: predicted to have every op; never a TPU
// pass); nil without predictions.
func predictedFigures(models int, p store.Predicted) *figures {
	if p.Models == 0 {
		return nil
	}
	f := figures{Name: "TorchTPU, predicted from " + compat.PredictionSource(p.Table) + " (no TPU ran them)",
		Evidence: compat.EvidencePredicted, Target: compat.TargetTPU, Models: max(models, p.Models), Results: p.Models,
		Tested: p.Models, Passed: p.Covered}
	rate := float64(p.Covered) / float64(p.Models)
	f.PassRate = &rate
	if p.Downloads > 0 {
		w := float64(p.CoveredDownloads) / float64(p.Downloads)
		f.WeightedPassRate = &w
	}
	return &f
}

// cachedPredicted is the predictions' sum, kept until the data changes.
func (s *Server) cachedPredicted(ctx context.Context, changed time.Time) (store.Predicted, error) {
	if v, ok := s.predicted.get("", changed); ok {
		return v, nil
	}
	v, err := s.store.PredictedTally(ctx)
	if err != nil {
		return store.Predicted{}, err
	}
	s.predicted.put("", changed, v, 128+len(v.Table))
	return v, nil
}

// Sentence is the headline's answer in one line, for the API.
func (h passHeadline) Sentence() string {
	if h.TPU == nil {
		return h.NoTPU + "."
	}
	return fmt.Sprintf("TorchTPU, measured on TPU: %d of %d tested models pass (%s).", h.TPU.Passed, h.TPU.Tested, fmtPct(h.TPU.PassRate))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// targetSummaries are each concrete target's summary, through the cache.
func (s *Server) targetSummaries(ctx context.Context, changed time.Time) (map[compat.Target]store.Summary, error) {
	out := make(map[compat.Target]store.Summary, len(compat.Targets))
	for _, t := range compat.Targets {
		sum, err := s.cachedSummary(ctx, t, changed)
		if err != nil {
			return nil, err
		}
		out[t] = sum
	}
	return out, nil
}
