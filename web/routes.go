package web

import (
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// routes is the route table: every route the server answers, in one place.
// Model ids contain "/" (Qwen/Qwen3-0.6B) or not (gpt2), so routes that take
// one end in a wildcard.
func (s *Server) routes(app *fiber.App) {
	app.Use(s.observe, httpx.Secure, cached.AnyRepresentation)

	// Pages (HTML).
	app.Get("/", s.pages.Table)
	app.Get("/methodology", s.pages.Methodology)
	app.Get("/models/*", s.pages.Model)
	app.Get("/runtimes", s.pages.Runtimes)
	app.Get("/ops", s.pages.Ops)
	app.Get("/compare", s.pages.Compare)
	app.Get("/static/:name", s.pages.Asset)
	if s.asks.Desk != nil {
		app.Post("/requests", s.pages.FormAsk) // the "Request a test" form (web/pages)
		app.Get("/requests/:id", s.pages.Request)
	}

	// Badges: /badge/{id}.svg and /badge/{id}.json (CORS set by httpx.Secure).
	app.Get("/badge/*", s.badges.Badge)

	// The worker protocol (web/work), before the API's rate limit and
	// behind the worker token; off without a fleet and a token.
	if w := s.work; w.On() {
		app.Post(fleet.PathRegister, w.Authorize, w.Register)
		app.Post(fleet.PathLease, w.Authorize, w.Lease)
		app.Post(fleet.PathHeartbeat, w.Authorize, w.Heartbeat)
		app.Post(fleet.PathResult, w.Authorize, w.Result)
		app.Post(fleet.PathRelease, w.Authorize, w.Release)
		app.Post(fleet.PathLeave, w.Authorize, w.Leave)
	}

	// JSON API, rate-limited per client.
	api := app.Group("/api/v1", httpx.CORS, s.limit, httpx.ExactParams)
	api.Get("/models", s.api.Models)
	api.Get("/models/*", s.api.Model)
	api.Get("/summary", s.api.Summary)
	api.Get("/sweep", s.api.Sweep)
	api.Get("/failures", s.api.Failures)
	api.Get("/runtimes", s.api.Runtimes)
	api.Get("/ops", s.api.Ops)
	api.Get("/compare", s.api.Compare)
	api.Get("/scans", s.api.Scans)
	api.Get("/scans/:id", s.api.Scan)
	if s.scans != nil {
		api.Post("/scans", s.admin, s.api.RequestScan) // admin token
	}
	if s.asks.Desk != nil {
		api.Post("/requests", s.api.Ask)
		api.Get("/requests/:id", s.api.Request)
	}
	api.Get("/openapi.json", s.apiOpenAPI)
	api.Get("/workers", s.work.Workers)
	api.Get("/webhooks", s.admin, s.feeds.Webhooks) // admin token

	// Feeds and exports.
	app.Get("/feed.json", httpx.CORS, httpx.ExactParams, s.feeds.JSON)
	app.Get("/feed.atom", httpx.CORS, httpx.ExactParams, s.feeds.Atom)
	app.Get("/export.csv", httpx.CORS, s.api.ExportCSV)
	app.Get("/ops.csv", httpx.CORS, s.api.OpsCSV)

	// Operations.
	app.Get("/healthz", s.healthz)
	app.Get("/readyz", s.readyz)
	app.Get("/metrics", s.metrics)

	// Anything else is not found (JSON under /api/, a page elsewhere), or
	// 405 with Allow when the path is a route's under another method:
	// fiber's end of the stack tells which (and sets Allow).
	app.Use(func(c *fiber.Ctx) error {
		if err := c.Next(); errors.Is(err, fiber.ErrMethodNotAllowed) {
			return fmt.Errorf("%w: %s %s (allowed: %s)", httpx.ErrMethodNotAllowed, httpx.QuoteShort(methodOf(c)), httpx.QuoteShort(c.Path()),
				c.GetRespHeader(fiber.HeaderAllow))
		}
		return fmt.Errorf("%w: no route %s %s", httpx.ErrNotFound, httpx.QuoteShort(methodOf(c)), httpx.QuoteShort(c.Path()))
	})
}
