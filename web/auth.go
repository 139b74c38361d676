package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// authorize checks the admin token (httpx.Bearer); without one the write
// routes are off.
func (s *Server) authorize(c *fiber.Ctx) error {
	if s.adminToken == "" {
		return httpx.ErrWritesDisabled
	}
	return httpx.Bearer(c, s.adminToken, "admin")
}

// admin is authorize as a route's guard.
func (s *Server) admin(c *fiber.Ctx) error {
	if err := s.authorize(c); err != nil {
		return err
	}
	return c.Next()
}
