package web

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
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

// secure sets the security headers every response carries. Pages may not
// be framed and run only their own script; data routes have nothing to run;
// badges stay embeddable anywhere (README files, model cards) and readable
// from any origin.
func (s *Server) secure(c *fiber.Ctx) error {
	securityHeaders(c)
	return c.Next()
}

// securityHeaders sets secure's headers on c's answer.
func securityHeaders(c *fiber.Ctx) {
	h := &c.Response().Header
	hdrNosniff.set(h)
	hdrReferrer.set(h)
	switch p := c.Path(); {
	case strings.HasPrefix(p, "/badge/"):
		hdrCSPBadge.set(h)
		hdrCORPCross.set(h)
		if m := c.Method(); m == fiber.MethodGet || m == fiber.MethodHead {
			hdrAllowOrigin.set(h)
			hdrExposeETag.set(h)
		}
	case strings.HasPrefix(p, "/api/") || strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".csv"):
		hdrCSPData.set(h)
		hdrFrameDeny.set(h)
	default:
		hdrCSPPage.set(h)
		hdrFrameDeny.set(h)
		hdrCOOP.set(h)
	}
}

// cors allows any origin to read the public GET routes (API, badges, feed);
// there are no cookies, so nothing private can leak. It also answers
// preflight requests for them.
func cors(c *fiber.Ctx) error {
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
		status = statusOf(err)
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

// rateLimiter is a token bucket per client (its key: clientKey).
type rateLimiter struct {
	rate  float64 // tokens per second
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newRateLimiter(rate float64, burst int, now func() time.Time) *rateLimiter {
	return &rateLimiter{rate: rate, burst: float64(burst), now: now, buckets: map[string]*bucket{}}
}

// allow takes a token for key; when none is left it says how long to wait.
func (l *rateLimiter) allow(key string) (ok bool, retryAfter time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b, found := l.buckets[key]
	if !found {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// sweep forgets buckets that have refilled (they equal a new bucket), at
// most once a minute, so idle clients cost no memory.
func (l *rateLimiter) sweep(now time.Time) {
	if now.Sub(l.swept) < time.Minute {
		return
	}
	l.swept = now
	full := time.Duration(l.burst / l.rate * float64(time.Second))
	for k, b := range l.buckets {
		if now.Sub(b.last) >= full {
			delete(l.buckets, k)
		}
	}
}

// limit applies the per-client rate limit (the API routes).
func (s *Server) limit(c *fiber.Ctx) error {
	if s.limiter == nil || c.Method() == fiber.MethodOptions {
		return c.Next()
	}
	ok, wait := s.limiter.allow(s.clientKey(c))
	if !ok {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		return ErrRateLimited
	}
	return c.Next()
}
