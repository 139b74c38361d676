package web

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// cachedBadge is one rendered badge.
type cachedBadge struct {
	etag string
	body []byte
}

// badge serves GET /badge/{id}.svg and /badge/{id}.json (shields.io
// endpoint). It always answers 200 with a badge, so that a model card never
// shows a broken image: unknown ids and bad input get a grey "unknown".
// Rendered badges are cached until the store changes.
func (s *Server) badge(c *fiber.Ctx) error {
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
	// serving cell (serving.go).
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
	changed, err := s.store.Changed(ctx)
	if err != nil {
		return s.badgeUnavailable(c, kind, target, label, err)
	}
	key := badgeKey{kind, raw, target, style, label, targetOK, mode}
	e, ok := s.badges.Get(key, changed)
	if !ok {
		var m *compat.Model // nil: an unknown id, or bad input
		if id, idErr := httpx.IDParam(c, "."+kind); idErr == nil && targetOK {
			if m, err = s.badgeModel(ctx, id, target, mode); err != nil {
				return s.badgeUnavailable(c, kind, target, label, err)
			}
		}
		b := draw(m, target, label)
		prediction := ""            // the endpoint JSON's tpu_ops (badgePrediction)
		if m != nil && mode == "" { // the inference badge alone says the prediction
			prediction = badgePrediction(m)
		}
		if kind == "svg" {
			e.body = renderSVG(b, style)
		} else {
			e.body = renderBadgeJSONPredicted(b, prediction)
		}
		e.etag = cached.Tag(changed, kind, raw, string(target), string(style), label, strconv.FormatBool(targetOK),
			mode)
		// The key's strings point into the request's buffer: copy them to keep.
		key.raw, key.label, key.mode = strings.Clone(key.raw), strings.Clone(key.label), strings.Clone(key.mode)
		key.target, key.style = compat.Target(strings.Clone(string(key.target))), badgeStyle(strings.Clone(string(key.style)))
		s.badges.Put(key, changed, e, len(e.body)+len(e.etag)+len(key.raw)+len(key.label))
	}

	h := &c.Response().Header
	httpx.BadgeCache.Set(h)
	if cached.NotModified(c, e.etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	if kind == "svg" {
		h.SetContentTypeBytes(httpx.CtypeSVG)
	} else {
		h.SetContentTypeBytes(httpx.CtypeJSON)
	}
	return c.Send(e.body)
}

// badgeModel is what a badge of id draws: the model with its result on
// target (on tpu without one, its verdict measured elsewhere), and for
// ?mode=serve its serving cell; nil for an unknown id.
func (s *Server) badgeModel(ctx context.Context, id string, target compat.Target, mode string) (*compat.Model, error) {
	m, err := s.store.GetModel(ctx, id, target)
	if err == nil && m.Result == nil && target == compat.TargetTPU {
		m, err = s.measuredElsewhere(ctx, m)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if mode == compat.ModeServe {
		reg, err := s.servingRegistry(ctx)
		if err != nil {
			return nil, err
		}
		m.Serving = servingCell(reg, m)
		if err := s.withMeasured(ctx, &m); err != nil {
			return nil, err
		}
	}
	return &m, nil
}

// measuredElsewhere is m (without a TPU result) with its newest result on
// another target when that is a verdict: a TorchTPU badge of a model
// measured on the CPU reference only says "cpu pass" (badgeFor), never
// TorchTPU's pass, rather than nothing.
func (s *Server) measuredElsewhere(ctx context.Context, m compat.Model) (compat.Model, error) {
	other, err := s.store.GetModel(ctx, m.ID, "")
	if err != nil {
		return m, err
	}
	if other.Result != nil && other.Result.Target != compat.TargetTPU && other.Result.Status.IsVerdict() {
		m.Result = other.Result
	}
	return m, nil
}

// badgeKey identifies a rendered badge.
type badgeKey struct {
	kind     string // svg or json
	raw      string // the path after /badge/
	target   compat.Target
	style    badgeStyle
	label    string
	targetOK bool
	mode     string // ?mode=: "", train or serve ("?" for any other)
}

// badgeUnavailable answers 503 with a grey "unavailable" badge when the
// database fails: still an image (browsers show it), never cached.
func (s *Server) badgeUnavailable(c *fiber.Ctx, kind string, target compat.Target, label string, err error) error {
	s.log.Error("badge: store failed", "path", c.Path(), "err", err)
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
