package hubtest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Fault is a misbehaviour injected into answers whose path starts with a
// prefix (see Hub.Fault). Build one with Status429, RetryAfter429,
// Status5xx, Slow, Truncate, Corrupt, Drop or MalformedJSON; it applies to
// one request unless Times says otherwise.
type Fault struct {
	kind       faultKind
	status     int
	t          int
	retryAfter string
	delay      time.Duration
	n          int64
	count      int
}

type faultKind int

const (
	fault429 faultKind = iota + 1
	faultRetryAfter
	fault5xx
	faultSlow
	faultTruncate
	faultCorrupt
	faultDrop
	faultMalformedJSON
	faultDrip
)

// Status429 answers 429 with `RateLimit: "<resource>";r=0;t=<t>`, the way
// the Hub says its window is spent and resets in t seconds.
func Status429(t int) Fault { return Fault{kind: fault429, t: t, count: 1} }

// RetryAfter429 answers 429 with `Retry-After: <v>` (seconds or an HTTP
// date) and a RateLimit header that is not exhausted, so only Retry-After
// tells how long to wait.
func RetryAfter429(v string) Fault { return Fault{kind: faultRetryAfter, retryAfter: v, count: 1} }

// Status5xx answers status (500, 502, 503, 504, …) with a JSON error.
func Status5xx(status int) Fault { return Fault{kind: fault5xx, status: status, count: 1} }

// Slow delays the answer by d (or until the client gives up).
func Slow(d time.Duration) Fault { return Fault{kind: faultSlow, delay: d, count: 1} }

// Truncate sends the headers and the first n bytes of the body, then breaks
// the connection. Body faults (Truncate, Corrupt) pass HEAD requests by.
func Truncate(n int64) Fault { return Fault{kind: faultTruncate, n: n, count: 1} }

// Corrupt flips the bits of the first body byte: same length, wrong hash.
func Corrupt() Fault { return Fault{kind: faultCorrupt, count: 1} }

// Drop closes the connection without answering: a network error.
func Drop() Fault { return Fault{kind: faultDrop, count: 1} }

// MalformedJSON answers 200 with a JSON body cut short.
func MalformedJSON() Fault { return Fault{kind: faultMalformedJSON, count: 1} }

// Drip sends the answer's body one byte every d, flushed: a transfer that
// never stalls long enough for a stall watchdog and never ends either.
func Drip(d time.Duration) Fault { return Fault{kind: faultDrip, delay: d, count: 1} }

// Times makes the fault apply to n requests; n < 0 means every request.
func (f Fault) Times(n int) Fault {
	f.count = n
	return f
}

type faultState struct {
	prefix string
	f      Fault
	left   int // requests still affected; < 0 forever
}

// Fault injects f into the next answers (of either server) whose path
// starts with pathPrefix, e.g. "/api/models", "/org/name/resolve/" or
// "/lfs/" (the CDN). Faults on one prefix apply in the order given.
func (h *Hub) Fault(pathPrefix string, f Fault) {
	if f.count == 0 {
		f.count = 1
	}
	h.mu.Lock()
	h.faults = append(h.faults, &faultState{prefix: pathPrefix, f: f, left: f.count})
	h.mu.Unlock()
}

// applyFault applies the first live fault matching r. It returns true when
// the fault answered the request itself.
func (h *Hub) applyFault(w *recorder, r *http.Request) bool {
	h.mu.Lock()
	var f *Fault
	for _, fs := range h.faults {
		bodyFault := fs.f.kind == faultTruncate || fs.f.kind == faultCorrupt || fs.f.kind == faultDrip
		if bodyFault && r.Method == http.MethodHead {
			continue // no body to spoil: keep the fault for the GET
		}
		if fs.left != 0 && strings.HasPrefix(r.URL.Path, fs.prefix) {
			if fs.left > 0 {
				fs.left--
			}
			ff := fs.f
			f = &ff
			break
		}
	}
	h.mu.Unlock()
	if f == nil {
		return false
	}
	res := resourceOf(r)
	switch f.kind {
	case fault429:
		w.Header().Set("RateLimit", fmt.Sprintf(`"%s";r=0;t=%d`, res, f.t))
		hubError(w, r, http.StatusTooManyRequests, "", fmt.Sprintf(
			"You have exceeded our rate limit for '%s'. Retry after %d seconds.", res, f.t))
		return true
	case faultRetryAfter:
		w.Header().Set("Retry-After", f.retryAfter)
		hubError(w, r, http.StatusTooManyRequests, "", "Too many requests")
		return true
	case fault5xx:
		hubError(w, r, f.status, "", http.StatusText(f.status))
		return true
	case faultSlow:
		t := time.NewTimer(f.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			w.dropped = true // the client left before an answer
			return true
		}
	case faultTruncate:
		w.cut = f.n
	case faultCorrupt:
		w.corrupt = true
	case faultDrip:
		w.drip = f.delay
	case faultDrop:
		if hj, ok := w.ResponseWriter.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				w.dropped = true
				conn.Close()
				return true
			}
		}
		w.dropped = true
		panic(http.ErrAbortHandler)
	case faultMalformedJSON:
		body := `[{"_id":"66d19580e2632490a6bc5829","id":"broken/json","downloads":` + strconv.Itoa(12)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, body)
		return true
	}
	return false
}
