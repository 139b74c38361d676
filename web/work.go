package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/dispatch"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
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
			return fmt.Errorf("%w: body of %d bytes, over %d", ErrBadRequest, len(body), fleet.MaxBodyBytes)
		}
		var req T
		if err := decodeWork(body, &req); err != nil {
			return fmt.Errorf("%w: %v", ErrBadRequest, err)
		}
		out, err := fn(c.UserContext(), req)
		if err != nil {
			return s.workError(err)
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		return c.JSON(out)
	}
}

// decodeWork decodes a work request's body into v. A number that is an
// integer written with a fraction of zeros or an exponent (64.0, 1e3) is
// one, as JSON Schema's "integer" (the OpenAPI document's) has it; Go's
// decoder takes only integer literals into an int, so such numbers are
// rewritten as integers first (those under 2^64 in size: a larger one
// fits no integer field, and stays a float).
func decodeWork(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("invalid JSON: data after the top-level value")
	}
	b, err := json.Marshal(integral(raw))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// maxIntegral is 2^64: integral numbers below it in size are rewritten.
var maxIntegral = new(big.Float).SetMantExp(big.NewFloat(1), 64)

// integral is a decoded JSON value with its integral numbers written as
// integers (decodeWork).
func integral(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = integral(e)
		}
	case []any:
		for i, e := range x {
			x[i] = integral(e)
		}
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			return x
		}
		f, ok := new(big.Float).SetString(s)
		if !ok || !f.IsInt() || new(big.Float).Abs(f).Cmp(maxIntegral) >= 0 {
			return x
		}
		i, _ := f.Int(nil)
		return json.Number(i.String())
	}
	return v
}

// workError maps the fleet's errors to the HTTP layer's.
func (s *Server) workError(err error) error {
	switch {
	case errors.Is(err, dispatch.ErrBadRequest), errors.Is(err, fleet.ErrBadResult):
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	case errors.Is(err, fleet.ErrLeaseNotCurrent):
		return fmt.Errorf("%w: %v", ErrConflict, err)
	case errors.Is(err, dispatch.ErrClosed):
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return fmt.Errorf("web: work: %w", err)
}

// authorizeWorker checks the worker token in constant time.
func (s *Server) authorizeWorker(c *fiber.Ctx) error {
	scheme, token, ok := strings.Cut(c.Get(fiber.HeaderAuthorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return fmt.Errorf("%w: send Authorization: Bearer <worker token>", ErrUnauthorized)
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	want := sha256.Sum256([]byte(s.workerToken))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return fmt.Errorf("%w: wrong worker token", ErrForbidden)
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
