package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/internal/watch"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

const secret = "s3cret-s3cret-s3cret"

func TestSign(t *testing.T) {
	body := []byte(`{"text":"hello"}`)
	// Written out independently: HMAC-SHA256 with the standard library.
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	if got := Sign([]byte(secret), body); got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
	if !Verify([]byte(secret), body, want) || Verify([]byte("other"), body, want) || Verify([]byte(secret), []byte(`{}`), want) {
		t.Error("Verify accepts the wrong secret or body, or refuses the right one")
	}
}

func TestBackoff(t *testing.T) {
	first, most := 10*time.Second, 10*time.Minute
	for _, tc := range []struct {
		n    int
		want time.Duration // before the jitter (which takes up to a tenth)
	}{{1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second}, {7, 640 * time.Second}, {7, 10 * time.Minute}, {60, 10 * time.Minute}} {
		want := min(tc.want, most)
		for range 20 {
			got := backoff(tc.n, first, most)
			if got > want || got < want-want/10 {
				t.Errorf("backoff(%d) = %v, want %v less at most a tenth", tc.n, got, want)
			}
		}
	}
}

// receiver is a webhook endpoint for tests: it counts every change it
// accepted by the event's id, checks each signature, and can be down
// (connection refused), failing (503) or slow.
type receiver struct {
	t      *testing.T
	addr   string
	secret []byte

	mu       sync.Mutex
	ln       net.Listener
	srv      *http.Server
	got      map[int64]int // event id → deliveries accepted
	bad      []string
	tries    atomic.Int64
	failing  atomic.Bool
	hold     chan struct{} // when set, every request waits for it to close
	bodies   []Payload
	headers  []http.Header
	answered int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t, secret: []byte(secret), got: map[int64]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.serve(ln)
	t.Cleanup(r.down)
	return r
}

func (r *receiver) url() string { return "http://" + r.addr + "/hooks/T000/B000/secretpath" }

func (r *receiver) serve(ln net.Listener) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ln = ln
	r.srv = &http.Server{Handler: http.HandlerFunc(r.handle)}
	go r.srv.Serve(ln)
}

// down closes the listener: connections are refused.
func (r *receiver) down() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// up listens again on the same address.
func (r *receiver) up() {
	var ln net.Listener
	var err error
	for range 50 {
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

func (r *receiver) handle(w http.ResponseWriter, req *http.Request) {
	r.tries.Add(1)
	r.mu.Lock()
	hold := r.hold
	r.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if r.failing.Load() {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !Verify(r.secret, body, req.Header.Get(SignatureHeader)) {
		r.bad = append(r.bad, "bad signature: "+req.Header.Get(SignatureHeader))
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/json" || req.Method != http.MethodPost {
		r.bad = append(r.bad, req.Method+" "+ct)
	}
	var p Payload
	if err := json.Unmarshal(body, &p); err != nil || p.Text == "" || p.Event.ID == 0 {
		r.bad = append(r.bad, "payload: "+string(body))
	}
	r.got[p.Event.ID]++
	r.bodies = append(r.bodies, p)
	r.headers = append(r.headers, req.Header.Clone())
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) counts() map[int64]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int64]int{}
	for k, v := range r.got {
		out[k] = v
	}
	return out
}

// record writes results that change org/m's status on cpu and returns the
// events' ids.
func record(t *testing.T, db *store.SQLite, id string, at time.Time, statuses ...compat.Status) []int64 {
	t.Helper()
	ctx := context.Background()
	if err := db.UpsertModels(ctx, []store.ModelUpsert{{ID: id, SHA: "abc"}}); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i, st := range statuses {
		r := compat.Result{Target: compat.TargetCPU, Status: st, Revision: "abc", TestedAt: at.Add(time.Duration(i) * time.Second),
			Runtime: compat.Runtime{Torch: "t", Harness: "h"}}
		if st == compat.StatusFail {
			r.Signature = compat.Ptr("unsupported_op:aten::_fft_r2c")
		}
		out, err := db.RecordResult(ctx, id, r)
		if err != nil {
			t.Fatal(err)
		}
		if out.Event == nil {
			t.Fatalf("%s %s: no event", id, st)
		}
		ids = append(ids, out.Event.ID)
	}
	return ids
}

// running starts a sender until the returned stop is called (stop waits
// for Run to return and fails the test if it takes long).
func running(t *testing.T, cfg Config) (*Sender, func()) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Error("Run did not return after its context ended")
			}
		})
	}
	t.Cleanup(stop)
	return s, stop
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func fastConfig(db *store.SQLite, hooks []watch.Webhook, reg *metrics.Registry, log *slog.Logger) Config {
	return Config{Webhooks: hooks, Store: db, BaseURL: "https://compat.example.org", Metrics: reg, Logger: log, Version: "test",
		Poll: 20 * time.Millisecond, FirstBackoff: 20 * time.Millisecond, MaxBackoff: 80 * time.Millisecond, Timeout: 2 * time.Second,
		Known: func(sig string) *compat.KnownIssue {
			if strings.HasPrefix(sig, "unsupported_op:aten::_fft") {
				return &compat.KnownIssue{Title: "FFT", URL: "https://tracker.example/1", State: "open"}
			}
			return nil
		}}
}

