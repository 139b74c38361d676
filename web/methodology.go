package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// methodologyView is the data of templates/methodology.html.
type methodologyView struct {
	layout
	Stages  []compat.Stage
	Legend  []legendEntry
	Classes []compat.FailureClass
	Reasons []compat.Reason
	Ready   readinessMethodology
}

// methodology serves GET /methodology: exactly what a pass means.
func (s *Server) methodology(c *fiber.Ctx) error {
	v := methodologyView{Stages: compat.Stages, Legend: legend(), Classes: compat.FailureClasses, Reasons: compat.Reasons,
		Ready: newReadinessMethodology()}
	v.Canonical = "/methodology"
	c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	return s.render(c, "methodology", v)
}
