package data

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// RequestDesk takes test requests; *requests.Desk is the real one. Every
// "not found" is an error wrapping store.ErrNotFound.
type RequestDesk interface {
	// Ask queues a test of the model id after checking it with the Hub,
	// or returns the model's open request (created false). Its error is a
	// refusal with a reason (requests.ReasonOf) or a database failure.
	Ask(ctx context.Context, id string) (store.TestRequest, bool, error)
	// Get is one request, with its place in the queue.
	Get(ctx context.Context, id int64) (store.TestRequest, error)
	// Open is the model's open (queued or running) request.
	Open(ctx context.Context, modelID string) (store.TestRequest, error)
}

// Asks is the test requests' desk (RequestDesk) with its per-client limit,
// shared by the API and the pages.
type Asks struct {
	Desk    RequestDesk        // nil: test requests are off
	Limit   *httpx.RateLimiter // test requests per client; nil: no limit
	Clients *httpx.Clients     // who the client is
}

// Allowed applies the per-client limit of test requests.
func (a *Asks) Allowed(c *fiber.Ctx) error {
	if a.Limit == nil {
		return nil
	}
	ok, wait := a.Limit.Allow(a.Clients.Key(c))
	if ok {
		return nil
	}
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	return fmt.Errorf("%w: at most %d test requests an hour from one client; try again in %s",
		httpx.ErrRateLimited, a.Limit.Burst(), wait.Round(time.Minute))
}

// Request reads the :id parameter and the request it names.
func (a *Asks) Request(c *fiber.Ctx) (store.TestRequest, error) {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return store.TestRequest{}, fmt.Errorf("%w: no test request %s", httpx.ErrNotFound, httpx.QuoteShort(c.Params("id")))
	}
	req, err := a.Desk.Get(c.UserContext(), id)
	if errors.Is(err, store.ErrNotFound) {
		return req, fmt.Errorf("%w: no test request %d", httpx.ErrNotFound, id)
	}
	return req, err
}
