package httpx

import (
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Content-Security-Policy values. Pages load only their own scripts,
// styles and images (no inline script) and may not be framed; badges
// carry no script at all and stay embeddable anywhere.
const (
	cspPage = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
	cspData  = "default-src 'none'; frame-ancestors 'none'"
	cspBadge = "default-src 'none'; style-src 'unsafe-inline'"
)

// Secure sets the security headers every response carries. Pages may not
// be framed and run only their own script; data routes have nothing to run;
// badges stay embeddable anywhere (README files, model cards) and readable
// from any origin.
func Secure(c *fiber.Ctx) error {
	SecurityHeaders(c)
	return c.Next()
}

// SecurityHeaders sets Secure's headers on c's answer.
func SecurityHeaders(c *fiber.Ctx) {
	h := &c.Response().Header
	hdrNosniff.Set(h)
	hdrReferrer.Set(h)
	switch p := c.Path(); {
	case strings.HasPrefix(p, "/badge/"):
		hdrCSPBadge.Set(h)
		hdrCORPCross.Set(h)
		if m := c.Method(); m == fiber.MethodGet || m == fiber.MethodHead {
			hdrAllowOrigin.Set(h)
			hdrExposeETag.Set(h)
		}
	case strings.HasPrefix(p, "/api/") || strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".csv"):
		hdrCSPData.Set(h)
		hdrFrameDeny.Set(h)
	default:
		hdrCSPPage.Set(h)
		hdrFrameDeny.Set(h)
		hdrCOOP.Set(h)
	}
}

// CORS allows any origin to read the public GET routes (API, badges, feed);
// there are no cookies, so nothing private can leak. It also answers
// preflight requests for them.
func CORS(c *fiber.Ctx) error {
	h := &c.Response().Header
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead:
		h.Set(fiber.HeaderAccessControlAllowOrigin, "*")
		h.Set(fiber.HeaderAccessControlExposeHeaders, "ETag, Retry-After")
	case fiber.MethodOptions:
		h.Set(fiber.HeaderAccessControlAllowOrigin, "*")
		h.Set(fiber.HeaderAccessControlAllowMethods, "GET, HEAD")
		h.Set(fiber.HeaderAccessControlAllowHeaders, "If-None-Match, Content-Type")
		h.Set(fiber.HeaderAccessControlMaxAge, "86400")
		return c.SendStatus(fiber.StatusNoContent)
	}
	return c.Next()
}
