package web

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

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

// secure sets the security headers every response carries; handlers of
// embeddable resources (badges) relax them with embeddable.
func (s *Server) secure(c *fiber.Ctx) error {
	h := &c.Response().Header
	h.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	h.Set(fiber.HeaderReferrerPolicy, "strict-origin-when-cross-origin")
	h.Set(fiber.HeaderXFrameOptions, "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if p := c.Path(); strings.HasPrefix(p, "/api/") || strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".csv") {
		h.Set(fiber.HeaderContentSecurityPolicy, cspData)
	} else {
		h.Set(fiber.HeaderContentSecurityPolicy, cspPage)
	}
	return c.Next()
}

// embeddable lets other sites show the response in <img> (README badges).
func embeddable(c *fiber.Ctx) {
	h := &c.Response().Header
	h.Del(fiber.HeaderXFrameOptions)
	h.Set(fiber.HeaderContentSecurityPolicy, cspBadge)
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
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
	s.httpReqs.With(route, strconv.Itoa(status)).Inc()
	s.httpTimes.With(route).Observe(time.Since(start).Seconds())
	return err
}

// rateLimiter is a token bucket per client IP.
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

// limit applies the per-IP rate limit (the API routes).
func (s *Server) limit(c *fiber.Ctx) error {
	if s.limiter == nil || c.Method() == fiber.MethodOptions {
		return c.Next()
	}
	ok, wait := s.limiter.allow(c.IP())
	if !ok {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		return ErrRateLimited
	}
	return c.Next()
}