// TestADownReceiverGetsEveryChangeOnceAcrossARestart: a receiver that
// refuses connections, then answers 503, then comes up, gets every change
// exactly once with a valid signature, including changes recorded while
// the sender was stopped and one restart in the middle.
func TestADownReceiverGetsEveryChangeOnceAcrossARestart(t *testing.T) {
	db := storetest.MustOpen(t)
	rcv := newReceiver(t)
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hooks := []watch.Webhook{{URL: rcv.url(), Secret: secret}}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	before := record(t, db, "org/before", t0, compat.StatusPass) // before any sender: not sent

	reg := metrics.NewRegistry()
	_, stop := running(t, fastConfig(db, hooks, reg, log))
	// The sender has started (its cursor is set) before the changes come.
	waitFor(t, "the cursor", 5*time.Second, func() bool { c, _ := db.StartWebhookCursor(context.Background()); return c == before[0] })

	rcv.down()
	first := record(t, db, "org/a", t0, compat.StatusPass, compat.StatusFail, compat.StatusPass)
	waitFor(t, "failed tries", 5*time.Second, func() bool { return strings.Count(logs.String(), "webhook delivery failed") >= 2 })
	stop() // a restart while the receiver is down

	second := record(t, db, "org/b", t0, compat.StatusFail) // while no sender runs
	rcv.failing.Store(true)
	rcv.up()
	reg2 := metrics.NewRegistry()
	_, stop2 := running(t, fastConfig(db, hooks, reg2, log))
	waitFor(t, "503 answers", 5*time.Second, func() bool { return rcv.tries.Load() >= 2 })
	rcv.failing.Store(false)
	third := record(t, db, "gpt2", t0, compat.StatusFail)

	want := append(append(append([]int64{}, first...), second...), third...)
	waitFor(t, "every change delivered", 10*time.Second, func() bool { return len(rcv.counts()) == len(want) })
	time.Sleep(200 * time.Millisecond) // room for a duplicate to show
	stop2()
	got := rcv.counts()
	for _, id := range want {
		if got[id] != 1 {
			t.Errorf("event %d delivered %d times, want once", id, got[id])
		}
	}
	if got[before[0]] != 0 {
		t.Errorf("the change from before the sender started was sent")
	}
	if len(got) != len(want) {
		t.Errorf("delivered %v, want exactly %v", got, want)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.bad) > 0 {
		t.Errorf("bad deliveries: %v", rcv.bad)
	}
	// The body: a plain text with the title and the link, the change, its known issue.
	var sawKnown bool
	for i, p := range rcv.bodies {
		if !strings.HasPrefix(p.Text, p.Title+"\nhttps://compat.example.org/models/") || p.Model != p.Event.ModelID ||
			p.ID != "https://compat.example.org/events/"+strconv.FormatInt(p.Event.ID, 10) {
			t.Errorf("payload %+v", p)
		}
		if p.Event.Signature != nil {
			sawKnown = true
			if p.KnownIssue == nil || p.KnownIssue.URL != "https://tracker.example/1" || !strings.Contains(p.Text, "Known issue: FFT (open) https://tracker.example/1") {
				t.Errorf("a known signature without its issue: %+v", p)
			}
		} else if p.KnownIssue != nil {
			t.Errorf("known issue on a change without a signature: %+v", p)
		}
		if h := rcv.headers[i].Get(DeliveryHeader); h == "" {
			t.Errorf("no %s header", DeliveryHeader)
		}
	}
	if !sawKnown {
		t.Error("no delivery had a signature")
	}
	if p := rcv.bodies[0]; p.Event.ModelID == "gpt2" && !strings.Contains(p.URL, "/models/gpt2#event-") {
		t.Errorf("url %s", p.URL)
	}
	// Metrics count the deliveries and the failures.
	var text bytes.Buffer
	if err := reg2.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"scanner_webhook_deliveries_total{webhook=\"" + rcv.addr + "\"} " + strconv.Itoa(len(want)), "scanner_webhook_failures_total{webhook=\"" + rcv.addr + "\"} "} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("metrics lack %q:\n%s", line, text.String())
		}
	}
	// The secret and the URL's path never reach the log.
	if strings.Contains(logs.String(), secret) || strings.Contains(logs.String(), "secretpath") {
		t.Errorf("the log shows the secret or the URL's path:\n%s", logs.String())
	}
}

