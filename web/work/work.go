// Package work serves the worker fleet (serve --dispatch workers): the
// worker protocol's routes behind the worker token, and the fleet's list
// at GET /api/v1/workers. web/routes.go wires its handlers.
package work

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/dispatch"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// Control is the server's side of the worker fleet (serve --dispatch
// workers); *dispatch.Dispatcher implements it. Its errors wrap
// dispatch.ErrBadRequest (400), fleet.ErrBadResult (400: the lease stays),
// fleet.ErrLeaseNotCurrent (409: a late or repeated result) or
// dispatch.ErrClosed (503: shutting down; workers retry).
type Control interface {
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

// BodyLimit is fiber's body limit while the work routes are on: a
// result may be up to fleet.MaxBodyBytes (a larger one gets 400 from the
// handler, one larger still 413 from the server).
const BodyLimit = 4 << 20

// Handler serves the fleet's routes.
type Handler struct {
	fleet Control // nil: no fleet (serve --dispatch local)
	token string  // the worker token; "": the work routes are off
}

// New is the handler of fleet (nil for none) behind token.
func New(fleet Control, token string) *Handler { return &Handler{fleet: fleet, token: token} }

// On says whether the worker protocol's routes are served: a fleet and a
// token. They stay outside the API's per-client rate limit (a fleet polls
// from few addresses) and behind the token; the token is checked per route
// (Authorize), as a group's middleware would match every path with its
// prefix (/api/v1/workers too).
func (h *Handler) On() bool { return h.fleet != nil && h.token != "" }

// Register serves fleet.PathRegister.
func (h *Handler) Register(c *fiber.Ctx) error {
	return serve(c, func(ctx context.Context, w fleet.Worker) (any, error) { return h.fleet.Register(ctx, w) })
}

// Lease serves fleet.PathLease.
func (h *Handler) Lease(c *fiber.Ctx) error {
	return serve(c, func(ctx context.Context, r fleet.LeaseRequest) (any, error) { return h.fleet.Lease(ctx, r) })
}

// Heartbeat serves fleet.PathHeartbeat.
func (h *Handler) Heartbeat(c *fiber.Ctx) error {
	return serve(c, func(ctx context.Context, r fleet.HeartbeatRequest) (any, error) { return h.fleet.Heartbeat(ctx, r) })
}

// Result serves fleet.PathResult.
func (h *Handler) Result(c *fiber.Ctx) error {
	return serve(c, func(ctx context.Context, r fleet.ResultRequest) (any, error) {
		return fiber.Map{"status": "accepted"}, h.fleet.Result(ctx, r)
	})
}

// Release serves fleet.PathRelease.
func (h *Handler) Release(c *fiber.Ctx) error {
	return serve(c, func(ctx context.Context, r fleet.ReleaseRequest) (any, error) {
		return fiber.Map{"status": "released"}, h.fleet.Release(ctx, r)
	})
}

// Leave serves fleet.PathLeave.
func (h *Handler) Leave(c *fiber.Ctx) error {
	return serve(c, func(ctx context.Context, r fleet.LeaveRequest) (any, error) {
		return fiber.Map{"status": "left"}, h.fleet.Leave(ctx, r)
	})
}

// serve decodes a request body of type T, calls fn, and answers its
// value as JSON; errors become statuses through workError.
func serve[T any](c *fiber.Ctx, fn func(ctx context.Context, req T) (any, error)) error {
	body := c.Body()
	if len(body) > fleet.MaxBodyBytes {
		return fmt.Errorf("%w: body of %d bytes, over %d", httpx.ErrBadRequest, len(body), fleet.MaxBodyBytes)
	}
	var req T
	if err := decodeWork(body, &req); err != nil {
		return fmt.Errorf("%w: %v", httpx.ErrBadRequest, err)
	}
	out, err := fn(c.UserContext(), req)
	if err != nil {
		return workError(err)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
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
func workError(err error) error {
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

// Authorize checks the worker token in constant time.
func (h *Handler) Authorize(c *fiber.Ctx) error {
	if err := httpx.Bearer(c, h.token, "worker"); err != nil {
		return err
	}
	return c.Next()
}

// List is the body of GET /api/v1/workers.
type List struct {
	Dispatch string             `json:"dispatch"` // "local" or "workers"
	Workers  []fleet.WorkerView `json:"workers"`
}

// Workers serves GET /api/v1/workers: the fleet (public: no tokens, no
// addresses). Without workers the list is empty and dispatch says local.
func (h *Handler) Workers(c *fiber.Ctx) error {
	out := List{Dispatch: "local", Workers: []fleet.WorkerView{}}
	if h.fleet != nil {
		ws, err := h.fleet.Workers(c.UserContext())
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
