// Package api serves the JSON API (/api/v1/…) and the CSV exports: the
// models, summary, failures, sweep, runtimes, comparisons, the fix list,
// the scans and the test requests. Each answer that depends only on its
// URL and the data is kept until the data changes (cachedJSON).
// web/routes.go wires its handler; the worker fleet's routes are
// web/work's, the webhooks' view web/feeds's, the test requests' form
// web/pages's.
package api

import (
	"log/slog"

	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
)

// Handler serves the JSON API and keeps its answers.
type Handler struct {
	data.Site
	scans    data.ScanControl // nil: no scheduler
	asks     *data.Asks       // the test requests
	log      *slog.Logger
	apiLists cached.Map[string, cached.Body] // the answers of cachedJSON, by URL
}

// Config is what the API reads and says.
type Config struct {
	data.Site
	Scans data.ScanControl
	Asks  *data.Asks
	Log   *slog.Logger
}

// New is the API's handler.
func New(cfg Config) *Handler {
	h := &Handler{Site: cfg.Site, scans: cfg.Scans, asks: cfg.Asks, log: cfg.Log}
	h.apiLists.MaxBytes = 32 << 20
	return h
}

// Cache is what the handler keeps (the caches' accounting tests read it).
func (h *Handler) Cache() *cached.Map[string, cached.Body] { return &h.apiLists }