// TestFiltersPickWhatEachWebhookGets: each webhook gets the changes its
// filters pass, and nothing else.
func TestFiltersPickWhatEachWebhookGets(t *testing.T) {
	db := storetest.MustOpen(t)
	only, all := newReceiver(t), newReceiver(t)
	hooks := []watch.Webhook{
		{Name: "only", URL: only.url(), Secret: secret, Filters: watch.Filter{Models: []string{"org/a"}, Kinds: []string{"regression"}}},
		{Name: "all", URL: all.url(), Secret: secret},
	}
	_, stop := running(t, fastConfig(db, hooks, nil, slog.New(slog.DiscardHandler)))
	waitFor(t, "the cursor", 5*time.Second, func() bool { _, err := db.PendingDeliveries(context.Background()); return err == nil })
	time.Sleep(100 * time.Millisecond)
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	a := record(t, db, "org/a", t0, compat.StatusPass, compat.StatusFail, compat.StatusPass) // new, regression, fix
	b := record(t, db, "org/b", t0, compat.StatusPass, compat.StatusFail)                    // new, regression
	waitFor(t, "all changes", 10*time.Second, func() bool { return len(all.counts()) == 5 })
	waitFor(t, "the one change", 10*time.Second, func() bool { return len(only.counts()) == 1 })
	time.Sleep(100 * time.Millisecond)
	stop()
	if got := only.counts(); len(got) != 1 || got[a[1]] != 1 {
		t.Errorf("the filtered webhook got %v, want only org/a's regression %d (b's: %v)", got, a[1], b)
	}
}

// TestAHangingReceiverDoesNotHoldUpTheRest: a receiver that never
// answers costs its own deliveries a timeout each, while another webhook
// gets its changes at once; shutdown waits at most the grace.
func TestAHangingReceiverDoesNotHoldUpTheRest(t *testing.T) {
	db := storetest.MustOpen(t)
	slow, fast := newReceiver(t), newReceiver(t)
	hold := make(chan struct{})
	slow.mu.Lock()
	slow.hold = hold
	slow.mu.Unlock()
	defer close(hold)
	hooks := []watch.Webhook{{Name: "slow", URL: slow.url(), Secret: secret}, {Name: "fast", URL: fast.url(), Secret: secret}}
	cfg := fastConfig(db, hooks, nil, slog.New(slog.DiscardHandler))
	cfg.Timeout, cfg.ShutdownGrace = 30*time.Second, 200*time.Millisecond
	_, stop := running(t, cfg)
	time.Sleep(100 * time.Millisecond)
	record(t, db, "org/a", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), compat.StatusPass, compat.StatusFail)
	waitFor(t, "the fast webhook", 5*time.Second, func() bool { return len(fast.counts()) == 2 })
	waitFor(t, "the slow webhook's first try", 5*time.Second, func() bool { return slow.tries.Load() == 1 })
	start := time.Now()
	stop()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("shutdown took %v with a POST hanging; want about the grace", d)
	}
	// The cut POST was not recorded as delivered: it stays pending for the next start.
	p, _ := db.PendingDeliveries(context.Background())
	if p[hooks[0].Key()] != 2 || p[hooks[1].Key()] != 0 {
		t.Errorf("pending %v", p)
	}
}

// TestDeliveriesExpireAfterADay: a delivery a day old is given up and counted.
func TestDeliveriesExpireAfterADay(t *testing.T) {
	db := storetest.MustOpen(t)
	rcv := newReceiver(t)
	rcv.down()
	var clock atomic.Int64
	clock.Store(time.Now().Add(time.Hour).UnixNano()) // ahead of the store's clock: what it queues is due
	reg := metrics.NewRegistry()
	cfg := fastConfig(db, []watch.Webhook{{Name: "dead", URL: rcv.url(), Secret: secret}}, reg, slog.New(slog.DiscardHandler))
	cfg.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	_, stop := running(t, cfg)
	time.Sleep(100 * time.Millisecond)
	record(t, db, "org/a", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), compat.StatusPass)
	waitFor(t, "a failed try", 5*time.Second, func() bool { return rcv.tries.Load() == 0 && counter(reg, "scanner_webhook_failures_total") >= 1 })
	clock.Add(int64(25 * time.Hour)) // the sweep runs at most once a minute of this clock
	waitFor(t, "the expiry", 5*time.Second, func() bool { return counter(reg, "scanner_webhook_expired_total") == 1 })
	stop()
	if p, _ := db.PendingDeliveries(context.Background()); len(p) != 0 {
		t.Errorf("pending after expiry: %v", p)
	}
}

