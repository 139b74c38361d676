package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/dispatch"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// WorkControl is the server's side of the worker fleet (serve --dispatch
// workers); *dispatch.Dispatcher implements it. Its errors wrap
// dispatch.ErrBadRequest (400), fleet.ErrBadResult (400: the lease stays),
// fleet.ErrLeaseNotCurrent (409: a late or repeated result) or
// dispatch.ErrClosed (503: shutting down; workers retry).
type WorkControl interface {
	Register(ctx context.Context, w fleet.Worker) (fleet.RegisterResponse, error)
	Lease(ctx context.Context, req fleet.LeaseRequest) (fleet.LeaseResponse, error)
	Heartbeat(ctx context.Context, req fleet.HeartbeatRequest) (fleet.HeartbeatResponse, error)
	Result(ctx context.Context, req fleet.ResultRequest) error
	Release(ctx context.Context, req fleet.ReleaseRequest) error
	// Leave records that a worker is leaving (store.ErrNotFound, 404,
	// for an unknown one).
	Leave(ctx context.Context, req fleet.LeaveRequest) error
	// Workers is the fleet for GET /api/v1/workers.
	Workers(ctx context.Context) ([]fleet.WorkerView, error)
}

// workBodyLimit is fiber's body limit while the work routes are on: a
// result may be up to fleet.MaxBodyBytes (a larger one gets 400 from the
// handler, one larger still 413 from the server).
const workBodyLimit = 4 << 20

// workRoutes are the worker protocol's routes, outside the API's per-client
// rate limit (a fleet polls from few addresses) and behind the worker
// token. Without a token they are not served at all.
func (s *Server) workRoutes(app *fiber.App) {
	if s.work == nil || s.workerToken == "" {
		return
	}
	// The token is checked per route: a group's middleware would match
	// every path with its prefix (/api/v1/workers too).
	auth := s.authorizeWorker
	app.Post(fleet.PathRegister, auth, workHandler(s, func(ctx context.Context, w fleet.Worker) (any, error) { return s.work.Register(ctx, w) }))
	app.Post(fleet.PathLease, auth, workHandler(s, func(ctx context.Context, r fleet.LeaseRequest) (any, error) { return s.work.Lease(ctx, r) }))
	app.Post(fleet.PathHeartbeat, auth, workHandler(s, func(ctx context.Context, r fleet.HeartbeatRequest) (any, error) {
		return s.work.Heartbeat(ctx, r)
	}))
	app.Post(fleet.PathResult, auth, workHandler(s, func(ctx context.Context, r fleet.ResultRequest) (any, error) {
		return fiber.Map{"status": "accepted"}, s.work.Result(ctx, r)
	}))
	app.Post(fleet.PathRelease, auth, workHandler(s, func(ctx context.Context, r fleet.ReleaseRequest) (any, error) {
		return fiber.Map{"status": "released"}, s.work.Release(ctx, r)
	}))
	app.Post(fleet.PathLeave, auth, workHandler(s, func(ctx context.Context, r fleet.LeaveRequest) (any, error) {
		return fiber.Map{"status": "left"}, s.work.Leave(ctx, r)
	}))
}

// workHandler decodes a request body of type T, calls fn, and answers its
// value as JSON; errors become statuses through workError.
func workHandler[T any](s *Server, fn func(ctx context.Context, req T) (any, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		body := c.Body()
		if len(body) > fleet.MaxBodyBytes {
			return fmt.Errorf("%w: body of %d bytes, over %d", httpx.ErrBadRequest, len(body), fleet.MaxBodyBytes)
		}
		var req T
		if err := json.Unmarshal(body, &req); err != nil {
			return fmt.Errorf("%w: %v", httpx.ErrBadRequest, err)
		}
		out, err := fn(c.UserContext(), req)
		if err != nil {
			return s.workError(err)
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		return c.JSON(out)
	}
}

// workError maps the fleet's errors to the HTTP layer's.
func (s *Server) workError(err error) error {
	switch {
	case errors.Is(err, dispatch.ErrBadRequest), errors.Is(err, fleet.ErrBadResult):
		return fmt.Errorf("%w: %v", httpx.ErrBadRequest, err)
	case errors.Is(err, fleet.ErrLeaseNotCurrent):
		return fmt.Errorf("%w: %v", httpx.ErrConflict, err)
	case errors.Is(err, dispatch.ErrClosed):
		return fmt.Errorf("%w: %v", httpx.ErrUnavailable, err)
	}
	return fmt.Errorf("web: work: %w", err)
}

// authorizeWorker checks the worker token in constant time.
func (s *Server) authorizeWorker(c *fiber.Ctx) error {
	scheme, token, ok := strings.Cut(c.Get(fiber.HeaderAuthorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return fmt.Errorf("%w: send Authorization: Bearer <worker token>", httpx.ErrUnauthorized)
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	want := sha256.Sum256([]byte(s.workerToken))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return fmt.Errorf("%w: wrong worker token", httpx.ErrForbidden)
	}
	return c.Next()
}

// workerList is the body of GET /api/v1/workers.
type workerList struct {
	Dispatch string             `json:"dispatch"` // "local" or "workers"
	Workers  []fleet.WorkerView `json:"workers"`
}

// apiWorkers serves GET /api/v1/workers: the fleet (public: no tokens, no
// addresses). Without workers the list is empty and dispatch says local.
func (s *Server) apiWorkers(c *fiber.Ctx) error {
	out := workerList{Dispatch: "local", Workers: []fleet.WorkerView{}}
	if s.work != nil {
		ws, err := s.work.Workers(c.UserContext())
		if err != nil {
			return fmt.Errorf("web: workers: %w", err)
		}
		out.Dispatch = "workers"
		if ws != nil {
			out.Workers = ws
		}
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}
