package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/internal/watch"
	"github.com/google-pytorch/torchtpu-scanner/internal/webhook/webhooktest"
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
	if Sign([]byte("other"), body) == want || Sign([]byte(secret), []byte(`{}`)) == want {
		t.Error("another secret or body signs the same")
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
	// Under 10 ns a tenth is less than a nanosecond: no jitter (and no panic).
	for d := time.Duration(1); d < 40; d++ {
		if got := backoff(1, d, time.Minute); got > d || got < d-d/10 {
			t.Errorf("backoff(1) from %v = %v, want %v less at most a tenth", d, got, d)
		}
	}
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

func fastConfig(db Store, hooks []watch.Webhook, reg *metrics.Registry, log *slog.Logger) Config {
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
	rcv := webhooktest.New(t, secret)
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hooks := []watch.Webhook{{URL: rcv.URL(), Secret: secret}}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	before := record(t, db, "org/before", t0, compat.StatusPass) // before any sender: not sent

	reg := metrics.NewRegistry()
	_, stop := running(t, fastConfig(db, hooks, reg, log))
	// The sender has started (its cursor is set) before the changes come.
	testenv.Eventually(t, "the cursor", 5*time.Second, func() bool { c, _ := db.StartWebhookCursor(context.Background()); return c == before[0] })

	rcv.Down()
	first := record(t, db, "org/a", t0, compat.StatusPass, compat.StatusFail, compat.StatusPass)
	testenv.Eventually(t, "failed tries", 5*time.Second, func() bool { return strings.Count(logs.String(), "webhook delivery failed") >= 2 })
	// The three changes wait for the receiver, and the gauge says so.
	testenv.Eventually(t, "3 pending", 5*time.Second, func() bool { return metricValue(reg, "scanner_webhook_pending", "#1") == 3 })
	stop() // a restart while the receiver is down

	second := record(t, db, "org/b", t0, compat.StatusFail) // while no sender runs
	rcv.Fail(true)
	rcv.Up()
	reg2 := metrics.NewRegistry()
	_, stop2 := running(t, fastConfig(db, hooks, reg2, log))
	testenv.Eventually(t, "503 answers", 5*time.Second, func() bool { return rcv.Tries() >= 2 })
	rcv.Fail(false)
	third := record(t, db, "gpt2", t0, compat.StatusFail)

	want := append(append(append([]int64{}, first...), second...), third...)
	testenv.Eventually(t, "every change delivered", 10*time.Second, func() bool { return len(rcv.Counts()) == len(want) })
	time.Sleep(200 * time.Millisecond) // room for a duplicate to show
	stop2()
	got := rcv.Counts()
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
	if bad := rcv.Bad(); len(bad) > 0 {
		t.Errorf("bad deliveries: %v", bad)
	}
	// The body: a plain text with the title and the link, the change, its known issue.
	var sawKnown bool
	deliveries := rcv.Deliveries()
	bodies := make([]Payload, len(deliveries))
	for i, d := range deliveries {
		if err := json.Unmarshal(d.Body, &bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range bodies {
		// The change's id: its event's UID (the database's epoch and the
		// event's number), the delivery's id too.
		if !strings.HasPrefix(p.Text, p.Title+"\nhttps://compat.example.org/models/") || p.Model != p.Event.ModelID ||
			!strings.HasSuffix(p.ID, "-"+strconv.FormatInt(p.Event.ID, 10)) ||
			p.ID != "https://compat.example.org/events/"+deliveries[i].Header.Get(IDHeader) {
			t.Errorf("payload %+v (webhook-id %s)", p, deliveries[i].Header.Get(IDHeader))
		}
		if p.Event.Signature != nil {
			sawKnown = true
			if p.KnownIssue == nil || p.KnownIssue.URL != "https://tracker.example/1" || !strings.Contains(p.Text, "Known issue: FFT (open) https://tracker.example/1") {
				t.Errorf("a known signature without its issue: %+v", p)
			}
		} else if p.KnownIssue != nil {
			t.Errorf("known issue on a change without a signature: %+v", p)
		}
		if h := deliveries[i].Header.Get(DeliveryHeader); h == "" {
			t.Errorf("no %s header", DeliveryHeader)
		}
	}
	if !sawKnown {
		t.Error("no delivery had a signature")
	}
	if p := bodies[0]; p.Event.ModelID == "gpt2" && !strings.Contains(p.URL, "/models/gpt2#event-") {
		t.Errorf("url %s", p.URL)
	}
	// Metrics count the deliveries and the failures.
	var text bytes.Buffer
	if err := reg2.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"scanner_webhook_deliveries_total{webhook=\"#1\"} " + strconv.Itoa(len(want)), "scanner_webhook_failures_total{webhook=\"#1\"} "} {
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
	only, all := webhooktest.New(t, secret), webhooktest.New(t, secret)
	hooks := []watch.Webhook{
		{Name: "only", URL: only.URL(), Secret: secret, Filters: watch.Filter{Models: []string{"org/a"}, Kinds: []string{"regression"}}},
		{Name: "all", URL: all.URL(), Secret: secret},
	}
	_, stop := running(t, fastConfig(db, hooks, nil, slog.New(slog.DiscardHandler)))
	testenv.Eventually(t, "the cursor", 5*time.Second, func() bool { _, err := db.PendingDeliveries(context.Background()); return err == nil })
	time.Sleep(100 * time.Millisecond)
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	a := record(t, db, "org/a", t0, compat.StatusPass, compat.StatusFail, compat.StatusPass) // new, regression, fix
	b := record(t, db, "org/b", t0, compat.StatusPass, compat.StatusFail)                    // new, regression
	testenv.Eventually(t, "all changes", 10*time.Second, func() bool { return len(all.Counts()) == 5 })
	testenv.Eventually(t, "the one change", 10*time.Second, func() bool { return len(only.Counts()) == 1 })
	time.Sleep(100 * time.Millisecond)
	stop()
	if got := only.Counts(); len(got) != 1 || got[a[1]] != 1 {
		t.Errorf("the filtered webhook got %v, want only org/a's regression %d (b's: %v)", got, a[1], b)
	}
}

// TestAHangingReceiverDoesNotHoldUpTheRest: a receiver that never
// answers costs its own deliveries a timeout each, while another webhook
// gets its changes at once; shutdown waits at most the grace.
func TestAHangingReceiverDoesNotHoldUpTheRest(t *testing.T) {
	db := storetest.MustOpen(t)
	slow, fast := webhooktest.New(t, secret), webhooktest.New(t, secret)
	slow.Hang()
	hooks := []watch.Webhook{{Name: "slow", URL: slow.URL(), Secret: secret}, {Name: "fast", URL: fast.URL(), Secret: secret}}
	cfg := fastConfig(db, hooks, nil, slog.New(slog.DiscardHandler))
	cfg.Timeout, cfg.ShutdownGrace = 30*time.Second, 200*time.Millisecond
	_, stop := running(t, cfg)
	time.Sleep(100 * time.Millisecond)
	record(t, db, "org/a", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), compat.StatusPass, compat.StatusFail)
	testenv.Eventually(t, "the fast webhook", 5*time.Second, func() bool { return len(fast.Counts()) == 2 })
	testenv.Eventually(t, "the slow webhook's first try", 5*time.Second, func() bool { return slow.Tries() == 1 })
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

// TestDeliveriesExpireAfterADay: a delivery a day old is given up and
// counted, for its webhook only: another that took its changes is not
// named.
func TestDeliveriesExpireAfterADay(t *testing.T) {
	db := storetest.MustOpen(t)
	rcv, live := webhooktest.New(t, secret), webhooktest.New(t, secret)
	rcv.Down()
	var clock atomic.Int64
	clock.Store(time.Now().Add(time.Hour).UnixNano()) // ahead of the store's clock: what it queues is due
	reg := metrics.NewRegistry()
	logs, log := newJSONLog()
	hooks := []watch.Webhook{{Name: "dead", URL: rcv.URL(), Secret: secret}, {Name: "live", URL: live.URL(), Secret: secret}}
	cfg := fastConfig(db, hooks, reg, log)
	cfg.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	_, stop := running(t, cfg)
	time.Sleep(100 * time.Millisecond)
	record(t, db, "org/a", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), compat.StatusPass)
	testenv.Eventually(t, "a failed try", 5*time.Second, func() bool {
		return rcv.Tries() == 0 && metricValue(reg, "scanner_webhook_failures_total", "dead") >= 1
	})
	testenv.Eventually(t, "the live webhook's delivery", 5*time.Second, func() bool { return len(live.Counts()) == 1 })
	clock.Add(int64(25 * time.Hour)) // the sweep runs at most once a minute of this clock
	testenv.Eventually(t, "the expiry", 5*time.Second, func() bool { return metricValue(reg, "scanner_webhook_expired_total", "dead") == 1 })
	stop()
	if p, _ := db.PendingDeliveries(context.Background()); len(p) != 0 {
		t.Errorf("pending after expiry: %v", p)
	}
	if n := metricValue(reg, "scanner_webhook_expired_total", "live"); n != 0 {
		t.Errorf("the live webhook has %v deliveries given up, want 0", n)
	}
	given := logs.records("webhook deliveries given up after a day without success")
	if len(given) != 1 || given[0]["webhook"] != "dead" || given[0]["deliveries"] != 1.0 {
		t.Errorf("warnings of deliveries given up: %v, want one naming dead's 1", given)
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

// metricValue is the value of metric name for the webhook labelled label,
// -1 when it has none.
func metricValue(reg *metrics.Registry, name, label string) float64 {
	var b bytes.Buffer
	_ = reg.WriteText(&b)
	prefix := name + "{webhook=\"" + label + "\"} "
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return n
			}
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

// hookedStore is the real store with faults and a record of calls: a
// method named in fail returns that error instead of doing its work;
// every call is counted, ExpireDeliveries' arguments kept; notDueOnce,
// when set, is run by the first DueDeliveries, which then answers that
// nothing is due. Set fail and notDueOnce before the sender runs.
type hookedStore struct {
	*store.SQLite
	fail       map[string]error
	notDueOnce func()

	mu      sync.Mutex
	calls   map[string]int
	expires [][2]time.Time // before, forget
}

func newHookedStore(t *testing.T) *hookedStore {
	return &hookedStore{SQLite: storetest.MustOpen(t), fail: map[string]error{}, calls: map[string]int{}}
}

// call counts a call of method and returns the fault set for it.
func (h *hookedStore) call(method string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[method]++
	return h.fail[method]
}

func (h *hookedStore) count(method string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[method]
}

func (h *hookedStore) EventsAfter(ctx context.Context, after int64, limit int) ([]compat.Event, error) {
	if err := h.call("EventsAfter"); err != nil {
		return nil, err
	}
	return h.SQLite.EventsAfter(ctx, after, limit)
}

func (h *hookedStore) DueDeliveries(ctx context.Context, endpoint string, now time.Time, limit int) ([]store.Delivery, error) {
	if err := h.call("DueDeliveries"); err != nil {
		return nil, err
	}
	if h.count("DueDeliveries") == 1 && h.notDueOnce != nil {
		h.notDueOnce()
		return nil, nil
	}
	return h.SQLite.DueDeliveries(ctx, endpoint, now, limit)
}

func (h *hookedStore) NextDelivery(ctx context.Context, endpoint string) (time.Time, bool, error) {
	if err := h.call("NextDelivery"); err != nil {
		return time.Time{}, false, err
	}
	return h.SQLite.NextDelivery(ctx, endpoint)
}

func (h *hookedStore) DeliveryDone(ctx context.Context, id int64, at time.Time) error {
	if err := h.call("DeliveryDone"); err != nil {
		return err
	}
	return h.SQLite.DeliveryDone(ctx, id, at)
}

func (h *hookedStore) DeliveryFailed(ctx context.Context, id int64, next time.Time, why string) error {
	if err := h.call("DeliveryFailed"); err != nil {
		return err
	}
	return h.SQLite.DeliveryFailed(ctx, id, next, why)
}

func (h *hookedStore) ExpireDeliveries(ctx context.Context, before, forget time.Time) (map[string]int, error) {
	if err := h.call("ExpireDeliveries"); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.expires = append(h.expires, [2]time.Time{before, forget})
	h.mu.Unlock()
	return h.SQLite.ExpireDeliveries(ctx, before, forget)
}

// jsonLog is a log that tests read back record by record.
type jsonLog struct{ lockedBuffer }

func newJSONLog() (*jsonLog, *slog.Logger) {
	l := &jsonLog{}
	return l, slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// records are the log's records with message msg, oldest first.
func (l *jsonLog) records(msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(l.String(), "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) == nil && r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// queueOne stores a pending delivery of event eventID to hook, as an
// earlier run of the sender would have, and returns its id.
func queueOne(t *testing.T, db *store.SQLite, hook watch.Webhook, eventID int64) int64 {
	t.Helper()
	ctx := context.Background()
	body, err := json.Marshal(NewPayload("https://compat.example.org", compat.Event{ID: eventID, ModelID: "org/a", Target: compat.TargetCPU,
		Kind: compat.EventRegression, FromStatus: compat.StatusPass, ToStatus: compat.StatusFail, At: time.Now()}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.QueueDeliveries(ctx, 0, []store.NewDelivery{{Endpoint: hook.Key(), EventID: eventID, Body: body}}); err != nil {
		t.Fatal(err)
	}
	ds, err := db.DueDeliveries(ctx, hook.Key(), time.Now().Add(time.Hour), 10)
	for _, d := range ds {
		if d.EventID == eventID {
			return d.ID
		}
	}
	t.Fatalf("the queued delivery is not there: %v %v", ds, err)
	return 0
}

// TestStoreFailuresAreLogged: a store that fails to give the new events,
// or to record a try, is named in the log with its error (and the
// webhook, for a try), while the sender runs on.
func TestStoreFailuresAreLogged(t *testing.T) {
	for _, tc := range []struct {
		method string
		down   bool // the receiver refuses connections
		msg    string
	}{
		{"EventsAfter", false, "webhooks: queueing deliveries"},
		{"DeliveryFailed", true, "webhooks: recording a failed delivery"},
		{"DeliveryDone", false, "webhooks: recording a delivery"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			db := newHookedStore(t)
			db.fail[tc.method] = errors.New("disk I/O error")
			rcv := webhooktest.New(t, secret)
			if tc.down {
				rcv.Down()
			}
			hook := watch.Webhook{Name: "ops", URL: rcv.URL(), Secret: secret}
			queueOne(t, db.SQLite, hook, 1)
			logs, log := newJSONLog()
			_, stop := running(t, fastConfig(db, []watch.Webhook{hook}, nil, log))
			testenv.Eventually(t, tc.msg, 5*time.Second, func() bool { return len(logs.records(tc.msg)) > 0 })
			stop()
			r := logs.records(tc.msg)[0]
			if r["level"] != "ERROR" || !strings.Contains(r["err"].(string), "disk I/O error") {
				t.Errorf("logged %v, want an error with the store's", r)
			}
			if tc.method != "EventsAfter" && r["webhook"] != "ops" {
				t.Errorf("logged %v, want the webhook named", r)
			}
		})
	}
	// A store that works logs no error.
	db := storetest.MustOpen(t)
	rcv := webhooktest.New(t, secret)
	hook := watch.Webhook{Name: "ops", URL: rcv.URL(), Secret: secret}
	queueOne(t, db, hook, 1)
	logs, log := newJSONLog()
	_, stop := running(t, fastConfig(db, []watch.Webhook{hook}, nil, log))
	testenv.Eventually(t, "the delivery", 5*time.Second, func() bool { return len(rcv.Counts()) == 1 })
	time.Sleep(50 * time.Millisecond) // a few polls
	stop()
	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Errorf("errors logged with a store that works:\n%s", logs.String())
	}
}

// TestRetriesBackOffAndCountTheirAttempts: each failed try of a delivery
// is logged with its attempt's number and the wait before the next, which
// doubles from FirstBackoff up to MaxBackoff.
func TestRetriesBackOffAndCountTheirAttempts(t *testing.T) {
	db := storetest.MustOpen(t)
	rcv := webhooktest.New(t, secret)
	rcv.Down()
	hook := watch.Webhook{Name: "dead", URL: rcv.URL(), Secret: secret}
	queueOne(t, db, hook, 7)
	logs, log := newJSONLog()
	cfg := fastConfig(db, []watch.Webhook{hook}, nil, log)
	cfg.Poll, cfg.FirstBackoff, cfg.MaxBackoff = time.Hour, 10*time.Millisecond, 40*time.Millisecond
	_, stop := running(t, cfg)
	const msg = "webhook delivery failed; trying again later"
	testenv.Eventually(t, "five failed tries", 10*time.Second, func() bool { return len(logs.records(msg)) >= 5 })
	stop()
	// Written out: 10 ms, doubled after each failure in a row, at most 40 ms;
	// each less up to a tenth at random.
	ms := time.Millisecond
	for i, want := range []time.Duration{10 * ms, 20 * ms, 40 * ms, 40 * ms, 40 * ms} {
		r := logs.records(msg)[i]
		wait, err := time.ParseDuration(r["retry_in"].(string))
		if err != nil || wait > want || wait < want-want/10 {
			t.Errorf("try %d: retry_in %v, want %v less at most a tenth", i+1, r["retry_in"], want)
		}
		if r["attempts"] != float64(i+1) || r["event_id"] != 7.0 || r["webhook"] != "dead" {
			t.Errorf("try %d logged %v, want attempts %d of event 7 to dead", i+1, r, i+1)
		}
	}
}

// TestTheSweepRunsOnceAMinute: a sweep at start, then once a minute of the
// sender's clock (not at every look for new events), gives up deliveries
// older than the expiry and forgets finished ones a week old.
func TestTheSweepRunsOnceAMinute(t *testing.T) {
	db := newHookedStore(t)
	rcv := webhooktest.New(t, secret)
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	cfg := fastConfig(db, []watch.Webhook{{URL: rcv.URL(), Secret: secret}}, nil, slog.New(slog.DiscardHandler))
	cfg.Poll, cfg.Expiry = 2*time.Millisecond, 3*time.Hour
	cfg.Now = func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	_, stop := running(t, cfg)
	testenv.Eventually(t, "the first sweep", 5*time.Second, func() bool { return db.count("ExpireDeliveries") == 1 })
	for _, step := range []struct {
		at     time.Duration
		sweeps int
	}{{0, 1}, {59 * time.Second, 1}, {time.Minute, 2}, {time.Minute + 59*time.Second, 2}, {2 * time.Minute, 3}} {
		clock.Store(t0.Add(step.at).UnixNano())
		// Two more looks for events: the second starts after the first's
		// sweep (if any), and the first after the clock was set.
		n := db.count("EventsAfter")
		testenv.Eventually(t, "two looks for events", 5*time.Second, func() bool { return db.count("EventsAfter") >= n+2 })
		if got := db.count("ExpireDeliveries"); got != step.sweeps {
			t.Fatalf("at start + %v: %d sweeps, want %d", step.at, got, step.sweeps)
		}
	}
	stop()
	week := 7 * 24 * time.Hour
	want := [][2]time.Time{{t0.Add(-3 * time.Hour), t0.Add(-week)},
		{t0.Add(time.Minute - 3*time.Hour), t0.Add(time.Minute - week)},
		{t0.Add(2*time.Minute - 3*time.Hour), t0.Add(2*time.Minute - week)}}
	db.mu.Lock()
	defer db.mu.Unlock()
	if len(db.expires) != len(want) {
		t.Fatalf("sweeps %v, want %v", db.expires, want)
	}
	for i, w := range want {
		if got := db.expires[i]; !got[0].Equal(w[0]) || !got[1].Equal(w[1]) {
			t.Errorf("sweep %d gave up before %v and forgot before %v, want %v and %v", i+1, got[0], got[1], w[0], w[1])
		}
	}
}

// TestMoreThanABatchOfChangesIsQueuedAtOnce: a look for events that finds a
// whole batch reads on at once, not a poll later.
func TestMoreThanABatchOfChangesIsQueuedAtOnce(t *testing.T) {
	db := storetest.MustOpen(t)
	rcv := webhooktest.New(t, secret)
	if _, err := db.StartWebhookCursor(context.Background()); err != nil { // webhooks hear of changes from here on
		t.Fatal(err)
	}
	statuses := make([]compat.Status, 101)
	for i := range statuses {
		statuses[i] = []compat.Status{compat.StatusPass, compat.StatusFail}[i%2]
	}
	ids := record(t, db, "org/a", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), statuses...)
	cfg := fastConfig(db, []watch.Webhook{{URL: rcv.URL(), Secret: secret}}, nil, slog.New(slog.DiscardHandler))
	cfg.Poll = time.Hour
	_, stop := running(t, cfg)
	testenv.Eventually(t, "101 changes", 20*time.Second, func() bool { return len(rcv.Counts()) == len(ids) })
	stop()
	got := rcv.Counts()
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("event %d delivered %d times, want once", id, got[id])
		}
	}
}

// TestAnEndpointSleepsUntilItsNextDelivery: an endpoint whose delivery is
// due later waits until then, not a whole poll; an endpoint with nothing
// due looks once and sleeps, not again and again.
func TestAnEndpointSleepsUntilItsNextDelivery(t *testing.T) {
	db := newHookedStore(t)
	rcv := webhooktest.New(t, secret)
	hook := watch.Webhook{URL: rcv.URL(), Secret: secret}
	id := queueOne(t, db.SQLite, hook, 1)
	// When the sender first looks, its delivery's next try is 50 ms away (an
	// earlier run's try failed).
	db.notDueOnce = func() {
		if err := db.SQLite.DeliveryFailed(context.Background(), id, time.Now().Add(50*time.Millisecond), "answered 503"); err != nil {
			t.Error(err)
		}
	}
	cfg := fastConfig(db, []watch.Webhook{hook}, nil, slog.New(slog.DiscardHandler))
	cfg.Poll = time.Hour
	_, stop := running(t, cfg)
	testenv.Eventually(t, "the delivery", 5*time.Second, func() bool { return len(rcv.Counts()) == 1 })
	testenv.Eventually(t, "the endpoint asleep again", 5*time.Second, func() bool { return db.count("NextDelivery") >= 2 })
	if n := db.count("DueDeliveries"); n != 2 {
		t.Errorf("looked for due deliveries %d times, want 2 (before the delivery was due, and when it was)", n)
	}
	stop()
}

// TestOnlyA2xxAnswerIsADelivery: 200 to 299 deliver; anything else is a
// failure that names the status.
func TestOnlyA2xxAnswerIsADelivery(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.WriteHeader(code)
	}))
	defer srv.Close()
	s, err := New(Config{Store: storetest.MustOpen(t), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		code int
		ok   bool
	}{{200, true}, {202, true}, {204, true}, {299, true}, {300, false}, {304, false}, {404, false}, {500, false}, {503, false}} {
		code := strconv.Itoa(tc.code)
		err := s.send(context.Background(), watch.Webhook{URL: srv.URL + "/" + code, Secret: secret}, store.Delivery{ID: 1, Body: []byte(`{}`)})
		if tc.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), code)) {
			t.Errorf("an answer %d: %v, want delivered %v", tc.code, err, tc.ok)
		}
	}
}