// lockedBuffer is a log destination that goroutines may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func counter(reg *metrics.Registry, name string) int {
	var b bytes.Buffer
	_ = reg.WriteText(&b)
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, name+"{") {
			f := strings.Fields(line)
			n, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return int(n)
		}
	}
	return -1
}

// TestSendRefusesRedirectsAndReadsLittle: a 3xx is no delivery, and a
// huge answer is not read whole.
func TestSendRefusesRedirectsAndReadsLittle(t *testing.T) {
	var huge atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		for range 1000 { // 32 MiB unless the reader stops
			n, err := w.Write(chunk)
			huge.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	s, err := New(Config{Store: storetest.MustOpen(t), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d := store.Delivery{ID: 1, Body: []byte(`{}`)}
	if err := s.send(context.Background(), watch.Webhook{URL: base + "/redirect", Secret: secret}, d); err == nil || !strings.Contains(err.Error(), "307") {
		t.Errorf("a redirect: %v, want a failure naming 307", err)
	}
	if err := s.send(context.Background(), watch.Webhook{URL: base + "/ok", Secret: secret}, d); err != nil {
		t.Errorf("ok: %v", err)
	}
	if err := s.send(context.Background(), watch.Webhook{URL: base + "/huge", Secret: secret}, d); err != nil {
		t.Errorf("a huge 200: %v", err)
	}
	if n := huge.Load(); n > 8<<20 {
		t.Errorf("the server wrote %d bytes before the reader stopped", n)
	}
	if _, err := New(Config{Store: storetest.MustOpen(t), Webhooks: []watch.Webhook{{URL: "file:///etc/passwd", Secret: secret}}}); err == nil {
		t.Error("New accepted a file: URL")
	}
	if _, err := New(Config{Store: storetest.MustOpen(t), Webhooks: []watch.Webhook{{URL: "ftp://hooks.example/h", Secret: secret}}}); err == nil {
		t.Error("New accepted an ftp: URL")
	}
	for _, u := range []string{"http://hooks.example/h", "https://hooks.example/h"} {
		if _, err := New(Config{Store: storetest.MustOpen(t), Webhooks: []watch.Webhook{{URL: u, Secret: secret}}}); err != nil {
			t.Errorf("New refused %s: %v", u, err)
		}
	}
	// A request error names no URL.
	err = s.send(context.Background(), watch.Webhook{URL: "http://127.0.0.1:1/hooks/secretpath", Secret: secret}, d)
	if err == nil || strings.Contains(err.Error(), "secretpath") {
		t.Errorf("error %v", err)
	}
}

// oldErrorEvents is a store whose events include ones from before the
// store stopped writing changes that involve the scanner's own error.
type oldErrorEvents struct {
	Store
	evs    []compat.Event
	queued []store.NewDelivery
}

func (o *oldErrorEvents) EventsAfter(_ context.Context, after int64, _ int) ([]compat.Event, error) {
	var out []compat.Event
	for _, e := range o.evs {
		if e.ID > after {
			out = append(out, e)
		}
	}
	return out, nil
}

func (o *oldErrorEvents) QueueDeliveries(_ context.Context, _ int64, ds []store.NewDelivery) error {
	o.queued = append(o.queued, ds...)
	return nil
}

func (o *oldErrorEvents) PendingDeliveries(context.Context) (map[string]int, error) { return nil, nil }

// TestErrorEventsAreNoNews: an event into or out of the scanner's own error
// is never delivered (the feed leaves them out too), a verdict change is.
func TestErrorEventsAreNoNews(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	fake := &oldErrorEvents{evs: []compat.Event{
		{ID: 1, ModelID: "org/a", Target: compat.TargetCPU, Kind: compat.EventRegression, FromStatus: compat.StatusPass, ToStatus: compat.StatusError, At: t0},
		{ID: 2, ModelID: "org/a", Target: compat.TargetCPU, Kind: compat.EventFix, FromStatus: compat.StatusError, ToStatus: compat.StatusPass, At: t0},
		{ID: 3, ModelID: "org/b", Target: compat.TargetCPU, Kind: compat.EventRegression, FromStatus: compat.StatusPass, ToStatus: compat.StatusFail, At: t0},
	}}
	s, err := New(Config{Store: fake, Webhooks: []watch.Webhook{{Name: "all", URL: "http://127.0.0.1:1/hook", Secret: secret}},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var cursor int64
	if _, err := s.queueBatch(context.Background(), &cursor); err != nil {
		t.Fatal(err)
	}
	if cursor != 3 {
		t.Errorf("cursor %d, want 3: every event is read past", cursor)
	}
	if len(fake.queued) != 1 || fake.queued[0].EventID != 3 {
		t.Errorf("queued %+v, want only event 3 (pass -> fail)", fake.queued)
	}
}
