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
func servingCell(reg *serving.Registry, m compat.Model) *serving.Cell {
	if reg == nil || m.Readiness == nil {
		return nil
	}
	c, ok := serving.Declare(*reg, m.ID, m.Readiness.Architectures, m.Readiness)
	if !ok {
		return nil
	}
	return &c
}

// serveValues are ?serve='s values: the kinds, then none.
func serveValues() []string {
	out := make([]string, 0, len(serving.Kinds)+1)
	for _, k := range serving.Kinds {
		out = append(out, string(k))
	}
	return append(out, store.ServeNone)
}

// parseServe reads ?serve=.
func parseServe(v string) (string, error) {
	if v == "" || slices.Contains(serveValues(), v) {
		return v, nil
	}
	return "", fmt.Errorf("%w: unknown serve %s (want %s)", ErrBadRequest, quoteShort(v), strings.Join(serveValues(), ", "))
}

// servingView is the model page's serving block.
type servingView struct {
	Cell *serving.Cell
	// Package and Version name the pinned release (for the unknown case).
	Package, Version string
	// TP lists --tensor-parallel-size per TPU generation, "v5e 4 · v6e 2 …".
	TP string
	// Why says why nothing is known when Cell is nil.
	Why string
}

// newServingView lays out m's serving cell (reg nil: never read).
func newServingView(reg *serving.Registry, m compat.Model) servingView {
	v := servingView{Cell: m.Serving, Package: serving.Package, Version: serving.Version}
	switch {
	case v.Cell != nil:
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
	b := badge{Label: label, Message: "not served · " + c.Evidence, Tone: toneFail,
		Evidence: cleanText(c.Evidence+" by the model registry of "+c.Package+" "+c.Version+"'s vLLM; nothing was run", 160)}
	if c.Served && c.Kind != nil {
		b.Message, b.Tone = string(*c.Kind)+" · "+c.Evidence, tonePass
	}
	b.Message = cleanText(b.Message, 64)
	return b
}
