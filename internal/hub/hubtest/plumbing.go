package hubtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// recorder captures the status and can cut or corrupt the body. The status
// goes into the log entry before any byte leaves, so a client never sees an
// answer that the log does not have yet.
type recorder struct {
	http.ResponseWriter
	h       *Hub
	entry   *Request
	status  int
	written int64
	cut     int64 // abort the connection after this many body bytes; -1 never
	corrupt bool
	dropped bool          // the connection was closed without an answer
	drip    time.Duration // send the body one byte every drip
	ctx     context.Context
}

func (w *recorder) WriteHeader(code int) {
	w.setStatus(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) setStatus(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	w.h.mu.Lock()
	w.entry.Status = code
	w.h.mu.Unlock()
}

func (w *recorder) Write(p []byte) (int, error) {
	w.setStatus(http.StatusOK)
	if w.corrupt && len(p) > 0 {
		q := bytes.Clone(p)
		q[0] ^= 0xff
		p = q
		w.corrupt = false
	}
	if w.cut >= 0 && w.written+int64(len(p)) > w.cut {
		keep := w.cut - w.written
		n, _ := w.ResponseWriter.Write(p[:keep])
		w.written += int64(n)
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler) // the client sees the connection break mid-body
	}
	if w.drip > 0 {
		return w.dripWrite(p)
	}
	n, err := w.ResponseWriter.Write(p)
	w.written += int64(n)
	return n, err
}

// dripWrite sends p one byte at a time, each flushed, w.drip apart, until
// the client leaves.
func (w *recorder) dripWrite(p []byte) (int, error) {
	for i := range p {
		if _, err := w.ResponseWriter.Write(p[i : i+1]); err != nil {
			return i, err
		}
		w.written++
		w.Flush()
		t := time.NewTimer(w.drip)
		select {
		case <-t.C:
		case <-w.ctx.Done():
			t.Stop()
			return i + 1, w.ctx.Err()
		}
	}
	return len(p), nil
}

func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// wrap logs every request, applies rate limits (hub only) and faults.
func (h *Hub) wrap(server string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entry := &Request{
			Server:        server,
			Method:        r.Method,
			Path:          r.URL.Path,
			RawQuery:      r.URL.RawQuery,
			Host:          r.Host,
			Authorization: r.Header.Get("Authorization"),
			Range:         r.Header.Get("Range"),
		}
		rec := &recorder{ResponseWriter: w, h: h, entry: entry, cut: -1, ctx: r.Context()}
		h.mu.Lock()
		h.log = append(h.log, entry)
		h.mu.Unlock()
		defer func() {
			if rec.status == 0 && !rec.dropped {
				rec.setStatus(http.StatusOK) // a handler that wrote nothing answers 200
			}
		}()
		if server == "hub" && !h.rateLimit(rec, r) {
			return
		}
		if h.applyFault(rec, r) {
			return
		}
		next.ServeHTTP(rec, r)
	})
}

func (h *Hub) bearer(r *http.Request) string {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return tok
}

// hubError answers like the Hub: X-Error-Code (when code is set),
// X-Error-Message, and a JSON {"error": msg} body (API) or plain text
// (resolve).
func hubError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("X-Request-Id", "Root=1-fake-"+strconv.Itoa(status))
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeJSON(w, r, status, map[string]string{"error": msg})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		fmt.Fprint(w, msg)
	}
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(b)
	}
}

func (h *Hub) serveHub(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	rejected := h.rejected[h.bearer(r)]
	h.mu.Unlock()
	if rejected {
		hubError(w, r, http.StatusUnauthorized, "", "Invalid credentials in Authorization header")
		return
	}
	p := r.URL.Path
	switch {
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		hubError(w, r, http.StatusMethodNotAllowed, "", "Method not allowed")
	case p == "/api/models" || p == "/api/models/":
		h.serveList(w, r)
	case strings.HasPrefix(p, "/api/models/") && strings.Contains(p, "/tree/") && !strings.Contains(p, "/revision/"):
		h.serveTree(w, r)
	case strings.HasPrefix(p, "/api/models/"):
		h.serveInfo(w, r)
	case strings.Contains(r.URL.EscapedPath(), "/resolve/"):
		h.serveResolve(w, r)
	default:
		hubError(w, r, http.StatusNotFound, "", "Sorry, we can't find the page you are looking for.")
	}
}
