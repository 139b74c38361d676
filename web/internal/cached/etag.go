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
// matches it (weak comparison, as RFC 9110 asks for If-None-Match).
func NotModified(c *fiber.Ctx, etag string) bool {
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
