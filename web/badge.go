package web

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

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
		return fmt.Errorf("%w: a badge URL ends in .svg or .json", ErrNotFound)
	}
	embeddable(c)
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

	ctx := c.UserContext()
	changed, err := s.storeChanged(ctx)
	if err != nil {
		return s.badgeUnavailable(c, kind, target, label, err)
	}
	key := kind + "\x00" + raw + "\x00" + string(target) + "\x00" + string(style) + "\x00" + label + "\x00" + strconv.FormatBool(targetOK)
	e, ok := s.badges.get(key, changed)
	if !ok {
		var b badge
		id, idErr := idParam(c, "."+kind)
		switch {
		case idErr != nil || !targetOK:
			b = badgeFor(nil, target, label)
		default:
			m, err := s.store.GetModel(ctx, id, target)
			switch {
			case errors.Is(err, store.ErrNotFound):
				b = badgeFor(nil, target, label)
			case err != nil:
				return s.badgeUnavailable(c, kind, target, label, err)
			default:
				b = badgeFor(&m, target, label)
			}
		}
		e = cachedBadge{changed: changed}
		if kind == "svg" {
			e.body = renderSVG(b, style)
		} else {
			e.body = renderBadgeJSON(b)
		}
		e.etag = etagOf(changedTag(changed), key)
		s.badges.put(key, e)
	}

	c.Set(fiber.HeaderCacheControl, "max-age="+strconv.Itoa(badgeCacheSeconds))
	if notModified(c, e.etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	if kind == "svg" {
		c.Set(fiber.HeaderContentType, "image/svg+xml; charset=utf-8")
	} else {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	}
	return c.Send(e.body)
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
