package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/google-pytorch/torchtpu-scanner/internal/requests"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// Sentinel errors of the HTTP layer. Handlers wrap them with detail
// (fmt.Errorf("%w: …", ErrBadRequest)) and return; handleError maps them
// to a status, in one place.
var (
	ErrNotFound       = errors.New("not found")
	ErrBadRequest     = errors.New("bad request")
	ErrUnauthorized   = errors.New("unauthorized")
	ErrForbidden      = errors.New("forbidden")
	ErrRateLimited    = errors.New("rate limit exceeded")
	ErrWritesDisabled = errors.New("write endpoints are disabled: the server has no admin token (set SCANNER_ADMIN_TOKEN)")
	ErrUnavailable    = errors.New("service unavailable")
	ErrConflict       = errors.New("conflict")
	// ErrMethodNotAllowed: the path is a route's, under other methods
	// (the answer's Allow names them).
	ErrMethodNotAllowed = errors.New("method not allowed")
)

// unavailableRetry is the Retry-After of a 503 (a Hub that could not be
// asked, a database going away), in seconds.
const unavailableRetry = "30"

// statusOf maps an error to its HTTP status.
func statusOf(err error) int {
	var fe *fiber.Error
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrBadRequest), errors.Is(err, store.ErrBadCursor), errors.Is(err, store.ErrInvalid),
		errors.Is(err, requests.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, requests.ErrRefused):
		return http.StatusUnprocessableEntity
	case errors.Is(err, requests.ErrAlreadyTested):
		return http.StatusConflict
	case errors.Is(err, requests.ErrQueueFull):
		return http.StatusTooManyRequests
	case errors.Is(err, requests.ErrHubUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, ErrForbidden), errors.Is(err, ErrWritesDisabled):
		return http.StatusForbidden
	case errors.Is(err, ErrScanQueued), errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, ErrMethodNotAllowed):
		return http.StatusMethodNotAllowed
	case errors.Is(err, ErrRateLimited):
		return http.StatusTooManyRequests
	case errors.Is(err, ErrUnavailable), errors.Is(err, context.DeadlineExceeded), errors.Is(err, store.ErrGone),
		errors.Is(err, store.ErrCorrupt):
		return http.StatusServiceUnavailable
	case errors.As(err, &fe):
		return fe.Code
	}
	return http.StatusInternalServerError
}

// publicMessage is what the client may read about err: the error text for
// client errors, a generic sentence for server errors (details go to the log).
func publicMessage(err error, status int) string {
	if requests.ReasonOf(err) != "" {
		return err.Error() // a test request's refusal is written for the public
	}
	if status >= 500 {
		if status == http.StatusServiceUnavailable {
			return "the service is temporarily unavailable, try again shortly"
		}
		return "internal server error"
	}
	msg := err.Error()
	if status == http.StatusNotFound && !errors.Is(err, ErrNotFound) && !errors.Is(err, store.ErrNotFound) {
		msg = "not found"
	}
	return msg
}

// wantsJSON reports whether a failing request should get JSON rather than an
// HTML page: the API and the machine-readable routes.
func wantsJSON(path string) bool {
	return strings.HasPrefix(path, "/api/") || strings.HasSuffix(path, ".json") || strings.HasSuffix(path, ".csv") ||
		strings.HasSuffix(path, ".atom") ||
		path == "/metrics" || path == "/healthz" || path == "/readyz"
}

// handleError is fiber's ErrorHandler: the one place where errors become
// HTTP statuses and bodies.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	status := statusOf(err)
	if status >= 500 {
		s.log.Error("request failed", "method", methodOf(c), "path", c.Path(), "status", status, "err", err)
	}
	if status == http.StatusUnauthorized {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="scanner"`)
	}
	if status == http.StatusServiceUnavailable && len(c.Response().Header.Peek(fiber.HeaderRetryAfter)) == 0 {
		c.Set(fiber.HeaderRetryAfter, unavailableRetry) // "try again shortly", in seconds
	}
	// Errors must not be cached as if they were the resource.
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Response().Header.Del(fiber.HeaderETag)
	msg := publicMessage(err, status)
	c.Status(status)
	if wantsJSON(c.Path()) || c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		if reason := requests.ReasonOf(err); reason != "" {
			return c.JSON(fiber.Map{"error": msg, "reason": reason})
		}
		return c.JSON(fiber.Map{"error": msg})
	}
	if rerr := s.render(c, "error", errorPage{Status: status, Title: http.StatusText(status), Message: msg}); rerr != nil {
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

// errorPage is the data of the error template.
type errorPage struct {
	layout
	Status  int
	Title   string
	Message string
}
