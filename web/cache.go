package web

import (
	"context"
	"encoding/hex"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

// changedCache remembers Store.Changed for a short while, so that hot
// routes (badges) can validate their caches without a database query per
// request. Staleness is bounded by ttl, far below the badges' max-age.
type changedCache struct {
	ttl time.Duration

	mu      sync.Mutex
	value   time.Time
	fetched time.Time
}

// get returns the store's last change time, at most ttl old.
func (c *changedCache) get(ctx context.Context, fetch func(context.Context) (time.Time, error)) (time.Time, error) {
	now := time.Now()
	c.mu.Lock()
	if c.ttl > 0 && !c.fetched.IsZero() && now.Sub(c.fetched) < c.ttl {
		v := c.value
		c.mu.Unlock()
		return v, nil
	}
	c.mu.Unlock()
	v, err := fetch(ctx)
	if err != nil {
		return time.Time{}, err
	}
	c.mu.Lock()
	c.value, c.fetched = v, now
	c.mu.Unlock()
	return v, nil
}

// storeChanged is Store.Changed through the cache.
func (s *Server) storeChanged(ctx context.Context) (time.Time, error) {
	return s.changed.get(ctx, s.store.Changed)
}

// cachedBadge is one rendered badge and the data version it was made from.
type cachedBadge struct {
	changed time.Time
	etag    string
	body    []byte
}

// badgeCache keeps rendered badges by (kind, id, target, style, label); an
// entry is valid while Store.Changed is what it was rendered at.
type badgeCache struct {
	max int

	mu sync.RWMutex
	m  map[string]cachedBadge
}

func (b *badgeCache) get(key string, changed time.Time) (cachedBadge, bool) {
	b.mu.RLock()
	e, ok := b.m[key]
	b.mu.RUnlock()
	if !ok || !e.changed.Equal(changed) {
		return cachedBadge{}, false
	}
	return e, true
}

func (b *badgeCache) put(key string, e cachedBadge) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil || len(b.m) >= b.max {
		// Simplest bound: start over. Hostile ids cannot grow memory, and
		// the popular badges are back in the cache after one request each.
		b.m = make(map[string]cachedBadge, 1024)
	}
	b.m[key] = e
}

// etagOf is a strong validator over the given parts (data version and
// everything else the representation depends on).
func etagOf(parts ...string) string {
	h := fnv.New128a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return `"` + hex.EncodeToString(h.Sum(nil)) + `"`
}

// changedTag renders a change time for etagOf.
func changedTag(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 36) }

// notModified sets ETag and reports whether the request's If-None-Match
// matches it (weak comparison, as RFC 9110 asks for If-None-Match).
func notModified(c *fiber.Ctx, etag string) bool {
	c.Set(fiber.HeaderETag, etag)
	inm := c.Get(fiber.HeaderIfNoneMatch)
	if inm == "" {
		return false
	}
	for _, t := range strings.Split(inm, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
