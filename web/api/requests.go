package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// RequestJSON is a test request as the API shows it.
type RequestJSON struct {
	ID    int64  `json:"id"`
	Model string `json:"model"`
	// State is queued, running, done or failed.
	State string `json:"state"`
	// Position is the place in the queue while queued (1: next), else null.
	Position   *int       `json:"position"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	ScanID     *int64     `json:"scan_id"`
	// Status is the model's result once done, else null.
	Status   *compat.Status `json:"status"`
	Message  *string        `json:"message"`
	URL      string         `json:"url"`       // the request's page
	ModelURL string         `json:"model_url"` // the model's page (404 until it is tested)
}

func newRequestJSON(base string, r store.TestRequest) RequestJSON {
	out := RequestJSON{ID: r.ID, Model: r.ModelID, State: string(r.State), CreatedAt: r.CreatedAt, ScanID: r.ScanID,
		URL: base + show.RequestPath(r.ID), ModelURL: base + show.ModelPath(r.ModelID)}
	if r.State == store.RequestQueued {
		out.Position = &r.Position
	}
	if !r.StartedAt.IsZero() {
		out.StartedAt = &r.StartedAt
	}
	if !r.FinishedAt.IsZero() {
		out.FinishedAt = &r.FinishedAt
	}
	if r.Status != "" {
		out.Status = &r.Status
	}
	if r.Message != "" {
		out.Message = &r.Message
	}
	return out
}

// Ask serves POST /api/v1/requests {"model": ID}: 202 and the request
// (a new one, or the model's open one), or 4xx with the reason. The body
// must be JSON (application/json), which a cross-site form cannot send
// without a preflight that this API does not grant.
func (h *Handler) Ask(c *fiber.Ctx) error {
	if ct := strings.ToLower(strings.TrimSpace(strings.Split(c.Get(fiber.HeaderContentType), ";")[0])); ct != fiber.MIMEApplicationJSON {
		return fiber.NewError(fiber.StatusUnsupportedMediaType, `send the request as JSON: Content-Type: application/json, {"model": "org/name"}`)
	}
	var body struct {
		Model string `json:"model"`
	}
	dec := json.NewDecoder(bytes.NewReader(c.Body()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return fmt.Errorf(`%w: want {"model": "org/name"}`, httpx.ErrBadRequest)
	}
	if err := h.asks.Allowed(c); err != nil {
		return err
	}
	req, _, err := h.asks.Desk.Ask(c.UserContext(), body.Model)
	if err != nil {
		return err
	}
	base := h.Clients.Base(c)
	c.Set(fiber.HeaderLocation, base+"/api/v1/requests/"+strconv.FormatInt(req.ID, 10))
	return c.Status(fiber.StatusAccepted).JSON(newRequestJSON(base, req))
}

// Request serves GET /api/v1/requests/{id}: its state and place.
func (h *Handler) Request(c *fiber.Ctx) error {
	req, err := h.asks.Request(c)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(newRequestJSON(h.Clients.Base(c), req))
}