// TestUnnamedWebhooksOnOneHostHaveASeriesEach: two unnamed webhooks on one
// host, one dead (503) and one live, each have their own series (the dead
// one's pending is not hidden behind the live one's 0), labelled by their
// place in the list: no part of a URL reaches /metrics, a public page.
func TestUnnamedWebhooksOnOneHostHaveASeriesEach(t *testing.T) {
	db := storetest.MustOpen(t)
	var live atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/dead-fn-token" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		live.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	hooks := []watch.Webhook{{URL: srv.URL + "/dead-fn-token", Secret: secret}, {URL: srv.URL + "/live-fn-token", Secret: secret}}
	reg := metrics.NewRegistry()
	cfg := fastConfig(db, hooks, reg, slog.New(slog.DiscardHandler))
	cfg.FirstBackoff, cfg.MaxBackoff = time.Hour, time.Hour
	_, stop := running(t, cfg)
	testenv.Eventually(t, "the cursor", 5*time.Second, func() bool { _, err := db.PendingDeliveries(context.Background()); return err == nil })
	time.Sleep(100 * time.Millisecond)
	record(t, db, "org/a", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), compat.StatusPass)
	testenv.Eventually(t, "the live delivery", 5*time.Second, func() bool { return live.Load() == 1 })
	testenv.Eventually(t, "the dead one pending", 5*time.Second, func() bool {
		return metricValue(reg, "scanner_webhook_pending", "#1") == 1 && metricValue(reg, "scanner_webhook_pending", "#2") == 0
	})
	stop()
	var text bytes.Buffer
	if err := reg.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	if strings.Contains(text.String(), host) || strings.Contains(text.String(), "127.0.0.1") || strings.Contains(text.String(), "fn-token") {
		t.Errorf("/metrics shows a part of a webhook's URL:\n%s", text.String())
	}
	for _, line := range []string{`scanner_webhook_deliveries_total{webhook="#2"} 1`, `scanner_webhook_deliveries_total{webhook="#1"} 0`} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("metrics lack %q:\n%s", line, text.String())
		}
	}
	// Two webhooks alike are refused, named or not.
	for _, twins := range [][]watch.Webhook{
		{{URL: srv.URL + "/a", Secret: secret}, {URL: srv.URL + "/a", Secret: secret}},
		{{Name: "x", URL: srv.URL + "/a", Secret: secret}, {Name: "x", URL: srv.URL + "/b", Secret: secret}},
	} {
		if _, err := New(Config{Store: db, Webhooks: twins}); err == nil || !strings.Contains(err.Error(), "webhook #2") {
			t.Errorf("two webhooks alike: %v, want refused naming #2", err)
		}
	}
}

