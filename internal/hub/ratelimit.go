package hub

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RateLimit is the Hub's rate-limit state from one answer, as sent in the
// IETF draft headers (draft-ietf-httpapi-ratelimit-headers-09), e.g.
//
//	RateLimit: "api";r=489;t=189
//	RateLimit-Policy: "fixed window";"api";q=500;w=300
type RateLimit struct {
	Resource  string        // the limited resource: "api", "resolvers", "pages"
	Remaining int           // r: requests left in the current window
	Reset     time.Duration // t: time until the window resets
	Limit     int           // q: requests per window; 0 when no policy was sent
	Window    time.Duration // w: the window; 0 when no policy was sent
}

// ParseRateLimit reads the RateLimit and RateLimit-Policy headers. ok is
// false when there is no usable RateLimit header. Like huggingface_hub's
// parse_ratelimit_headers it takes the first `"name";r=N;t=N` item; it also
// accepts the parameters in any order and unquoted names.
func ParseRateLimit(h http.Header) (rl RateLimit, ok bool) {
	v := h.Values("RateLimit")
	if len(v) == 0 {
		return RateLimit{}, false
	}
	rl, ok = parseRateLimitValue(strings.Join(v, ","))
	if !ok {
		return RateLimit{}, false
	}
	if p := h.Values("RateLimit-Policy"); len(p) > 0 {
		params := sfParams(strings.Join(p, ","), rl.Resource)
		if q, ok := params["q"]; ok {
			rl.Limit = q
		}
		if w, ok := params["w"]; ok {
			rl.Window = time.Duration(w) * time.Second
		}
	}
	return rl, true
}

func parseRateLimitValue(s string) (RateLimit, bool) {
	for item := range strings.SplitSeq(s, ",") {
		name, params := sfItem(item)
		r, okR := params["r"]
		t, okT := params["t"]
		if okR && okT {
			return RateLimit{Resource: name, Remaining: r, Reset: time.Duration(t) * time.Second}, true
		}
	}
	return RateLimit{}, false
}

// sfParams finds the policy item for resource (or the first one with q) in
// a RateLimit-Policy value, e.g. `"fixed window";"api";q=500;w=300`.
func sfParams(s, resource string) map[string]int {
	var first map[string]int
	for item := range strings.SplitSeq(s, ",") {
		var names []string
		params := map[string]int{}
		for tok := range strings.SplitSeq(item, ";") {
			tok = strings.TrimSpace(tok)
			k, v, isParam := strings.Cut(tok, "=")
			if !isParam {
				names = append(names, strings.Trim(tok, `"`))
				continue
			}
			if n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(v), `"`)); err == nil && n >= 0 {
				params[strings.ToLower(strings.TrimSpace(k))] = n
			}
		}
		if _, ok := params["q"]; !ok {
			continue
		}
		for _, n := range names {
			if n == resource {
				return params
			}
		}
		if first == nil {
			first = params
		}
	}
	return first
}

// sfItem splits one structured-field item `"name";k=v;k=v` into its name and
// integer parameters. Non-integer or negative values are ignored.
func sfItem(item string) (string, map[string]int) {
	params := map[string]int{}
	name := ""
	for i, tok := range strings.Split(item, ";") {
		tok = strings.TrimSpace(tok)
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			if i == 0 {
				name = strings.Trim(tok, `"`)
			}
			continue
		}
		n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(v), `"`))
		if err != nil || n < 0 || n > 1<<31 {
			continue
		}
		params[strings.ToLower(strings.TrimSpace(k))] = n
	}
	return name, params
}

// parseRetryAfter reads Retry-After as delay-seconds or an HTTP date.
func parseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(min(n, 24*3600)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := max(t.Sub(now), 0)
		return min(d, 24*time.Hour), true
	}
	return 0, false
}

// pacer spreads requests so that the Hub's budget does not run out: each
// resource's last known state (from the RateLimit headers of every answer)
// decides how long the next request to that resource waits.
type pacer struct {
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	remaining int
	limit     int
	reset     time.Time // when the window resets
	next      time.Time // earliest start of the next request while pacing
}

// lowWater is the number of remaining requests under which the pacer starts
// spreading requests evenly over the rest of the window: a tenth of the
// window's quota, or 10 when the Hub sent no policy.
func lowWater(limit int) int {
	if limit > 0 {
		return max(limit/10, 1)
	}
	return 10
}

// observe records the state an answer reported.
func (p *pacer) observe(rl RateLimit, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.buckets == nil {
		p.buckets = map[string]*bucket{}
	}
	b := p.buckets[rl.Resource]
	if b == nil {
		b = &bucket{}
		p.buckets[rl.Resource] = b
	}
	b.remaining = rl.Remaining
	b.reset = now.Add(rl.Reset)
	if rl.Limit > 0 {
		b.limit = rl.Limit
	}
}

// forget drops what is known of resource, once its window was waited out.
func (p *pacer) forget(resource string) {
	p.mu.Lock()
	delete(p.buckets, resource)
	p.mu.Unlock()
}

// wait returns how long a request to resource must wait before it is sent,
// and books its slot. With the budget spent it waits for the reset (+1 s, as
// huggingface_hub does); when few requests are left it spreads them evenly
// over the time to the reset.
func (p *pacer) wait(resource string, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.buckets[resource]
	if b == nil || !now.Before(b.reset) {
		return 0
	}
	switch {
	case b.remaining <= 0:
		return b.reset.Sub(now) + time.Second
	case b.remaining <= lowWater(b.limit):
		interval := b.reset.Sub(now) / time.Duration(b.remaining+1)
		slot := now
		if b.next.After(slot) {
			slot = b.next
		}
		b.next = slot.Add(interval)
		b.remaining--
		return slot.Sub(now)
	default:
		b.remaining--
		return 0
	}
}

// resourceFor guesses which Hub rate-limit resource a request path counts
// against, to consult the right bucket before sending it.
func resourceFor(p string) string {
	switch {
	case strings.HasPrefix(p, "/api/"):
		return "api"
	case strings.Contains(p, "/resolve/"):
		return "resolvers"
	default:
		return "pages"
	}
}
