package cached

import (
	"bytes"
	"compress/gzip"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Body is a rendered body kept in a cache with its gzip encoding, made
// once when the body is rendered, so that a cached page costs a client
// that accepts gzip (every browser, most feed readers) a seventh of the
// bytes and the server no compression per request. Its gzip form is nil
// when the body is too small to gain from it.
type Body struct {
	raw, gz []byte
}

// GzipFrom is the smallest body worth compressing: below it the gzip
// framing (about 20 bytes) and a client's inflate cost more than they save.
const GzipFrom = 1 << 10

// Encode makes body's cached form.
func Encode(body []byte) Body {
	e := Body{raw: body}
	if len(body) < GzipFrom {
		return e
	}
	var buf bytes.Buffer
	buf.Grow(len(body) / 4)
	zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression) // a valid level: cannot fail
	zw.Write(body)                                              // writes to a bytes.Buffer: cannot fail
	zw.Close()
	if buf.Len() < len(body) {
		e.gz = buf.Bytes()
	}
	return e
}

// Raw is the body as rendered; Gzip, its gzip encoding (nil when none).
func (e Body) Raw() []byte { return e.raw }

// Gzip is the body's gzip encoding, nil when it has none.
func (e Body) Gzip() []byte { return e.gz }

// Size is what the entry costs a cache.
func (e Body) Size() int { return len(e.raw) + len(e.gz) }

// Send sends the body, gzipped when the request accepts gzip, and says
// that the answer varies by Accept-Encoding (a shared cache must not hand
// the gzipped one to a client that did not ask for it). The content type
// is the caller's.
func (e Body) Send(c *fiber.Ctx) error {
	if e.gz == nil {
		return c.Send(e.raw)
	}
	c.Vary(fiber.HeaderAcceptEncoding)
	if !AcceptsGzip(c.Get(fiber.HeaderAcceptEncoding)) {
		return c.Send(e.raw)
	}
	c.Set(fiber.HeaderContentEncoding, "gzip")
	return c.Send(e.gz)
}

// Bodies is a cache of rendered bodies.
type Bodies = Map[string, Body]

// Rendered is the body kept for key at changed, or the one render makes,
// encoded and kept (with its key's length counted) until the data changes.
func Rendered(m *Bodies, key string, changed time.Time, render func() ([]byte, error)) (Body, error) {
	return m.Do(key, changed, func() (Body, int, error) {
		raw, err := render()
		if err != nil {
			return Body{}, 0, err
		}
		b := Encode(raw)
		return b, b.Size() + len(key), nil
	})
}

// Coding is the content coding the request gets from a route that sends a
// Body ("gzip" or ""), for that route's ETag: a strong validator names one
// representation (RFC 9110 8.8.3), and a cache that holds both must not be
// told that its plain copy is the gzipped one. It says that the answer
// varies by Accept-Encoding (the 304 included).
func Coding(c *fiber.Ctx) string {
	c.Vary(fiber.HeaderAcceptEncoding)
	if AcceptsGzip(c.Get(fiber.HeaderAcceptEncoding)) {
		return "gzip"
	}
	return ""
}

// AcceptsGzip reports whether an Accept-Encoding header (RFC 9110
// 12.5.3) accepts gzip: listed as gzip, x-gzip or *, without q=0.
func AcceptsGzip(header string) bool {
	star := false
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(part, ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "gzip" && name != "x-gzip" && name != "*" {
			continue
		}
		ok := qualityOf(params) > 0
		if name != "*" {
			return ok // gzip named: its own weight decides, whatever * says
		}
		star = ok
	}
	return star
}

// qualityOf reads the q weight from an Accept-Encoding member's
// parameters ("q=0.5"); 1 without one, 0 for a weight that does not parse.
func qualityOf(params string) float64 {
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || q < 0 || q > 1 {
			return 0
		}
		return q
	}
	return 1
}
