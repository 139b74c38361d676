package web

import (
	"math"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// routeCode names one series of the HTTP metrics.
type routeCode struct {
	route string
	code  int
}

// routeSeries are the metric series of one route and status code, looked up
// once and then reused without allocating.
type routeSeries struct {
	reqs metrics.Counter
	time metrics.Histogram
}

// observe counts requests and their latency by route pattern (never by
// raw path, so hostile URLs cannot blow up the metric's cardinality).
func (s *Server) observe(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	status := c.Response().StatusCode()
	if err != nil {
		status = httpx.Status(err)
	}
	route := "unmatched"
	if r := c.Route(); r != nil && r.Method != "USE" {
		route = r.Path
	}
	k := routeCode{route, status}
	v, ok := s.routeSeries.Load(k)
	if !ok {
		v, _ = s.routeSeries.LoadOrStore(k, &routeSeries{
			reqs: s.httpReqs.With(route, strconv.Itoa(status)),
			time: s.httpTimes.With(route),
		})
	}
	rs := v.(*routeSeries)
	rs.reqs.Inc()
	rs.time.Observe(time.Since(start).Seconds())
	return err
}

// limit applies the per-client rate limit (the API routes).
func (s *Server) limit(c *fiber.Ctx) error {
	if s.limiter == nil || c.Method() == fiber.MethodOptions {
		return c.Next()
	}
	ok, wait := s.limiter.Allow(s.clients.Key(c))
	if !ok {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		return httpx.ErrRateLimited
	}
	return c.Next()
}
