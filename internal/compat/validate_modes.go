package compat

import (
	"fmt"
	"regexp"
	"sort"

	"github.com/google-pytorch/torchtpu-scanner/internal/termsafe"
)

// The verdict matrix's part of Validate and Clean (Result.Modes, the
// precision and graph-break metrics): what a worker may send there.
const (
	MaxModes         = 16  // verdicts in Result.Modes
	MaxModeLabel     = 64  // a mode's key, a verdict's stage or reason, a precision name
	MaxLosses        = 16  // losses and reference_losses, each
	MaxBreakReasons  = 16  // graph_break_reasons
	MaxReasonBytes   = 512 // one graph-break reason
	MaxPrecisionKeys = 4   // metrics.precision_checks
)

var modeKeyRE = regexp.MustCompile(`^[a-z0-9_]+$`)

// validateMatrix checks r's verdict matrix and the metrics that go with it.
func (r Result) validateMatrix() error {
	m := r.Metrics
	if err := checkRange("metrics.graph_breaks", intFigure(m.GraphBreaks), 0, maxCount); err != nil {
		return err
	}
	if err := checkReasons("metrics.graph_break_reasons", m.GraphBreakReasons); err != nil {
		return err
	}
	for _, l := range []struct {
		field string
		s     *string
	}{{"metrics.precision", m.Precision}, {"metrics.numerics_precision", m.NumericsPrecision}} {
		if l.s != nil {
			if err := CheckLabel(l.field, *l.s, MaxModeLabel); err != nil {
				return err
			}
		}
	}
	if len(m.PrecisionChecks) > MaxPrecisionKeys {
		return refuse("metrics.precision_checks", "%d entries, over %d", len(m.PrecisionChecks), MaxPrecisionKeys)
	}
	for _, k := range sortedKeys(m.PrecisionChecks) {
		c, f := m.PrecisionChecks[k], "metrics.precision_checks."+k
		if err := checkModeKey(f, k); err != nil {
			return err
		}
		if err := checkRange(f+".max_abs_diff", c.MaxAbsDiff, 0, maxError); err != nil {
			return err
		}
		if err := checkRange(f+".top1_agreement", c.Top1Agreement, 0, 1); err != nil {
			return err
		}
	}
	if len(r.Modes) > MaxModes {
		return refuse("modes", "%d entries, over %d", len(r.Modes), MaxModes)
	}
	for _, k := range sortedKeys(r.Modes) {
		if err := r.Modes[k].validate("modes." + k); err != nil {
			return err
		}
		if err := checkModeKey("modes", k); err != nil {
			return err
		}
	}
	return nil
}

func (v Verdict) validate(field string) error {
	switch {
	case !v.Status.Valid() || v.Status == StatusUntested:
		return refuse(field+".status", "%q is not a result status", clip(string(v.Status)))
	case v.FailureClass != nil && !v.FailureClass.Valid():
		return refuse(field+".failure_class", "%q is not a contract failure class", clip(string(*v.FailureClass)))
	}
	for _, l := range []struct {
		name string
		s    *string
		max  int
	}{{"stage", v.Stage, MaxModeLabel}, {"reason", v.Reason, MaxModeLabel}, {"op", v.Op, MaxOpBytes},
		{"signature", v.Signature, MaxSigBytes}, {"metrics.precision", v.Metrics.Precision, MaxModeLabel}} {
		if l.s != nil {
			if err := CheckLabel(field+"."+l.name, *l.s, l.max); err != nil {
				return err
			}
		}
	}
	m := v.Metrics
	for _, l := range []struct {
		name string
		xs   []*float64
	}{{"losses", m.Losses}, {"reference_losses", m.ReferenceLosses}} {
		if len(l.xs) > MaxLosses {
			return refuse(field+".metrics."+l.name, "%d entries, over %d", len(l.xs), MaxLosses)
		}
		for i, x := range l.xs {
			if err := checkRange(fmt.Sprintf("%s.metrics.%s[%d]", field, l.name, i), x, -maxError, maxError); err != nil {
				return err
			}
		}
	}
	figures := []struct {
		name     string
		v        *float64
		min, max float64
	}{
		{"step_ms", m.StepMS, 0, maxSeconds * 1e3}, {"tokens_per_s", m.TokensPerS, 0, maxRate},
		{"samples_per_s", m.SamplesPerS, 0, maxRate}, {"peak_mem_bytes", intFigure(m.PeakMemBytes), 0, maxBytes},
		{"params_changed", m.ParamsChanged, 0, 1}, {"max_loss_diff", m.MaxLossDiff, 0, maxError},
		{"loss_tolerance", m.LossTolerance, 0, maxError}, {"lr", m.LR, 0, maxError},
		{"forward_ms", m.ForwardMS, 0, maxSeconds * 1e3}, {"first_forward_s", m.FirstForwardS, 0, maxSeconds},
		{"max_abs_diff", m.MaxAbsDiff, 0, maxError}, {"top1_agreement", m.Top1Agreement, 0, 1},
		{"compile_s", m.CompileS, 0, maxSeconds}, {"compiled_step_ms", m.CompiledStepMS, 0, maxSeconds * 1e3},
		{"graphs", intFigure(m.Graphs), 0, maxCount}, {"graph_breaks", intFigure(m.GraphBreaks), 0, maxCount},
		{"recompiles", intFigure(m.Recompiles), 0, maxCount},
	}
	for _, f := range figures {
		if err := checkRange(field+".metrics."+f.name, f.v, f.min, f.max); err != nil {
			return err
		}
	}
	if err := checkReasons(field+".metrics.graph_break_reasons", m.GraphBreakReasons); err != nil {
		return err
	}
	return CheckLabel(field+".metrics.peak_mem_source", deref(m.PeakMemSource), MaxNoteBytes)
}

func checkModeKey(field, k string) error {
	if len(k) > MaxModeLabel || !modeKeyRE.MatchString(k) {
		return refuse(field, "key %q: want at most %d of a-z, 0-9 and _", clip(k), MaxModeLabel)
	}
	return nil
}

func checkReasons(field string, rs []string) error {
	if len(rs) > MaxBreakReasons {
		return refuse(field, "%d entries, over %d", len(rs), MaxBreakReasons)
	}
	for i, s := range rs {
		if err := CheckLabel(fmt.Sprintf("%s[%d]", field, i), s, MaxReasonBytes); err != nil {
			return err
		}
	}
	return nil
}

// cleanMatrix is Clean's part for the matrix: each verdict's message and
// note, each precision check's why, stripped and within their caps.
func (r Result) cleanMatrix() Result {
	if len(r.Modes) > 0 {
		modes := make(map[string]Verdict, len(r.Modes))
		for k, v := range r.Modes {
			if v.Message != nil {
				v.Message = Ptr(head(termsafe.Strip(*v.Message), MaxMessageBytes))
			}
			v.Note = head(termsafe.Strip(v.Note), MaxNoteBytes)
			modes[k] = v
		}
		r.Modes = modes
	}
	if len(r.Metrics.PrecisionChecks) > 0 {
		checks := make(map[string]PrecisionCheck, len(r.Metrics.PrecisionChecks))
		for k, c := range r.Metrics.PrecisionChecks {
			if c.Why != nil {
				c.Why = Ptr(head(termsafe.Strip(*c.Why), MaxNoteBytes))
			}
			checks[k] = c
		}
		r.Metrics.PrecisionChecks = checks
	}
	return r
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
