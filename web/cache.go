package web

import (
	"encoding/hex"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

// versioned is a cache of values derived from the database: an entry is
// valid while Store.Changed is what it was computed at, so a write
// invalidates everything at once and nothing is ever stale. It holds at most
// maxBytes (as estimated by the caller); when full it starts over, which
// bounds memory whatever URLs clients invent, and the popular entries come
// back after one request each.
type versioned[K comparable, V any] struct {
	maxBytes int

	mu    sync.RWMutex
	m     map[K]versionedEntry[V]
	bytes int
}

type versionedEntry[V any] struct {
	changed time.Time
	size    int
	v       V
}

// get returns the value for key if it was computed at changed.
func (c *versioned[K, V]) get(key K, changed time.Time) (V, bool) {
	c.mu.RLock()
	e, ok := c.m[key]
	c.mu.RUnlock()
	if !ok || !e.changed.Equal(changed) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// put stores v for key as computed at changed; size is its estimated cost
// in bytes. Values larger than a tenth of the cache are not kept.
func (c *versioned[K, V]) put(key K, changed time.Time, v V, size int) {
	size += 64
	if size > c.maxBytes/10 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok {
		c.bytes -= old.size
	}
	if c.m == nil || c.bytes+size > c.maxBytes {
		c.m = make(map[K]versionedEntry[V], 256)
		c.bytes = 0
	}
	c.m[key] = versionedEntry[V]{changed: changed, size: size, v: v}
	c.bytes += size
}

// cachedBadge is one rendered badge.
type cachedBadge struct {
	etag string
	body []byte
}

// etagOf is a strong validator over the given parts (data version and
// everything else the representation depends on).
func etagOf(parts ...string) string {
	h := fnv.New64a()
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
	c.Response().Header.SetCanonical(keyETag, []byte(etag))
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
