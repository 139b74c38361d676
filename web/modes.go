package web

import (
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/web/chart"
)

// The verdict matrix of a result (issue 25) as the model page shows it:
// one row per way of running the model, the train step's losses against
// the reference's as a chart, the precision note and the graph breaks.

// modeOrder is the order of the matrix's rows; other keys follow, sorted.
var modeOrder = []string{compat.ModeEager, compat.ModeEagerDeferAndFuse, compat.ModeEagerDeferNever,
	compat.ModeCompiled, compat.ModeTrain}

// modeNames are the rows' headings.
var modeNames = map[string]string{
	compat.ModeEager:             "Inference, eager",
	compat.ModeEagerDeferAndFuse: "Inference, eager DEFER_AND_FUSE (default)",
	compat.ModeEagerDeferNever:   "Inference, eager DEFER_NEVER",
	compat.ModeCompiled:          "Inference, torch.compile",
	compat.ModeTrain:             "Train step (3 × forward, backward, AdamW)",
}

// modeRow is one row of the matrix.
type modeRow struct {
	Key     string
	Name    string
	Verdict compat.Verdict
	// Evidence is what the mode's verdict rests on (compat.EvidenceOfMode):
	// the run that measured it, or none for a mode skipped or not run.
	Evidence compat.Evidence
	Figures  string // the mode's headline figures, "" when none
}

// modeRows lays out r's matrix; nil for a result from before it.
func modeRows(r compat.Result) []modeRow {
	keys := make([]string, 0, len(r.Modes))
	for k := range r.Modes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		ia, ib := slices.Index(modeOrder, a), slices.Index(modeOrder, b)
		if ia < 0 {
			ia = len(modeOrder)
		}
		if ib < 0 {
			ib = len(modeOrder)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	var out []modeRow
	for _, k := range keys {
		v := r.Modes[k]
		name := modeNames[k]
		if name == "" {
			name = k
		}
		out = append(out, modeRow{Key: k, Name: name, Verdict: v, Evidence: compat.EvidenceOfMode(&r, k), Figures: modeFigures(v.Metrics)})
	}
	return out
}

// modeFigures are a verdict's measured figures, in words.
func modeFigures(m compat.ModeMetrics) string {
	var parts []string
	add := func(name, v string) {
		if v != dash {
			parts = append(parts, name+" "+v)
		}
	}
	add("forward", withUnit(fmtNum(m.ForwardMS, 1), " ms"))
	add("compile", withUnit(fmtNum(m.CompileS, 2), " s"))
	add("compiled step", withUnit(fmtNum(m.CompiledStepMS, 1), " ms"))
	if m.Graphs != nil {
		parts = append(parts, "graphs "+strconv.FormatInt(*m.Graphs, 10))
	}
	if m.GraphBreaks != nil {
		parts = append(parts, "graph breaks "+strconv.FormatInt(*m.GraphBreaks, 10))
	}
	if m.Recompiles != nil {
		parts = append(parts, "recompiles "+strconv.FormatInt(*m.Recompiles, 10))
	}
	add("step", withUnit(fmtNum(m.StepMS, 1), " ms"))
	add("throughput", withUnit(fmtNum(m.TokensPerS, 1), " tok/s"))
	if m.TokensPerS == nil {
		add("throughput", withUnit(fmtNum(m.SamplesPerS, 1), " samples/s"))
	}
	if m.PeakMemBytes != nil {
		parts = append(parts, "peak memory "+fmtBytes(m.PeakMemBytes))
	}
	if m.Precision != nil {
		parts = append(parts, "precision "+*m.Precision)
	}
	return strings.Join(parts, " · ")
}

// lossChart draws the train step's three losses on target t against the
// float32 CPU reference's; "" without a train verdict that has losses.
func lossChart(r compat.Result) template.HTML {
	tr := r.Train()
	if tr == nil || (len(tr.Metrics.Losses) == 0 && len(tr.Metrics.ReferenceLosses) == 0) {
		return ""
	}
	n := max(len(tr.Metrics.Losses), len(tr.Metrics.ReferenceLosses))
	labels := make([]string, n)
	for i := range labels {
		labels[i] = "Step " + strconv.Itoa(i+1)
	}
	values := func(xs []*float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = math.NaN()
			if i < len(xs) && xs[i] != nil {
				out[i] = *xs[i]
			}
		}
		return out
	}
	name := targetName(r.Target)
	return chart.Line{
		Meta: chart.Meta{ID: "train-loss-" + string(r.Target), Title: "Train loss on " + name + " vs the float32 CPU reference",
			Caption: true, Desc: "The loss of each of the three AdamW steps, from the same initial weights and inputs",
			Empty: "No train loss measured."},
		XName: "Step", Labels: labels,
		Series: []chart.Series{{Name: name, Values: values(tr.Metrics.Losses)},
			{Name: "CPU float32 reference", Values: values(tr.Metrics.ReferenceLosses)}},
		Format: func(f float64) string { return strconv.FormatFloat(f, 'g', 5, 64) },
	}.Render()
}

// precisionHint is the model page's advice for a precision-sensitive result.
const precisionHint = "The numerics pass on TorchTPU only at the highest float32 matmul precision: run the model under " +
	"torch.tpu.precision(torch.tpu.Precision.HIGHEST) (TorchTPU's default runs float32 matmuls as one bfloat16 pass)."

// precisionNote says at which precision r's figures were measured, and
// the hint when only HIGHEST passed; "" off tpu.
func precisionNote(r compat.Result) string {
	if r.PrecisionSensitive {
		return precisionHint
	}
	if p := r.Metrics.Precision; p != nil {
		s := "Measured at TorchTPU's " + *p + " float32 matmul precision"
		if np := r.Metrics.NumericsPrecision; np != nil && *np != *p {
			s += "; the numerics at " + *np
		}
		if len(r.Metrics.PrecisionChecks) == 2 {
			s += "; the numerics pass at both precisions"
		}
		return s + "."
	}
	return ""
}
