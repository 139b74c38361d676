package web

import (
	"bytes"
	"compress/gzip"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// encodedBody is a rendered body kept in a cache with its gzip encoding,
// made once when the body is rendered, so that a cached page costs a
// client that accepts gzip (every browser, most feed readers) a seventh
// of the bytes and the server no compression per request. gz is nil when
// the body is too small to gain from it.
type encodedBody struct {
	raw, gz []byte
}

// gzipFrom is the smallest body worth compressing: below it the gzip
// framing (about 20 bytes) and a client's inflate cost more than they save.
const gzipFrom = 1 << 10

// encodeBody makes body's cached form.
func encodeBody(body []byte) encodedBody {
	e := encodedBody{raw: body}
	if len(body) < gzipFrom {
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

// size is what the entry costs a cache.
func (e encodedBody) size() int { return len(e.raw) + len(e.gz) }

// send sends the body, gzipped when the request accepts gzip, and says
// that the answer varies by Accept-Encoding (a shared cache must not hand
// the gzipped one to a client that did not ask for it). The content type
// is the caller's.
func (e encodedBody) send(c *fiber.Ctx) error {
	if e.gz == nil {
		return c.Send(e.raw)
	}
	c.Vary(fiber.HeaderAcceptEncoding)
	if !acceptsGzip(c.Get(fiber.HeaderAcceptEncoding)) {
		return c.Send(e.raw)
	}
	c.Set(fiber.HeaderContentEncoding, "gzip")
	return c.Send(e.gz)
}

// codingOf is the content coding the request gets from a route that sends
// encodedBody ("gzip" or ""), for that route's ETag: a strong validator
// names one representation (RFC 9110 8.8.3), and a cache that holds both
// must not be told that its plain copy is the gzipped one. It says that the
// answer varies by Accept-Encoding (the 304 included).
func codingOf(c *fiber.Ctx) string {
	c.Vary(fiber.HeaderAcceptEncoding)
	if acceptsGzip(c.Get(fiber.HeaderAcceptEncoding)) {
		return "gzip"
	}
	return ""
}

// acceptsGzip reports whether an Accept-Encoding header (RFC 9110
// 12.5.3) accepts gzip: listed as gzip, x-gzip or *, without q=0.
func acceptsGzip(header string) bool {
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
