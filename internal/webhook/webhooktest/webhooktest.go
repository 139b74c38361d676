// Package webhooktest is a webhook endpoint for tests: it checks every
// delivery as a receiver would (both signatures, computed here with the
// standard library and not by the sender's code; the method, the content
// type and the payload), counts the changes it accepted by their event id,
// and can be down (connection refused), failing (503) or hanging. It
// imports nothing of the scanner, so that the webhook package's own tests
// can use it.
package webhooktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The headers a delivery carries, spelled as the receiver's documentation
// (docs/watching.md) spells them.
const (
	signatureHeader = "X-Scanner-Signature"
	deliveryHeader  = "X-Scanner-Delivery"
	idHeader        = "Webhook-Id"
	timestampHeader = "Webhook-Timestamp"
	standardHeader  = "Webhook-Signature"
)

// Delivery is one accepted delivery: its body and headers.
type Delivery struct {
	Body   []byte
	Header http.Header
}

// Receiver is a webhook endpoint on 127.0.0.1, closed when the test ends.
type Receiver struct {
	// URLPrefix, when set, is what every payload's "url" must start with.
	URLPrefix string

	t      testing.TB
	addr   string
	secret []byte

	mu        sync.Mutex
	srv       *http.Server
	got       map[int64]int // event id → deliveries accepted
	bad       []string
	delivered []Delivery
	tries     atomic.Int64
	failing   atomic.Bool
	hanging   chan struct{} // when set, requests wait for it to close (or the client to go), then get 503
}

// New starts a receiver whose deliveries must be signed with secret.
func New(t testing.TB, secret string) *Receiver {
	t.Helper()
	r := &Receiver{t: t, secret: []byte(secret), got: map[int64]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.serve(ln)
	t.Cleanup(func() { r.Release(); r.Down() })
	return r
}

// Addr is the receiver's host:port.
func (r *Receiver) Addr() string { return r.addr }

// URL is a webhook URL on the receiver, with a secret-looking path (which
// logs and metrics must not show).
func (r *Receiver) URL() string { return "http://" + r.addr + "/hooks/T000/B000/secretpath" }

func (r *Receiver) serve(ln net.Listener) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.srv = &http.Server{Handler: http.HandlerFunc(r.handle)}
	go r.srv.Serve(ln) //nolint:errcheck // ends with Down
}

// Down closes the listener and every connection: deliveries are refused.
func (r *Receiver) Down() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// Up listens again on the same address.
func (r *Receiver) Up() {
	var ln net.Listener
	var err error
	for range 100 {
		if ln, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		r.t.Fatalf("listen again on %s: %v", r.addr, err)
	}
	r.serve(ln)
}

// Fail makes every delivery answered 503 (on) or checked and accepted (off).
func (r *Receiver) Fail(on bool) { r.failing.Store(on) }

// Hang holds every delivery from now until Release (or until its client
// gives up); a held delivery then gets 503 and is not accepted.
func (r *Receiver) Hang() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hanging == nil {
		r.hanging = make(chan struct{})
	}
}

// Release lets the held deliveries go, and the next ones through.
func (r *Receiver) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hanging != nil {
		close(r.hanging)
		r.hanging = nil
	}
}

// Tries counts the requests that reached the receiver, answered or not.
func (r *Receiver) Tries() int64 { return r.tries.Load() }

// Counts are the accepted deliveries by event id.
func (r *Receiver) Counts() map[int64]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[int64]int, len(r.got))
	for k, v := range r.got {
		out[k] = v
	}
	return out
}

// Bad lists what was wrong with the deliveries: a signature that does not
// verify, a wrong method or content type, a payload without text or event.
func (r *Receiver) Bad() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}

// Deliveries are the accepted deliveries, in the order they came.
func (r *Receiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.delivered...)
}

func (r *Receiver) handle(w http.ResponseWriter, req *http.Request) {
	r.tries.Add(1)
	r.mu.Lock()
	hanging := r.hanging
	r.mu.Unlock()
	if hanging != nil {
		select {
		case <-hanging:
		case <-req.Context().Done():
		}
		http.Error(w, "gave up", http.StatusServiceUnavailable)
		return
	}
	if r.failing.Load() {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bad = append(r.bad, r.check(req, body)...)
	var p struct {
		Text  string `json:"text"`
		URL   string `json:"url"`
		Event struct {
			ID int64 `json:"id"`
		} `json:"event"`
	}
	if err := json.Unmarshal(body, &p); err != nil || p.Text == "" || p.Event.ID == 0 || !strings.HasPrefix(p.URL, r.URLPrefix) {
		r.bad = append(r.bad, "payload: "+string(body))
	}
	w.WriteHeader(http.StatusNoContent)
	if req.Context().Err() == nil { // a client still there to hear it
		r.got[p.Event.ID]++
		r.delivered = append(r.delivered, Delivery{Body: body, Header: req.Header.Clone()})
	}
}

// check says what is wrong with a delivery's request.
func (r *Receiver) check(req *http.Request, body []byte) []string {
	var bad []string
	if !SignedBy(r.secret, body, req.Header.Get(signatureHeader)) {
		bad = append(bad, "bad signature: "+req.Header.Get(signatureHeader))
	}
	if !StandardSignedBy(r.secret, body, req.Header) {
		bad = append(bad, "bad Standard Webhooks signature: "+req.Header.Get(standardHeader))
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/json" || req.Method != http.MethodPost {
		bad = append(bad, req.Method+" "+ct)
	}
	return bad
}

// SignedBy reports whether header is body's HMAC-SHA256 signature with
// secret ("sha256=<hex>"), computed here as a receiver would.
func SignedBy(secret, body []byte, header string) bool {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hmac.Equal([]byte(header), []byte("sha256="+hex.EncodeToString(m.Sum(nil))))
}

// StandardSignedBy reports whether h carries body's Standard Webhooks
// signature with key, computed here as a receiver would: base64
// HMAC-SHA256 of "id.timestamp.body", a timestamp within 5 minutes of now,
// and the id the same as X-Scanner-Delivery.
func StandardSignedBy(key, body []byte, h http.Header) bool {
	id, ts := h.Get(idHeader), h.Get(timestampHeader)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id == "" || id != h.Get(deliveryHeader) || strings.Contains(id, ".") ||
		time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "." + string(body)))
	return hmac.Equal([]byte(h.Get(standardHeader)), []byte("v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil))))
}
