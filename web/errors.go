package web

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/google-pytorch/torchtpu-scanner/internal/requests"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// handleError is fiber's ErrorHandler: the one place where errors become
// HTTP statuses and bodies.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	status := httpx.Status(err)
	if status >= 500 {
		s.log.Error("request failed", "method", methodOf(c), "path", c.Path(), "status", status, "err", err)
	}
	if status == http.StatusUnauthorized {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="scanner"`)
	}
	if status == http.StatusServiceUnavailable && len(c.Response().Header.Peek(fiber.HeaderRetryAfter)) == 0 {
		c.Set(fiber.HeaderRetryAfter, httpx.UnavailableRetry) // "try again shortly", in seconds
	}
	// Errors must not be cached as if they were the resource.
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Response().Header.Del(fiber.HeaderETag)
	msg := httpx.PublicMessage(err, status)
	c.Status(status)
	if httpx.WantsJSON(c.Path()) || c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		if reason := requests.ReasonOf(err); reason != "" {
			return c.JSON(fiber.Map{"error": msg, "reason": reason})
		}
		return c.JSON(fiber.Map{"error": msg})
	}
	if rerr := s.pages.Error(c, status, http.StatusText(status), msg); rerr != nil {
		s.log.Error("rendering the error page", "err", rerr)
		c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
		return c.SendString(fmt.Sprintf("%d %s: %s", status, http.StatusText(status), msg))
	}
	return nil
}

// parserErrors makes the answers to requests that fasthttp could not read
// (431 for headers over the read buffer, 400 for a malformed request)
// take the form of the route they were for, like every other error: JSON
// under /api/. fiber hands its error handler a context without the
// request, so the path is read back from the request line that fasthttp
// quotes in its error.
func (s *Server) parserErrors() {
	srv := s.app.Server()
	next := srv.ErrorHandler
	srv.ErrorHandler = func(ctx *fasthttp.RequestCtx, err error) {
		if p := requestPath(err); p != "" {
			ctx.Request.SetRequestURI(p)
		}
		next(ctx, err)
	}
}

// unknownMethods makes a method no route takes (QUERY, BREW) a 405 with
// Allow like any other method the path does not take: fiber answers those
// itself, 400 text/plain, before any handler runs. The request goes
// through the routes as TRACE, which no route takes either, with its own
// method kept for the message (methodOf).
func (s *Server) unknownMethods() {
	srv := s.app.Server()
	next := srv.Handler
	srv.Handler = func(ctx *fasthttp.RequestCtx) {
		if m := ctx.Method(); !slices.Contains(fiber.DefaultMethods, string(m)) {
			ctx.SetUserValue(unknownMethodKey{}, string(m))
			ctx.Request.Header.SetMethod(fiber.MethodTrace)
		}
		next(ctx)
	}
}

// unknownMethodKey keys the request's own method when unknownMethods
// stood TRACE in for it.
type unknownMethodKey struct{}

// methodOf is the request's method as the client sent it.
func methodOf(c *fiber.Ctx) string {
	if m, ok := c.Context().UserValue(unknownMethodKey{}).(string); ok {
		return m
	}
	return c.Method()
}

// requestLine finds the path of the request line fasthttp quotes in a
// header error: `contents: "GET /api/v1/models HTTP/1.1\r\n…`. fasthttp
// quotes the first 200 bytes only, so a long query string (or path) is
// cut: the path ends at "?", at the protocol, or where the quote is cut.
var requestLine = regexp.MustCompile(`contents: "[A-Z]{3,7} (/[^ "\\?]*)(?:\?| HTTP/1\.[01]\\r\\n|"\.\.\.")`)

// requestPath is the path of the request a fasthttp header error quotes,
// or "".
func requestPath(err error) string {
	if err == nil {
		return ""
	}
	if m := requestLine.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return ""
}
