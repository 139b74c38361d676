package httpx

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
	// BadgeCache is a badge's Cache-Control.
	BadgeCache = kv("Cache-Control", "max-age=300")
	// CtypeSVG and CtypeJSON are a badge's content types.
	CtypeSVG  = []byte("image/svg+xml; charset=utf-8")
	CtypeJSON = []byte("application/json; charset=utf-8")
)

// Header is a canonical key and its value.
type Header struct{ k, v []byte }

func kv(k, v string) Header { return Header{[]byte(k), []byte(v)} }

// Set puts hdr on the response.
func (hdr Header) Set(h *fasthttp.ResponseHeader) { h.SetCanonical(hdr.k, hdr.v) }
