package feeds

import (
	"context"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/webhook"
)

// WebhookStatus reports the outgoing webhooks' deliveries (the sender,
// *webhook.Sender).
type WebhookStatus interface {
	Status(ctx context.Context) ([]webhook.Status, error)
}

// webhookList is GET /api/v1/webhooks's body.
type webhookList struct {
	Webhooks []webhook.Status `json:"webhooks"`
}

// Webhooks serves GET /api/v1/webhooks: each webhook's deliveries by
// state and the ones its endpoint refused for good. Its route needs the
// admin token (it is the operator's view; a refused delivery's answer is
// the endpoint's words: web/routes.go guards it); an empty list without
// webhooks.
func (h *Handler) Webhooks(c *fiber.Ctx) error {
	out := webhookList{Webhooks: []webhook.Status{}}
	if h.webhooks != nil {
		ws, err := h.webhooks.Status(c.UserContext())
		if err != nil {
			return fmt.Errorf("web: webhooks: %w", err)
		}
		if ws != nil {
			out.Webhooks = ws
		}
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}
