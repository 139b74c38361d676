package httpx

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Bearer checks that the request carries the bearer token want, whose
// token it is named in the errors ("admin", "worker"): ErrUnauthorized
// without one, ErrForbidden for another. Both sides are hashed so that the
// comparison takes the same time whatever the lengths.
func Bearer(c *fiber.Ctx, want, whose string) error {
	scheme, token, ok := strings.Cut(c.Get(fiber.HeaderAuthorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return fmt.Errorf("%w: send Authorization: Bearer <%s token>", ErrUnauthorized, whose)
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	w := sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(got[:], w[:]) != 1 {
		return fmt.Errorf("%w: wrong %s token", ErrForbidden, whose)
	}
	return nil
}
