package hubtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// Endless is a way a hostile server keeps a listing going forever: after
// a normal first page, every page links to a fresh next cursor.
type Endless int

const (
	// EndlessOff is the normal listing: the last page has no next link.
	EndlessOff Endless = iota
	// EndlessEmpty: every page after the first is empty.
	EndlessEmpty
	// EndlessRepeat: every page repeats the first page's models.
	EndlessRepeat
	// EndlessTrickle: every page repeats the first page's models but for
	// one new model (a made-up id, trickle/model-N).
	EndlessTrickle
)

// SetEndlessListing makes /api/models misbehave as mode says.
func (h *Hub) SetEndlessListing(mode Endless) {
	h.mu.Lock()
	h.endless = mode
	h.mu.Unlock()
}

// endlessPage is the page a hostile listing sends at offset (in place of
// page, the normal one), and always a fresh next link.
func (h *Hub) endlessPage(w http.ResponseWriter, q url.Values, mode Endless, first, page []map[string]any, offset, limit int) []map[string]any {
	next := url.Values{}
	for k, v := range q {
		next[k] = v
	}
	c, _ := json.Marshal(cursor{Offset: offset + limit})
	next.Set("cursor", base64.StdEncoding.EncodeToString(c))
	w.Header().Set("Link", fmt.Sprintf(`<%s/api/models?%s>; rel="next"`, h.hub.URL, next.Encode()))
	if offset == 0 {
		return page
	}
	switch mode {
	case EndlessEmpty:
		return []map[string]any{}
	case EndlessRepeat:
		return first
	case EndlessTrickle:
		out := append([]map[string]any{}, first...)
		if len(out) == 0 {
			return out
		}
		made := map[string]any{}
		for k, v := range out[len(out)-1] {
			made[k] = v
		}
		made["id"] = fmt.Sprintf("trickle/model-%d", offset)
		made["_id"] = fmt.Sprintf("trickle%d", offset)
		out[len(out)-1] = made
		return out
	}
	return page
}