// TestOneRefusedDeliveryDoesNotBlockTheRest: an endpoint that refuses one
// payload for good (400) and keeps putting another off (429, then 503)
// still gets every other change at once: each delivery has its own
// schedule. The refused one is tried once and shown to the operator (its
// own metric, an error in the log, its state in the database); the put-off
// one is tried again, and never counted as refused.
func TestOneRefusedDeliveryDoesNotBlockTheRest(t *testing.T) {
	db := storetest.MustOpen(t)
	var mu sync.Mutex
	tries := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p Payload
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &p)
		mu.Lock()
		tries[p.Model]++
		n := tries[p.Model]
		mu.Unlock()
		switch p.Model {
		case "org/refused":
			http.Error(w, "no such schema", http.StatusBadRequest)
		case "org/busy":
			if n%2 == 1 {
				w.WriteHeader(http.StatusTooManyRequests)
			} else {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	count := func(model string) int { mu.Lock(); defer mu.Unlock(); return tries[model] }
	hook := watch.Webhook{Name: "ops", URL: srv.URL + "/hook", Secret: secret}
	reg := metrics.NewRegistry()
	logs, log := newJSONLog()
	cfg := fastConfig(db, []watch.Webhook{hook}, reg, log)
	cfg.FirstBackoff, cfg.MaxBackoff = 30*time.Millisecond, 30*time.Millisecond
	sender, stop := running(t, cfg)
	testenv.Eventually(t, "the cursor", 5*time.Second, func() bool { _, err := db.PendingDeliveries(context.Background()); return err == nil })
	time.Sleep(100 * time.Millisecond)
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	refusedEvent := record(t, db, "org/refused", t0, compat.StatusPass)[0] // oldest first: these two come before the rest
	record(t, db, "org/busy", t0, compat.StatusPass)
	record(t, db, "org/a", t0, compat.StatusPass, compat.StatusFail)
	record(t, db, "org/b", t0, compat.StatusPass)
	testenv.Eventually(t, "the other changes", 5*time.Second, func() bool { return count("org/a") == 2 && count("org/b") == 1 })
	testenv.Eventually(t, "the busy one tried again", 5*time.Second, func() bool { return count("org/busy") >= 3 })
	testenv.Eventually(t, "the refusal counted", 5*time.Second, func() bool { return metricValue(reg, "scanner_webhook_refused_total", "ops") == 1 })
	time.Sleep(100 * time.Millisecond) // room for a second try of the refused one
	stop()
	if n := count("org/refused"); n != 1 {
		t.Errorf("the refused delivery was tried %d times, want once", n)
	}
	if n := metricValue(reg, "scanner_webhook_deliveries_total", "ops"); n != 3 {
		t.Errorf("delivered %v, want 3", n)
	}
	refusals := logs.records("webhook delivery refused by the endpoint; not tried again")
	if len(refusals) != 1 || refusals[0]["level"] != "ERROR" || refusals[0]["webhook"] != "ops" || !strings.Contains(refusals[0]["err"].(string), "400 Bad Request") {
		t.Errorf("logged refusals %v, want one error naming ops and the 400", refusals)
	}
	// The busy delivery is still pending (429 and 503 are not final); the
	// refused one is not.
	if p, _ := db.PendingDeliveries(context.Background()); p[hook.Key()] != 1 {
		t.Errorf("pending %v, want the busy one only", p)
	}
	for _, r := range logs.records("webhook delivery refused by the endpoint; not tried again") {
		if strings.Contains(fmt.Sprint(r), "busy") {
			t.Errorf("a 429 or 503 counted as final: %v", r)
		}
	}
	// The operator's status (GET /api/v1/webhooks) says the same.
	st, err := sender.Status(context.Background())
	if err != nil || len(st) != 1 {
		t.Fatalf("status %+v %v", st, err)
	}
	s := st[0]
	if s.Webhook != "ops" || s.Pending != 1 || s.Delivered != 3 || s.Refused != 1 || s.NextTry == nil || s.OldestPending == nil ||
		!strings.HasPrefix(s.LastError, "answered ") || len(s.RecentRefused) != 1 {
		t.Fatalf("status %+v", s)
	}
	if r := s.RecentRefused[0]; r.Event != refusedEvent || !strings.HasSuffix(r.ID, "-"+strconv.FormatInt(refusedEvent, 10)) || r.Error != "answered 400 Bad Request" || r.At.IsZero() {
		t.Errorf("refused %+v, want event %d answered 400", r, refusedEvent)
	}
}

// TestOnlyA4xxOtherThan408And429IsFinal: which answers end a delivery for
// good, and a Retry-After in seconds read.
func TestOnlyA4xxOtherThan408And429IsFinal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(code)
	}))
	defer srv.Close()
	s, err := New(Config{Store: storetest.MustOpen(t), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for code, final := range map[int]bool{400: true, 401: true, 403: true, 404: true, 410: true, 413: true, 422: true, 499: true,
		408: false, 429: false, 300: false, 304: false, 500: false, 502: false, 503: false} {
		err := s.send(context.Background(), watch.Webhook{URL: srv.URL + "/" + strconv.Itoa(code), Secret: secret}, store.Delivery{ID: 1, Body: []byte(`{}`)})
		var r *refusal
		if !errors.As(err, &r) || r.final() != final || r.code != code || r.retryAfter != 2*time.Minute {
			t.Errorf("an answer %d: %#v, want final %v with Retry-After 2m", code, err, final)
		}
	}
}

// TestStandardWebhooksSignTheIDAndTheTry: every try carries the Standard
// Webhooks headers: the delivery's id (the same on each try), the try's
// time, and "v1," with the base64 HMAC-SHA256 of "id.timestamp.body" made
// with the key a "whsec_" secret encodes. A captured try verifies within
// the tolerance only, and not with another id or time; X-Scanner-Signature
// is still the body's HMAC with the secret as written.
func TestStandardWebhooksSignTheIDAndTheTry(t *testing.T) {
	db := storetest.MustOpen(t)
	key := []byte("0123456789abcdef01234567") // 24 bytes, as Standard Webhooks advises
	hookSecret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	var ahead atomic.Int64 // the sender's clock runs this far ahead of the store's: what it queues is due
	ahead.Store(int64(time.Hour))
	now := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	type try struct {
		h    http.Header
		body []byte
		at   time.Time
	}
	var mu sync.Mutex
	var tries []try
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		tries = append(tries, try{r.Header.Clone(), body, now()})
		if len(tries) == 1 {
			ahead.Add(int64(10 * time.Minute)) // the retry comes 10 minutes later
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	hook := watch.Webhook{Name: "std", URL: srv.URL, Secret: hookSecret}
	cfg := fastConfig(db, []watch.Webhook{hook}, nil, slog.New(slog.DiscardHandler))
	cfg.Now = now
	_, stop := running(t, cfg)
	testenv.Eventually(t, "the cursor", 5*time.Second, func() bool { _, err := db.PendingDeliveries(context.Background()); return err == nil })
	time.Sleep(100 * time.Millisecond)
	ev := record(t, db, "org/a", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), compat.StatusPass)[0]
	testenv.Eventually(t, "two tries", 5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(tries) == 2 })
	stop()

	first, second := tries[0], tries[1]
	id := first.h.Get("webhook-id")
	if id == "" || second.h.Get("webhook-id") != id || first.h.Get(DeliveryHeader) != id || !strings.HasSuffix(id, "-"+strconv.FormatInt(ev, 10)) {
		t.Fatalf("ids %q then %q (%s %q), want one, the event's UID", id, second.h.Get("webhook-id"), DeliveryHeader, first.h.Get(DeliveryHeader))
	}
	for i, tr := range tries {
		ts := tr.h.Get("webhook-timestamp")
		sec, _ := strconv.ParseInt(ts, 10, 64)
		if d := tr.at.Sub(time.Unix(sec, 0)); d < 0 || d > 2*time.Second {
			t.Errorf("try %d: timestamp %s, want the try's %d", i+1, ts, tr.at.Unix())
		}
		// Written out here: the key the whsec_ secret encodes, over id.timestamp.body.
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id + "." + ts + "." + string(tr.body)))
		if want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)); tr.h.Get("webhook-signature") != want {
			t.Errorf("try %d: webhook-signature %q, want %q", i+1, tr.h.Get("webhook-signature"), want)
		}
		if err := VerifyStandard(key, tr.h, tr.body, time.Unix(sec, 0).Add(Tolerance)); err != nil {
			t.Errorf("try %d verified at the edge of the tolerance: %v", i+1, err)
		}
		// The contract's header: the body with the secret as written.
		if !webhooktest.SignedBy([]byte(hookSecret), tr.body, tr.h.Get(SignatureHeader)) {
			t.Errorf("try %d: %s %q is not the body's HMAC with the secret", i+1, SignatureHeader, tr.h.Get(SignatureHeader))
		}
	}
	if d := tries[1].at.Sub(tries[0].at); d < 10*time.Minute {
		t.Errorf("the retry came %v after the first try, want 10 minutes (the test's clock)", d)
	}
	// A replay: the first try, captured, sent again after the tolerance.
	sec, _ := strconv.ParseInt(first.h.Get("webhook-timestamp"), 10, 64)
	first.at = time.Unix(sec, 0)
	if err := VerifyStandard(key, first.h, first.body, first.at.Add(Tolerance+time.Second)); !errors.Is(err, ErrStale) {
		t.Errorf("a try replayed past the tolerance: %v, want ErrStale", err)
	}
	if err := VerifyStandard(key, first.h, first.body, first.at.Add(-Tolerance-time.Second)); !errors.Is(err, ErrStale) {
		t.Errorf("a try from the future: %v, want ErrStale", err)
	}
	// The signature covers the id and the time: neither can be changed.
	for name, change := range map[string]func(http.Header){
		"another id":   func(h http.Header) { h.Set("webhook-id", id+"0") },
		"another time": func(h http.Header) { h.Set("webhook-timestamp", strconv.FormatInt(first.at.Unix()+1, 10)) },
		"the raw secret as the key": func(h http.Header) {
			h.Set("webhook-signature", SignStandard([]byte(hookSecret), id, first.at.Unix(), first.body))
		},
	} {
		h := first.h.Clone()
		change(h)
		if err := VerifyStandard(key, h, first.body, first.at); !errors.Is(err, ErrNoSignature) {
			t.Errorf("%s: %v, want ErrNoSignature", name, err)
		}
	}
	if err := VerifyStandard(key, http.Header{}, first.body, first.at); !errors.Is(err, ErrMissingHeaders) {
		t.Errorf("no headers: %v", err)
	}
}
