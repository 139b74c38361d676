package hubtest

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

type window struct {
	q     int
	w     time.Duration
	start time.Time
	used  int
}

func resourceOf(r *http.Request) string {
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/"):
		return "api"
	case strings.Contains(r.URL.EscapedPath(), "/resolve/"):
		return "resolvers"
	}
	return "pages"
}

// rateLimit counts the request against its window, sets the RateLimit
// headers, and answers 429 (returning false) when the window is spent.
func (h *Hub) rateLimit(w http.ResponseWriter, r *http.Request) bool {
	res := resourceOf(r)
	now := time.Now()
	h.mu.Lock()
	win := h.limits[res]
	if win.start.IsZero() || !now.Before(win.start.Add(win.w)) {
		win.start, win.used = now, 0
	}
	win.used++
	remaining := max(win.q-win.used, 0)
	reset := int((win.start.Add(win.w).Sub(now) + time.Second - 1) / time.Second)
	over := win.used > win.q
	q, ws := win.q, int(win.w/time.Second)
	h.mu.Unlock()
	w.Header().Set("RateLimit", fmt.Sprintf(`"%s";r=%d;t=%d`, res, remaining, reset))
	w.Header().Set("RateLimit-Policy", fmt.Sprintf(`"fixed window";"%s";q=%d;w=%d`, res, q, ws))
	if over {
		hubError(w, r, http.StatusTooManyRequests, "", fmt.Sprintf(
			"You have exceeded our rate limit for '%s'. Retry after %d seconds.", res, reset))
		return false
	}
	return true
}
