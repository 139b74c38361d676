package api

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// ModelList is the body of GET /api/v1/models.
type ModelList struct {
	Models     []compat.Model `json:"models"`
	NextCursor *string        `json:"next_cursor"`
}

// ModelDetail is the body of GET /api/v1/models/{id}: the model (with its
// current result on ?target=), its history on that target, and (extensions)
// its current result on every target and its status changes.
type ModelDetail struct {
	compat.Model
	History []compat.Result `json:"history"`
	Results []compat.Result `json:"results"`
	Events  []compat.Event  `json:"events"`
}

// historyLimit bounds the history of the model detail.
const historyLimit = 100

// Models serves GET /api/v1/models: one page of models, filtered and sorted.
func (h *Handler) Models(c *fiber.Ctx) error {
	q, err := httpx.ParseModelQuery(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	return h.cachedJSON(c, "web: api models", func() (any, error) {
		models, next, err := h.Data.Store.ListModels(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("web: api models: %w", err)
		}
		reg, err := h.Data.ServingRegistry(ctx)
		if err != nil {
			return nil, err
		}
		out := ModelList{Models: models}
		if out.Models == nil {
			out.Models = []compat.Model{}
		}
		ptrs := make([]*compat.Model, len(out.Models))
		for i := range out.Models {
			h.fillModel(&out.Models[i], reg)
			ptrs[i] = &out.Models[i]
		}
		if err := h.Data.WithMeasured(ctx, ptrs...); err != nil {
			return nil, err
		}
		if next != "" {
			out.NextCursor = &next
		}
		return out, nil
	})
}

// cachedJSON answers a GET of the JSON API whose body depends only on its
// URL and the data's version: 304 when If-None-Match names it, else the
// body kept for the URL (gzipped for a client that takes it), or the one
// build makes, kept until the data changes. what names the route in the
// error of a failed read of the data's version.
func (h *Handler) cachedJSON(c *fiber.Ctx, what string, build func() (any, error)) error {
	url := c.OriginalURL()
	changed, fresh, err := cached.Check(c, h.Data, string(h.Hub), url, cached.Coding(c))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if fresh {
		return cached.Unchanged(c)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	body, err := cached.Rendered(&h.apiLists, url, changed, func() ([]byte, error) {
		v, err := build()
		if err != nil {
			return nil, err
		}
		body, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("web: %s: %w", c.Path(), err)
		}
		return body, nil
	})
	if err != nil {
		return err
	}
	return body.Send(c)
}

// Model serves GET /api/v1/models/{id}. Aliases resolve to the model.
func (h *Handler) Model(c *fiber.Ctx) error {
	id, err := httpx.IDParam(c, "")
	if err != nil {
		return err
	}
	target, err := httpx.ParseTarget(c.Query("target"))
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	_, fresh, err := cached.Check(c, h.Data, string(h.Hub), c.OriginalURL())
	if err != nil {
		return fmt.Errorf("web: api model: %w", err)
	}
	if fresh {
		return cached.Unchanged(c)
	}
	m, err := h.Data.Store.GetModel(ctx, id, target)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: no model %s", httpx.ErrNotFound, httpx.QuoteShort(id))
		}
		return fmt.Errorf("web: api model: %w", err)
	}
	reg, err := h.Data.ServingRegistry(ctx)
	if err != nil {
		return err
	}
	h.fillModel(&m, reg)
	if err := h.Data.WithMeasured(ctx, &m); err != nil {
		return err
	}
	d := ModelDetail{Model: m}
	if d.History, err = h.Data.Store.History(ctx, m.ID, target, historyLimit); err != nil {
		return fmt.Errorf("web: api model history: %w", err)
	}
	if d.Results, err = h.Data.Store.CurrentResults(ctx, m.ID); err != nil {
		return fmt.Errorf("web: api model results: %w", err)
	}
	if d.Events, err = h.Data.Store.ModelEvents(ctx, m.ID, historyLimit); err != nil {
		return fmt.Errorf("web: api model events: %w", err)
	}
	for _, p := range []*[]compat.Result{&d.History, &d.Results} {
		if *p == nil {
			*p = []compat.Result{}
		}
	}
	if d.Events == nil {
		d.Events = []compat.Event{}
	}
	h.Known.Results(d.History)
	h.Known.Results(d.Results)
	h.Known.Events(d.Events)
	return c.JSON(d)
}

// fillModel sets the fields the web layer owns: the Hub link, where its
// result's signature is tracked, and its serving cell under reg (the
// pinned vllm-torchtpu's registry, nil when never read).
func (h *Handler) fillModel(m *compat.Model, reg *serving.Registry) {
	m.URL = h.Hub.Model(m.ID)
	m.Serving = data.ServingCell(reg, *m)
	h.Known.Result(m.Result)
}
