package web

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// servingMemo keeps the pinned vllm-torchtpu release's registry as stored,
// read once per data version: every model JSON, row and badge needs it.
type servingMemo struct {
	mu      sync.Mutex
	changed time.Time
	read    bool
	reg     *serving.Registry // nil: the release was never read
}

// servingRegistry is the pinned release's registry (serving.Version), nil
// when no scan has read it yet.
func (s *Server) servingRegistry(ctx context.Context) (*serving.Registry, error) {
	changed, err := s.store.Changed(ctx)
	if err != nil {
		return nil, fmt.Errorf("web: serving registry: %w", err)
	}
	m := &s.servingMemo
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.read && m.changed.Equal(changed) {
		return m.reg, nil
	}
	reg, err := s.store.ServingRegistry(ctx, serving.Version)
	switch {
	case errors.Is(err, store.ErrNotFound):
		m.reg = nil
	case err != nil:
		return nil, fmt.Errorf("web: serving registry: %w", err)
	default:
		m.reg = &reg
	}
	m.changed, m.read = changed, true
	return m.reg, nil
}

// servingCell is m's serving cell under reg: nil when nothing is known (no
// registry, no readiness, no architectures).
func servingCell(reg *serving.Registry, m compat.Model) *compat.ServingCell {
	if reg == nil || m.Readiness == nil {
		return nil
	}
	c, ok := serving.Declare(*reg, m.ID, m.Readiness.Architectures, m.Readiness)
	if !ok {
		return nil
	}
	return &c
}

// withMeasured adds each model's measured serving verdict (a scan's
// serving probe, store.ServingResults) to its serving cell; a model
// without a cell (no registry read, no architectures) shows none.
func (s *Server) withMeasured(ctx context.Context, models ...*compat.Model) error {
	var ids []string
	for _, m := range models {
		if m.Serving != nil {
			ids = append(ids, m.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	got, err := s.store.ServingResults(ctx, ids)
	if err != nil {
		return fmt.Errorf("web: serving results: %w", err)
	}
	for _, m := range models {
		if r, ok := got[m.ID]; ok && m.Serving != nil {
			m.Serving.Measured = &r
		}
	}
	return nil
}

// serveValues are ?serve='s values (store.ServeValues: measured pass and
// fail, declared, the kinds, none).
func serveValues() []string { return store.ServeValues() }

// parseServe reads ?serve=.
func parseServe(v string) (string, error) {
	if v == "" || slices.Contains(serveValues(), v) {
		return v, nil
	}
	return "", fmt.Errorf("%w: unknown serve %s (want %s)", ErrBadRequest, quoteShort(v), strings.Join(serveValues(), ", "))
}

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
// st-fail, st-warn, st-neutral; statusCSS defines them).
func chipClass(st compat.Status) string { return "st-" + string(toneOf(st)) }

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

// serveBadgeFor draws ?mode=serve: what vLLM-TorchTPU serves the model as,
// and on what evidence ("generation · declared"), "not served · declared",
// or unknown.
func serveBadgeFor(m *compat.Model, label string) badge {
	label = cleanText(label, maxLabelRunes)
	if label == "" {
		label = "vLLM-TorchTPU"
	}
	if m == nil || m.Serving == nil {
		return unknownBadge(label)
	}
	c := m.Serving
	if r := c.Measured; r != nil && r.Judged() { // a probe that judged nothing leaves the declared badge
		b := badge{Label: label, Message: r.Status + " · measured", Tone: toneFail,
			Evidence: cleanText("measured: "+c.Package+" "+runtimeVersion(r.Runtime.VLLMTorchTPU)+" ran it, "+r.Status+measuredOn(r), 160)}
		if pass, _ := c.Verdict(); pass {
			b.Tone = tonePass
			if c.Kind != nil {
				b.Message = string(*c.Kind) + " · measured"
			}
		}
		b.Message = cleanText(b.Message, 64)
		return b
	}
	b := badge{Label: label, Message: "not served · " + c.Evidence, Tone: toneFail,
		Evidence: cleanText(c.Evidence+" by the model registry of "+c.Package+" "+c.Version+"'s vLLM; nothing was run", 160)}
	if c.Served && c.Kind != nil {
		b.Message, b.Tone = string(*c.Kind)+" · "+c.Evidence, tonePass
	}
	b.Message = cleanText(b.Message, 64)
	return b
}

// runtimeVersion is a version the serving probe reported, "?" when none.
func runtimeVersion(p *string) string {
	if p == nil || *p == "" {
		return "?"
	}
	return *p
}

// measuredOn says when a measured verdict was made (" on 2026-12-06"),
// "" when not said.
func measuredOn(r *compat.ServingMeasured) string {
	if r.MeasuredAt.IsZero() {
		return ""
	}
	return " on " + r.MeasuredAt.UTC().Format(time.DateOnly)
}
