// Package badge draws the badges: GET /badge/{id}.svg and
// /badge/{id}.json (a shields.io endpoint), of a model's inference, train
// or serving verdict, each kept until the data changes. web/routes.go
// wires its handler.
package badge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// Rendered is one rendered badge.
type Rendered struct {
	ETag string
	Body []byte
}

// Handler serves the badges and keeps them.
type Handler struct {
	data   *data.Reader
	log    *slog.Logger
	badges cached.Map[Key, Rendered]
}

// New is the badges' handler over r, logging to log.
func New(r *data.Reader, log *slog.Logger) *Handler {
	h := &Handler{data: r, log: log}
	h.badges.MaxBytes = 16 << 20
	return h
}

// Cache is what the handler keeps (the caches' accounting tests read it).
func (h *Handler) Cache() *cached.Map[Key, Rendered] { return &h.badges }

// Badge serves GET /badge/{id}.svg and /badge/{id}.json (shields.io
// endpoint). It always answers 200 with a badge, so that a model card never
// shows a broken image: unknown ids and bad input get a grey "unknown".
// Rendered badges are cached until the store changes.
func (h *Handler) Badge(c *fiber.Ctx) error {
	raw := c.Params("*")
	var kind string
	switch {
	case strings.HasSuffix(raw, ".svg"):
		kind = "svg"
	case strings.HasSuffix(raw, ".json"):
		kind = "json"
	default:
		return fmt.Errorf("%w: a badge URL ends in .svg or .json", httpx.ErrNotFound)
	}
	style := parseBadgeStyle(c.Query("style"))
	label := c.Query("label")
	target := compat.TargetTPU
	targetOK := true
	if t := c.Query("target"); t != "" {
		switch pt := compat.Target(t); pt {
		case compat.TargetTPU, compat.TargetCPU, compat.TargetCUDA:
			target = pt
		default:
			targetOK = false
		}
	}

	// ?mode=train draws the train verdict of the matrix, ?mode=serve the
	// serving cell (serve.go).
	mode := c.Query("mode")
	draw := badgeFor
	switch mode {
	case "":
	case compat.ModeTrain:
		draw = trainBadgeFor
	case compat.ModeServe:
		draw = func(m *compat.Model, _ compat.Target, label string) badge { return serveBadgeFor(m, label) }
	default:
		targetOK, mode = false, "?"
	}

	ctx := c.UserContext()
	changed, err := h.data.Changed(ctx)
	if err != nil {
		return h.badgeUnavailable(c, kind, target, label, err)
	}
	key := Key{kind, raw, target, style, label, targetOK, mode}
	e, ok := h.badges.Get(key, changed)
	if !ok {
		var m *compat.Model // nil: an unknown id, or bad input
		if id, idErr := httpx.IDParam(c, "."+kind); idErr == nil && targetOK {
			if m, err = h.badgeModel(ctx, id, target, mode); err != nil {
				return h.badgeUnavailable(c, kind, target, label, err)
			}
		}
		b := draw(m, target, label)
		prediction := ""            // the endpoint JSON's tpu_ops (badgePrediction)
		if m != nil && mode == "" { // the inference badge alone says the prediction
			prediction = badgePrediction(m)
		}
		if kind == "svg" {
			e.Body = renderSVG(b, style)
		} else {
			e.Body = renderBadgeJSONPredicted(b, prediction)
		}
		e.ETag = cached.Tag(changed, kind, raw, string(target), string(style), label, strconv.FormatBool(targetOK),
			mode)
		// The key's strings point into the request's buffer: copy them to keep.
		key.Raw, key.Label, key.Mode = strings.Clone(key.Raw), strings.Clone(key.Label), strings.Clone(key.Mode)
		key.Target, key.Style = compat.Target(strings.Clone(string(key.Target))), Style(strings.Clone(string(key.Style)))
		h.badges.Put(key, changed, e, len(e.Body)+len(e.ETag)+len(key.Raw)+len(key.Label))
	}

	hd := &c.Response().Header
	httpx.BadgeCache.Set(hd)
	if cached.NotModified(c, e.ETag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	if kind == "svg" {
		hd.SetContentTypeBytes(httpx.CtypeSVG)
	} else {
		hd.SetContentTypeBytes(httpx.CtypeJSON)
	}
	return c.Send(e.Body)
}

// badgeModel is what a badge of id draws: the model with its result on
// target (on tpu without one, its verdict measured elsewhere), and for
// ?mode=serve its serving cell; nil for an unknown id.
func (h *Handler) badgeModel(ctx context.Context, id string, target compat.Target, mode string) (*compat.Model, error) {
	m, err := h.data.Store.GetModel(ctx, id, target)
	if err == nil && m.Result == nil && target == compat.TargetTPU {
		m, err = h.measuredElsewhere(ctx, m)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if mode == compat.ModeServe {
		reg, err := h.data.ServingRegistry(ctx)
		if err != nil {
			return nil, err
		}
		m.Serving = data.ServingCell(reg, m)
		if err := h.data.WithMeasured(ctx, &m); err != nil {
			return nil, err
		}
	}
	return &m, nil
}

// measuredElsewhere is m (without a TPU result) with its newest result on
// another target when that is a verdict: a TorchTPU badge of a model
// measured on the CPU reference only says "cpu pass" (badgeFor), never
// TorchTPU's pass, rather than nothing.
func (h *Handler) measuredElsewhere(ctx context.Context, m compat.Model) (compat.Model, error) {
	other, err := h.data.Store.GetModel(ctx, m.ID, "")
	if err != nil {
		return m, err
	}
	if other.Result != nil && other.Result.Target != compat.TargetTPU && other.Result.Status.IsVerdict() {
		m.Result = other.Result
	}
	return m, nil
}

// Key identifies a rendered badge.
type Key struct {
	Kind     string // svg or json
	Raw      string // the path after /badge/
	Target   compat.Target
	Style    Style
	Label    string
	TargetOK bool
	Mode     string // ?mode=: "", train or serve ("?" for any other)
}

// badgeUnavailable answers 503 with a grey "unavailable" badge when the
// database fails: still an image (browsers show it), never cached.
func (h *Handler) badgeUnavailable(c *fiber.Ctx, kind string, target compat.Target, label string, err error) error {
	h.log.Error("badge: store failed", "path", c.Path(), "err", err)
	b := badgeFor(nil, target, label)
	b.Message = "unavailable"
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Status(fiber.StatusServiceUnavailable)
	if kind == "svg" {
		c.Set(fiber.HeaderContentType, "image/svg+xml; charset=utf-8")
		return c.Send(renderSVG(b, parseBadgeStyle(c.Query("style"))))
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return c.Send(renderBadgeJSON(b))
}
