package web

import "github.com/valyala/fasthttp"

// Response headers set on every request, pre-canonicalised so that the hot
// paths (badges) skip fasthttp's key normalisation. Values are constants
// without line breaks.
var (
	hdrNosniff     = kv("X-Content-Type-Options", "nosniff")
	hdrReferrer    = kv("Referrer-Policy", "strict-origin-when-cross-origin")
	hdrCSPPage     = kv("Content-Security-Policy", cspPage)
	hdrCSPData     = kv("Content-Security-Policy", cspData)
	hdrCSPBadge    = kv("Content-Security-Policy", cspBadge)
	hdrFrameDeny   = kv("X-Frame-Options", "DENY")
	hdrCOOP        = kv("Cross-Origin-Opener-Policy", "same-origin")
	hdrCORPCross   = kv("Cross-Origin-Resource-Policy", "cross-origin")
	hdrAllowOrigin = kv("Access-Control-Allow-Origin", "*")
	hdrExposeETag  = kv("Access-Control-Expose-Headers", "ETag")
	hdrBadgeCache  = kv("Cache-Control", "max-age=300")
	// keyETag is "Etag", fasthttp's canonical form, so that Del (which
	// normalises its key) finds it: an error answer drops the ETag.
	keyETag   = []byte("Etag")
	ctypeSVG  = []byte("image/svg+xml; charset=utf-8")
	ctypeJSON = []byte("application/json; charset=utf-8")
)

// header is a canonical key and its value.
type header struct{ k, v []byte }

func kv(k, v string) header { return header{[]byte(k), []byte(v)} }

// set puts hdr on the response.
func (hdr header) set(h *fasthttp.ResponseHeader) { h.SetCanonical(hdr.k, hdr.v) }
