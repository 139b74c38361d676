package cached

import (
	"encoding/hex"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Tag is a strong validator of an answer computed at the data version
// changed, over parts: everything else the representation depends on.
func Tag(changed time.Time, parts ...string) string {
	h := fnv.New64a()
	h.Write([]byte(strconv.FormatInt(changed.UnixNano(), 36)))
	h.Write([]byte{0})
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return `"` + hex.EncodeToString(h.Sum(nil)) + `"`
}

// keyETag is "Etag", fasthttp's canonical form, so that Del (which
// normalises its key) finds it: an error answer drops the ETag.
var keyETag = []byte("Etag")

// NotModified sets ETag and reports whether the request's If-None-Match
// matches it (weak comparison, as RFC 9110 asks for If-None-Match). "*"
// matches: the caller calls it once it knows the answer exists.
func NotModified(c *fiber.Ctx, etag string) bool {
	c.Response().Header.SetCanonical(keyETag, []byte(etag))
	return names(c, etag, true)
}

// names reports whether the request's If-None-Match names etag (weakly),
// or, where star, is "*".
func names(c *fiber.Ctx, etag string, star bool) bool {
	inm := c.Get(fiber.HeaderIfNoneMatch)
	if inm == "" {
		return false
	}
	for _, t := range strings.Split(inm, ",") {
		t = strings.TrimSpace(t)
		if star && t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// AnyRepresentation is the middleware that answers If-None-Match: "*".
// Check, called before the answer is built, never takes "*" for a match:
// the answer may yet be an error (a malformed cursor, an unknown model),
// and "*" matches only an answer that exists. So the handler answers, and
// an answer that turns out to exist (200, with the ETag Check set) becomes
// 304, as RFC 9110 asks.
func AnyRepresentation(c *fiber.Ctx) error {
	err := c.Next()
	r := c.Response()
	if err == nil && r.StatusCode() == fiber.StatusOK && len(r.Header.PeekBytes(keyETag)) > 0 && names(c, "", true) {
		r.ResetBody()
		r.Header.Del(fiber.HeaderContentEncoding)
		r.SetStatusCode(fiber.StatusNotModified)
	}
	return err
}
