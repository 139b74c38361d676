package pages

import (
	"strconv"
	"strings"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// servingView is the model page's serving block.
type servingView struct {
	Cell *compat.ServingCell
	// Package and Version name the pinned release (for the unknown case).
	Package, Version string
	// TP lists --tensor-parallel-size per TPU generation, "v5e 4 · v6e 2 …".
	TP string
	// Why says why nothing is known when Cell is nil.
	Why string
	// Measured is the measured verdict laid out; nil when none.
	Measured *measuredView
	// Latest is a later serving probe that judged nothing
	// (ServingMeasured.LatestAttempt), laid out; nil when none.
	Latest *measuredView
}

// measuredView is a measured serving verdict on the model page: every
// figure as text, "—" when not measured.
type measuredView struct {
	Status, Tone, Date, Runtime, Device, Agreed, Load, TTFT, TPS, Signature, Message string
	TP, MaxModelLen                                                                  int
}

// chipClass is a status chip's coloured class (the templates' tone: st-pass,
// st-fail, st-warn, st-neutral; show.StatusCSS defines them).
func chipClass(st compat.Status) string { return "st-" + string(show.ToneOf(st)) }

// newMeasuredView lays out a measured verdict.
func newMeasuredView(m *compat.ServingMeasured) *measuredView {
	if m == nil {
		return nil
	}
	text := func(p *string) string {
		if p == nil || *p == "" {
			return "—"
		}
		return *p
	}
	secs := func(p *float64) string {
		if p == nil {
			return "—"
		}
		return strconv.FormatFloat(*p, 'f', 2, 64) + " s"
	}
	v := &measuredView{Status: m.Status, Tone: chipClass(compat.Status(m.Status)), Runtime: m.Runtime.Key(), Device: text(m.Device), Agreed: "—",
		Load: secs(m.Metrics.LoadS), TTFT: secs(m.Metrics.TTFTS), TPS: "—", Signature: text(m.Signature), Message: text(m.Message),
		TP: m.TensorParallelSize, MaxModelLen: m.MaxModelLen, Date: "—"}
	if !m.Judged() { // the scanner's own error, or no CPU reference: never a pass or a fail
		v.Tone, v.Status = chipClass(compat.StatusSkipped), "not judged ("+m.Status+")"
		if m.Reason != nil && *m.Reason == compat.ServingReasonNoReference {
			v.Status = "not judged: no CPU reference"
		}
	}
	if !m.MeasuredAt.IsZero() {
		v.Date = m.MeasuredAt.UTC().Format(time.DateOnly)
	}
	if a := m.Metrics.AgreedTokens; a != nil {
		v.Agreed = strconv.Itoa(*a)
		if len(m.ReferenceTokens) > 0 {
			v.Agreed += " of " + strconv.Itoa(len(m.ReferenceTokens))
		}
	}
	if p := m.Metrics.TokensPerS; p != nil {
		v.TPS = strconv.FormatFloat(*p, 'f', 1, 64)
	}
	return v
}

// newServingView lays out m's serving cell (reg nil: never read).
func newServingView(reg *serving.Registry, m compat.Model) servingView {
	v := servingView{Cell: m.Serving, Package: serving.Package, Version: serving.Version}
	switch {
	case v.Cell != nil:
		v.Measured = newMeasuredView(v.Cell.Measured)
		if m := v.Cell.Measured; m != nil {
			v.Latest = newMeasuredView(m.LatestAttempt)
		}
		var parts []string
		for _, g := range readiness.Generations {
			if n, ok := v.Cell.TensorParallelSize[g.Name]; ok {
				parts = append(parts, g.Name+" "+strconv.Itoa(n))
			}
		}
		v.TP = strings.Join(parts, " · ")
	case reg == nil:
		v.Why = "no scan has read the release's model registry yet"
	default:
		v.Why = "the model's config.json names no architecture"
	}
	return v
}
