// Package httpx is the web server's HTTP plumbing, shared by every
// audience's handlers and importing none of them: the errors of the HTTP
// layer and their statuses, the query's parsing, who the client is behind
// proxies and the site's base URL, the per-client rate limit, and the
// headers every answer carries.
package httpx

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/requests"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// Sentinel errors of the HTTP layer. Handlers wrap them with detail
// (fmt.Errorf("%w: …", ErrBadRequest)) and return; the server's error handler maps
// them to a status (Status), in one place.
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
	// ErrScanQueued is returned by the scheduler's RequestScan when a scan
	// is already waiting to run; the API answers 409.
	ErrScanQueued = errors.New("a scan is already queued")
)

// UnavailableRetry is the Retry-After of a 503 (a Hub that could not be
// asked, a database going away), in seconds.
const UnavailableRetry = "30"

// Status maps an error to its HTTP status.
func Status(err error) int {
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

// PublicMessage is what the client may read about err: the error text for
// client errors, a generic sentence for server errors (details go to the log).
func PublicMessage(err error, status int) string {
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

// WantsJSON reports whether a failing request should get JSON rather than an
// HTML page: the API and the machine-readable routes.
func WantsJSON(path string) bool {
	return strings.HasPrefix(path, "/api/") || strings.HasSuffix(path, ".json") || strings.HasSuffix(path, ".csv") ||
		strings.HasSuffix(path, ".atom") ||
		path == "/metrics" || path == "/healthz" || path == "/readyz"
}
