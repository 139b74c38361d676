// Package cached keeps what the web server computes from the database for
// the data's current version (Store.Changed): a value is valid while the
// version is what it was computed at, so a write invalidates everything at
// once and nothing is ever stale. It also owns the HTTP side of such an
// answer: its ETag over the version, the conditional request (304), and a
// rendered body kept with its gzip encoding.
//
// It imports none of the handlers; every audience of the web server keeps
// its own caches of it.
package cached

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Source tells the data's version: the store's Changed.
type Source interface {
	Changed(ctx context.Context) (time.Time, error)
}

// Map is a cache of values derived from the database, each valid for the
// version it was computed at. It holds at most MaxBytes (as estimated by
// the caller); when full it starts over, which bounds memory whatever URLs
// clients invent, and the popular entries come back after one request each.
type Map[K comparable, V any] struct {
	MaxBytes int // set before first use

	mu    sync.RWMutex
	m     map[K]entry[V]
	bytes int
}

type entry[V any] struct {
	changed time.Time
	size    int
	v       V
}

// Overhead is what the cache adds to a caller's estimate for each entry.
const Overhead = 64

// Get returns the value for key if it was computed at changed.
func (c *Map[K, V]) Get(key K, changed time.Time) (V, bool) {
	c.mu.RLock()
	e, ok := c.m[key]
	c.mu.RUnlock()
	if !ok || !e.changed.Equal(changed) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put stores v for key as computed at changed; size is its estimated cost
// in bytes. Values larger than a tenth of the cache are not kept.
func (c *Map[K, V]) Put(key K, changed time.Time, v V, size int) {
	size += Overhead
	if size > c.MaxBytes/10 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok {
		c.bytes -= old.size
	}
	if c.m == nil || c.bytes+size > c.MaxBytes {
		c.m = make(map[K]entry[V], 256)
		c.bytes = 0
	}
	c.m[key] = entry[V]{changed: changed, size: size, v: v}
	c.bytes += size
}

// Do returns the value for key at changed, computing and keeping it with
// build (the value and its estimated size) when the cache lacks it. A
// string key is copied before it is kept: it may point into a request's
// buffer.
func (c *Map[K, V]) Do(key K, changed time.Time, build func() (V, int, error)) (V, error) {
	if v, ok := c.Get(key, changed); ok {
		return v, nil
	}
	v, size, err := build()
	if err != nil {
		return v, err
	}
	if s, ok := any(key).(string); ok {
		key = any(strings.Clone(s)).(K)
	}
	c.Put(key, changed, v, size)
	return v, nil
}

// Range calls fn for every entry held, with the size it is counted at
// (the caller's estimate plus Overhead), until fn returns false.
func (c *Map[K, V]) Range(fn func(key K, v V, size int) bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for k, e := range c.m {
		if !fn(k, e.v, e.size) {
			return
		}
	}
}

// Len is how many entries are held; Bytes, what they are counted at.
func (c *Map[K, V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// Bytes is the sum of the held entries' sizes.
func (c *Map[K, V]) Bytes() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.bytes
}

// Check reads the data's version from src, sets the answer's ETag over it
// and parts (everything else the representation depends on), and reports
// whether the request already holds that answer: then the caller answers
// 304 (Unchanged). If-None-Match: "*" is not a match here (the answer is
// not built yet): AnyRepresentation answers it. The error is src's, for
// the caller to wrap.
func Check(c *fiber.Ctx, src Source, parts ...string) (changed time.Time, fresh bool, err error) {
	changed, err = src.Changed(c.UserContext())
	if err != nil {
		return changed, false, err
	}
	etag := Tag(changed, parts...)
	c.Response().Header.SetCanonical(keyETag, []byte(etag))
	return changed, names(c, etag, false), nil
}

// Unchanged answers 304 Not Modified.
func Unchanged(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNotModified) }
