package hubtest

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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
	h.linkNext(w, "/api/models", q, offset+limit)
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

// huge is a file served from a generator instead of memory.
type huge struct {
	size     int64
	announce bool
}

// SetHugeFile makes the repo file name of repo id (which must be in its
// Files, so that listings name it) size bytes of valid JSON, generated as
// it is sent, so that a test can serve gigabytes without holding them:
// {"model_type": "llama", "architectures": […], "padding": "xxx…"}. Its
// ETag names no hash (nothing can verify it, as with some mirrors). With
// announce, HEAD and GET carry Content-Length; without, HEAD has none and
// GET is chunked.
func (h *Hub) SetHugeFile(id, name string, size int64, announce bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.huge == nil {
		h.huge = map[string]huge{}
	}
	h.huge[id+"\x00"+name] = huge{size: size, announce: announce}
}

func (h *Hub) hugeFile(id, name string) (huge, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.huge[id+"\x00"+name]
	return f, ok
}

// serveHuge answers a resolve request for a huge file.
func serveHuge(w http.ResponseWriter, r *http.Request, f huge) {
	w.Header().Set("ETag", fmt.Sprintf(`"huge-%d"`, f.size))
	w.Header().Set("Content-Type", "application/json")
	if f.announce {
		w.Header().Set("Content-Length", strconv.FormatInt(f.size, 10))
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	io.Copy(w, hugeJSON(f.size))
}

// hugeJSON is a JSON object of exactly size bytes (at least 100), made as
// it is read.
func hugeJSON(size int64) io.Reader {
	const head = `{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "padding": "`
	const tail = `"}`
	pad := max(size-int64(len(head)+len(tail)), 0)
	return io.MultiReader(strings.NewReader(head), io.LimitReader(xs{}, pad), strings.NewReader(tail))
}

// xs reads as an endless run of 'x'.
type xs struct{}

func (xs) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}
