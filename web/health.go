package web

import (
	"context"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// readyTimeout bounds the database check of /readyz.
const readyTimeout = 2 * time.Second

// healthz serves GET /healthz: the process is alive and serving.
func (s *Server) healthz(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"status": "ok", "version": s.version})
}

// readyz serves GET /readyz: the database file is the one the server
// opened and it answers. 503 when not: a database deleted or replaced
// under the server says so ("database file gone"), as every write fails;
// so does one that the check after start found damaged ("database corrupt").
func (s *Server) readyz(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	ctx, cancel := context.WithTimeout(c.UserContext(), readyTimeout)
	defer cancel()
	if err := s.store.CheckFile(); errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrNotDatabase) {
		s.log.Error("readyz: the database is damaged; restore a copy written by scanner backup", "err", err)
		return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{"status": "unavailable",
			"error": "database corrupt: SQLite's check found it damaged; writes are refused: restore a copy written by scanner backup"})
	} else if err != nil {
		s.log.Error("readyz: the database file was deleted or replaced; restart the scanner", "err", err)
		return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{"status": "unavailable",
			"error": "database file gone: it was deleted or replaced while the scanner ran; writes are refused until a restart"})
	}
	// Changed is the cheapest call of the Store interface that reads the
	// database: at least every store.ForeignWritesSeenWithin, and after each write.
	if _, err := s.store.Changed(ctx); err != nil {
		s.log.Warn("readyz: database not ready", "err", err)
		return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{"status": "unavailable", "error": "database not ready"})
	}
	return c.JSON(fiber.Map{"status": "ready"})
}

// metrics serves GET /metrics in the Prometheus text format.
func (s *Server) metrics(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, metrics.ContentType)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return s.reg.WriteText(c.Response().BodyWriter())
}
