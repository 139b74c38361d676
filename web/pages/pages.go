// Package pages serves the site's HTML: the table, the model pages, the
// methodology, the runtimes, comparisons and fix list pages with their
// charts, the test requests' form and pages, the error page and the
// static assets. Templates and assets are embedded and prepared once in
// New, which fails if any of them is broken. Rendered pages are kept
// until the data changes. web/routes.go wires its handler.
package pages

import (
	"html/template"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
)

// Handler serves the pages and keeps them.
type Handler struct {
	data.Site
	version   string
	scans     data.ScanControl // nil: no scheduler
	asks      *data.Asks       // the test requests
	log       *slog.Logger
	formToken formTokens // the request form's anti-forgery tokens

	pages  *pages
	assets *assets

	tableBodies  cached.Map[string, template.HTML]
	tablePages   cached.Map[string, cached.Body]
	comparePages cached.Map[string, cached.Body]
}

// Config is what the pages read and say.
type Config struct {
	data.Site
	Version string // shown in the footer
	Scans   data.ScanControl
	Asks    *data.Asks
	Log     *slog.Logger
}

// New parses the templates and hashes the assets, failing if any of them
// is broken.
func New(cfg Config) (*Handler, error) {
	h := &Handler{Site: cfg.Site, version: cfg.Version, scans: cfg.Scans, asks: cfg.Asks, log: cfg.Log, formToken: newFormTokens(time.Now)}
	h.tableBodies.MaxBytes = 32 << 20
	h.tablePages.MaxBytes = 32 << 20
	h.comparePages.MaxBytes = 32 << 20
	var err error
	if h.assets, err = loadAssets(); err != nil {
		return nil, err
	}
	if h.pages, err = parsePages(h.funcs()); err != nil {
		return nil, err
	}
	return h, nil
}

// Caches are what the handler keeps (the caches' accounting tests read
// them): the table's bodies and pages, the comparison pages.
func (h *Handler) Caches() (tableBodies *cached.Map[string, template.HTML], tablePages, comparePages *cached.Map[string, cached.Body]) {
	return &h.tableBodies, &h.tablePages, &h.comparePages
}

// errorPage is the data of the error template.
type errorPage struct {
	layout
	Status  int
	Title   string
	Message string
}

// Error renders the error page of status (title, message) on c.
func (h *Handler) Error(c *fiber.Ctx, status int, title, message string) error {
	return h.render(c, "error", errorPage{Status: status, Title: title, Message: message})
}
