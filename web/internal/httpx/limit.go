package httpx

import (
	"math"
	"sync"
	"time"
)

// RateLimiter is a token bucket per client (its key: Clients.Key).
type RateLimiter struct {
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

// NewRateLimiter refills rate tokens a second, up to burst; now is the clock.
func NewRateLimiter(rate float64, burst int, now func() time.Time) *RateLimiter {
	return &RateLimiter{rate: rate, burst: float64(burst), now: now, buckets: map[string]*bucket{}}
}

// Burst is how many tokens a client holds when full.
func (l *RateLimiter) Burst() int { return int(math.Round(l.burst)) }

// Allow takes a token for key; when none is left it says how long to wait.
func (l *RateLimiter) Allow(key string) (ok bool, retryAfter time.Duration) {
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
func (l *RateLimiter) sweep(now time.Time) {
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
