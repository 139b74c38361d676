// Package webhook tells the operator's endpoints (--webhooks FILE) of each
// status change: every change that passes an endpoint's filters is stored
// as a delivery in SQLite and POSTed as JSON, signed with the endpoint's
// secret (X-Scanner-Signature: sha256=<hex HMAC-SHA256 of the body>), and
// tried again, each delivery on its own schedule with growing waits, until
// the endpoint answers 2xx, refuses it for good (a 4xx other than 408 and
// 429), or the delivery is a day old.
//
// The Sender is background work of `scanner serve`: it reads the events
// the scans write (a cursor over their ids, kept in the database), so a
// scan never waits for an endpoint, and a restart neither loses nor
// repeats a delivery that was acknowledged. Run takes a context and
// returns when everything it started has stopped.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/changetext"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/internal/watch"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// SignatureHeader carries "sha256=" and the hex HMAC-SHA256 of the body
// with the endpoint's secret.
const SignatureHeader = "X-Scanner-Signature"

// DeliveryHeader carries the delivery's id (as IDHeader does): the same
// on every try of one delivery, so an endpoint can drop a repeat, and
// unique across restores of the database (compat.Event.UID).
const DeliveryHeader = "X-Scanner-Delivery"

// Defaults of Config.
const (
	DefaultPoll         = 5 * time.Second
	DefaultFirstBackoff = 10 * time.Second
	DefaultMaxBackoff   = 10 * time.Minute
	DefaultExpiry       = 24 * time.Hour
	DefaultTimeout      = 10 * time.Second
	// DefaultShutdownGrace is how long a POST in flight may go on once Run's
	// context ends.
	DefaultShutdownGrace = 2 * time.Second
	// maxResponseBytes caps what is read of an endpoint's answer.
	maxResponseBytes = 64 << 10
	// keepDone is how long delivered and expired deliveries stay in the
	// database (for inspection) before they are forgotten.
	keepDone = 7 * 24 * time.Hour
	batch    = 100
)

// Store is what the sender reads and writes; *store.SQLite is the real one.
type Store interface {
	StartWebhookCursor(ctx context.Context) (int64, error)
	EventsAfter(ctx context.Context, afterID int64, limit int) ([]compat.Event, error)
	QueueDeliveries(ctx context.Context, cursor int64, ds []store.NewDelivery) error
	DueDeliveries(ctx context.Context, endpoint string, now time.Time, limit int) ([]store.Delivery, error)
	NextDelivery(ctx context.Context, endpoint string) (time.Time, bool, error)
	DeliveryDone(ctx context.Context, id int64, at time.Time) error
	DeliveryFailed(ctx context.Context, id int64, next time.Time, why string) error
	DeliveryRefused(ctx context.Context, id int64, at time.Time, why string) error
	ExpireDeliveries(ctx context.Context, before, forget time.Time) (map[string]int, error)
	PendingDeliveries(ctx context.Context) (map[string]int, error)
	DeliveryReport(ctx context.Context, recent int) (map[string]*store.DeliveryStats, error)
}

var _ Store = (*store.SQLite)(nil)

// Config is what a Sender needs.
type Config struct {
	Webhooks []watch.Webhook
	Store    Store
	// BaseURL is the site's public URL, for the links in payloads; ""
	// leaves them as paths.
	BaseURL string
	// Known says where a signature is tracked (--known-issues); nil: nowhere.
	Known   func(sig string) *compat.KnownIssue
	Metrics *metrics.Registry // nil: a private one
	Logger  *slog.Logger      // nil: slog.Default()
	Version string
	// Client sends the POSTs; nil: one with Timeout that follows no redirect.
	Client *http.Client
	// The zero values take the defaults above.
	Poll          time.Duration // how often new events are looked for (Notify is sooner)
	FirstBackoff  time.Duration // the wait after a delivery's first failed try, doubled after each more
	MaxBackoff    time.Duration
	Expiry        time.Duration // a delivery older than this is given up
	Timeout       time.Duration // one POST, answer included
	ShutdownGrace time.Duration
	Now           func() time.Time
}

// Sender delivers changes to the webhooks. Create it with New.
type Sender struct {
	cfg    Config
	log    *slog.Logger
	client *http.Client
	now    func() time.Time
	notify chan struct{}
	eps    []*endpoint

	delivered, failed, refused, expired *metrics.CounterVec
	pending                             *metrics.GaugeVec
}

// endpoint is one webhook and its wake-up.
type endpoint struct {
	w    watch.Webhook
	key  string
	wake chan struct{}
}

// New checks cfg and prepares a sender.
func New(cfg Config) (*Sender, error) {
	if cfg.Store == nil {
		return nil, errors.New("webhook: Config.Store is required")
	}
	// Webhooks not from a file are labelled by their place in the list too;
	// two alike would share their deliveries and metrics series.
	cfg.Webhooks = slices.Clone(cfg.Webhooks)
	for i := range cfg.Webhooks {
		w := &cfg.Webhooks[i]
		if w.Index == 0 {
			w.Index = i + 1
		}
		if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("webhook %s: want an http(s) URL", w.Label())
		}
	}
	if err := watch.Distinct(cfg.Webhooks); err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.Poll, DefaultPoll)
	def(&cfg.FirstBackoff, DefaultFirstBackoff)
	def(&cfg.MaxBackoff, DefaultMaxBackoff)
	def(&cfg.Expiry, DefaultExpiry)
	def(&cfg.Timeout, DefaultTimeout)
	def(&cfg.ShutdownGrace, DefaultShutdownGrace)
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	s := &Sender{cfg: cfg, log: cfg.Logger, client: cfg.Client, now: cfg.Now, notify: make(chan struct{}, 1)}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.client == nil {
		s.client = newClient(cfg.Timeout)
	}
	reg := cfg.Metrics
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	s.delivered = reg.Counter("scanner_webhook_deliveries_total", "Changes delivered to a webhook (a 2xx answer), by webhook.", "webhook")
	s.failed = reg.Counter("scanner_webhook_failures_total", "Tries of a webhook delivery that failed (no answer, not 2xx), by webhook.", "webhook")
	s.refused = reg.Counter("scanner_webhook_refused_total", "Webhook deliveries the endpoint refused for good (a 4xx answer other than 408 and 429: not tried again), by webhook.", "webhook")
	s.expired = reg.Counter("scanner_webhook_expired_total", "Webhook deliveries given up a day after the change, by webhook.", "webhook")
	s.pending = reg.Gauge("scanner_webhook_pending", "Webhook deliveries waiting for a (next) try, by webhook.", "webhook")
	for _, w := range cfg.Webhooks {
		s.eps = append(s.eps, &endpoint{w: w, key: w.Key(), wake: make(chan struct{}, 1)})
		for _, c := range []*metrics.CounterVec{s.delivered, s.failed, s.refused, s.expired} {
			c.Declare([]string{w.Label()})
		}
		s.pending.With(w.Label()).Set(0)
	}
	return s, nil
}

// Forget removes from the metrics the series of s's webhooks that next
// does not have (next nil: all of them), so that a webhook a reload took
// away leaves /metrics; one kept (the same label) keeps its counts. Call it
// once s has stopped.
func (s *Sender) Forget(next *Sender) {
	kept := map[string]bool{}
	if next != nil {
		for _, ep := range next.eps {
			kept[ep.w.Label()] = true
		}
	}
	for _, ep := range s.eps {
		l := ep.w.Label()
		if kept[l] {
			continue
		}
		for _, c := range []*metrics.CounterVec{s.delivered, s.failed, s.refused, s.expired} {
			c.Forget("webhook", l)
		}
		s.pending.Forget("webhook", l)
	}
}

// newClient is an HTTP client that follows no redirect (a webhook's URL
// is the operator's, and a 3xx is no delivery) and gives up after timeout.
func newClient(timeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxResponseHeaderBytes = 64 << 10
	tr.ResponseHeaderTimeout = timeout
	return &http.Client{
		Timeout:       timeout,
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Notify says that new events may be there (a scan recorded a result); it
// never blocks.
func (s *Sender) Notify() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Run queues and delivers changes until ctx ends, then waits for its
// goroutines: a POST in flight gets ShutdownGrace to finish (and, if it
// does, is recorded as delivered).
func (s *Sender) Run(ctx context.Context) {
	if len(s.eps) == 0 {
		return
	}
	// hard outlives ctx by the grace: what was sent is still recorded.
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(s.cfg.ShutdownGrace, cancelHard) })
	defer stop()

	var wg sync.WaitGroup
	for _, ep := range s.eps {
		wg.Go(func() { s.deliver(ctx, hard, ep) })
	}
	s.queue(ctx)
	wg.Wait()
}

// queue turns new events into deliveries, one per event and matching
// webhook, and gives up deliveries past their expiry.
func (s *Sender) queue(ctx context.Context) {
	cursor, err := s.cfg.Store.StartWebhookCursor(ctx)
	for err != nil {
		s.log.Error("webhooks: reading the cursor", "err", err)
		if !s.sleep(ctx, nil, s.cfg.Poll) {
			return
		}
		cursor, err = s.cfg.Store.StartWebhookCursor(ctx)
	}
	var swept time.Time
	for {
		more, err := s.queueBatch(ctx, &cursor)
		if err != nil && ctx.Err() == nil {
			s.log.Error("webhooks: queueing deliveries", "err", err)
		}
		if now := s.now(); now.Sub(swept) >= time.Minute {
			swept = now
			s.sweep(ctx, now)
		}
		if more {
			continue
		}
		if !s.sleep(ctx, s.notify, s.cfg.Poll) {
			return
		}
	}
}

// queueBatch queues the deliveries of the next events after cursor; more
// says whether there may be more.
func (s *Sender) queueBatch(ctx context.Context, cursor *int64) (more bool, err error) {
	evs, err := s.cfg.Store.EventsAfter(ctx, *cursor, batch)
	if err != nil || len(evs) == 0 {
		return false, err
	}
	var ds []store.NewDelivery
	woken := map[*endpoint]bool{}
	for _, e := range evs {
		if !e.AboutVerdicts() { // the scanner's own errors are no news of a model (as in the feed)
			continue
		}
		item := watch.Item{ModelID: e.ModelID, Target: e.Target, Kind: string(e.Kind)}
		var body []byte
		for _, ep := range s.eps {
			if !ep.w.Filters.Match(item) {
				continue
			}
			if body == nil {
				if body, err = json.Marshal(s.payload(e)); err != nil {
					return false, fmt.Errorf("event %d: %w", e.ID, err)
				}
			}
			ds = append(ds, store.NewDelivery{Endpoint: ep.key, EventID: e.ID, Body: body, UID: e.UID()})
			woken[ep] = true
		}
	}
	last := evs[len(evs)-1].ID
	if err := s.cfg.Store.QueueDeliveries(ctx, last, ds); err != nil {
		return false, err
	}
	*cursor = last
	for ep := range woken {
		wake(ep.wake)
	}
	s.updatePending(ctx)
	return len(evs) == batch, nil
}

// sweep gives up deliveries older than the expiry.
func (s *Sender) sweep(ctx context.Context, now time.Time) {
	gone, err := s.cfg.Store.ExpireDeliveries(ctx, now.Add(-s.cfg.Expiry), now.Add(-keepDone))
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("webhooks: expiring deliveries", "err", err)
		}
		return
	}
	for _, ep := range s.eps {
		if n := gone[ep.key]; n > 0 {
			s.expired.With(ep.w.Label()).Add(float64(n))
			s.log.Warn("webhook deliveries given up after a day without success", "webhook", ep.w.Label(), "deliveries", n)
		}
	}
	s.updatePending(ctx)
}

func (s *Sender) updatePending(ctx context.Context) {
	p, err := s.cfg.Store.PendingDeliveries(ctx)
	if err != nil {
		return
	}
	for _, ep := range s.eps {
		s.pending.With(ep.w.Label()).Set(float64(p[ep.key]))
	}
}

// deliver sends one endpoint's due deliveries, oldest first, each on its
// own schedule (as Stripe and Standard Webhooks retry): a failed try puts
// that delivery off (FirstBackoff, doubled after each of its failures up
// to MaxBackoff, with jitter, or longer when the endpoint's Retry-After
// says so) and the next due one is tried, so one payload the endpoint
// cannot take never holds up the others. A refusal for good (a 4xx other
// than 408 and 429) ends that delivery at once.
func (s *Sender) deliver(ctx, hard context.Context, ep *endpoint) {
	for ctx.Err() == nil {
		due, err := s.cfg.Store.DueDeliveries(ctx, ep.key, s.now(), batch)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("webhooks: reading deliveries", "webhook", ep.w.Label(), "err", err)
			}
			s.sleep(ctx, ep.wake, s.cfg.Poll)
			continue
		}
		for _, d := range due {
			if ctx.Err() != nil {
				return
			}
			s.try(hard, ep, d)
		}
		if len(due) == batch {
			continue
		}
		s.updatePending(ctx)
		wait := s.cfg.Poll
		if next, ok, err := s.cfg.Store.NextDelivery(ctx, ep.key); err == nil && ok {
			wait = min(max(next.Sub(s.now()), 0), wait)
		}
		s.sleep(ctx, ep.wake, wait)
	}
}

// try sends delivery d once and records how it went.
func (s *Sender) try(ctx context.Context, ep *endpoint, d store.Delivery) {
	label := ep.w.Label()
	err := s.send(ctx, ep.w, d)
	var refused *refusal
	switch {
	case err == nil:
		s.delivered.With(label).Inc()
		if err := s.cfg.Store.DeliveryDone(ctx, d.ID, s.now()); err != nil {
			s.log.Error("webhooks: recording a delivery", "webhook", label, "err", err)
		}
	case errors.As(err, &refused) && refused.final():
		s.failed.With(label).Inc()
		s.refused.With(label).Inc()
		s.log.Error("webhook delivery refused by the endpoint; not tried again", "webhook", label, "event_id", d.EventID,
			"attempts", d.Attempts+1, "err", err)
		if err := s.cfg.Store.DeliveryRefused(ctx, d.ID, s.now(), err.Error()); err != nil {
			s.log.Error("webhooks: recording a refused delivery", "webhook", label, "err", err)
		}
	default:
		wait := backoff(d.Attempts+1, s.cfg.FirstBackoff, s.cfg.MaxBackoff)
		if refused != nil && refused.retryAfter > wait {
			wait = min(refused.retryAfter, s.cfg.Expiry)
		}
		s.failed.With(label).Inc()
		s.log.Warn("webhook delivery failed; trying again later", "webhook", label, "event_id", d.EventID,
			"attempts", d.Attempts+1, "retry_in", wait.String(), "err", err)
		if err := s.cfg.Store.DeliveryFailed(ctx, d.ID, s.now().Add(wait), err.Error()); err != nil {
			s.log.Error("webhooks: recording a failed delivery", "webhook", label, "err", err)
		}
	}
}

// refusal is an endpoint's answer other than 2xx.
type refusal struct {
	code       int
	retryAfter time.Duration // the answer's Retry-After, in seconds; 0: none
}

func (r *refusal) Error() string {
	return fmt.Sprintf("answered %d %s", r.code, http.StatusText(r.code))
}

// final says whether the answer refuses the delivery for good: a 4xx
// other than 408 (Request Timeout) and 429 (Too Many Requests) says this
// payload will never be taken (as Stripe and GitHub read it); any other
// (3xx, 5xx) may pass later.
func (r *refusal) final() bool {
	return r.code >= 400 && r.code <= 499 && r.code != http.StatusRequestTimeout && r.code != http.StatusTooManyRequests
}

// send POSTs one delivery: nil when the endpoint answered 2xx, a
// *refusal when it answered otherwise.
func (s *Sender) send(ctx context.Context, w watch.Webhook, d store.Delivery) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(d.Body))
	if err != nil {
		return errors.New("the webhook's URL cannot be requested")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "torchtpu-scanner/"+s.cfg.Version+" (webhook)")
	id := d.SendID()
	ts := s.now().Unix() // this try's: a captured delivery is stale after the Tolerance
	req.Header.Set(SignatureHeader, Sign([]byte(w.Secret), d.Body))
	req.Header.Set(DeliveryHeader, id)
	req.Header.Set(IDHeader, id)
	req.Header.Set(TimestampHeader, strconv.FormatInt(ts, 10))
	req.Header.Set(StandardSignatureHeader, SignStandard(w.SigningKey(), id, ts, d.Body))
	resp, err := s.client.Do(req)
	if err != nil {
		return bare(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		r := &refusal{code: resp.StatusCode}
		if n, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && n > 0 {
			r.retryAfter = time.Duration(min(n, 7*24*3600)) * time.Second
		}
		return r
	}
	return nil
}

// bare is a request's error without its URL, which may be a credential
// (a Slack webhook's path is).
func bare(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("no answer within the timeout")
	}
	return errors.New(strings.ReplaceAll(err.Error(), "\n", " "))
}

// Sign is the value of SignatureHeader for body: "sha256=" and the hex
// HMAC-SHA256 of body with secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// backoff is the wait after the n-th failure in a row (from 1): first,
// doubled each time, at most most, less up to a tenth at random (so that
// endpoints that failed together do not retry together).
func backoff(n int, first, most time.Duration) time.Duration {
	d := first
	for i := 1; i < n && d < most; i++ {
		d *= 2
	}
	d = min(d, most)
	return d - time.Duration(rand.Int64N(int64(d)/10+1))
}

// sleep waits d, or until wake (when not nil) has something, or ctx ends;
// false when ctx ended.
func (s *Sender) sleep(ctx context.Context, wake <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-wake:
	case <-t.C:
	}
	return true
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Payload is the JSON body of a delivery: one status change.
type Payload struct {
	// ID is the change's id, the same as its JSON Feed and Atom entry's
	// (compat.Event.UID under the site's /events/).
	ID     string           `json:"id"`
	Kind   compat.EventKind `json:"kind"`
	Model  string           `json:"model"`
	Target compat.Target    `json:"target"`
	// Title is the change in one line; Text adds the link (and the known
	// issue), for endpoints that show a plain "text" (Slack, Discord).
	Title      string             `json:"title"`
	Text       string             `json:"text"`
	URL        string             `json:"url"`
	Date       time.Time          `json:"date"`
	KnownIssue *compat.KnownIssue `json:"known_issue"`
	Event      compat.Event       `json:"event"`
}

// payload is event e as a delivery's body.
func (s *Sender) payload(e compat.Event) Payload {
	var known *compat.KnownIssue
	if s.cfg.Known != nil && e.Signature != nil {
		known = s.cfg.Known(*e.Signature)
	}
	return NewPayload(s.cfg.BaseURL, e, known)
}

// NewPayload is event e as a delivery's body, its links under base.
func NewPayload(base string, e compat.Event, known *compat.KnownIssue) Payload {
	page := base + modelPath(e.ModelID) + "#event-" + strconv.FormatInt(e.ID, 10)
	title := changetext.Title(e)
	text := title + "\n" + page
	if known != nil {
		text += "\nKnown issue: " + known.Title + " (" + known.State + ") " + known.URL
	}
	e.KnownIssue = known
	return Payload{ID: base + "/events/" + e.UID(), Kind: e.Kind, Model: e.ModelID, Target: e.Target, Title: title, Text: text,
		URL: page, Date: e.At.UTC(), KnownIssue: known, Event: e}
}

// modelPath is the site's path of a model page, each part of the id
// path-escaped (as web's pages are addressed).
func modelPath(id string) string {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return "/models/" + strings.Join(parts, "/")
}

// recentRefused is how many refused deliveries Status lists per webhook.
const recentRefused = 20

// Status is one webhook as the operator sees it (GET /api/v1/webhooks,
// with the admin token): its deliveries by state (finished ones are kept
// a week), and the newest it refused for good.
type Status struct {
	Webhook       string            `json:"webhook"` // its label: its name, else #N
	Pending       int               `json:"pending"`
	Delivered     int               `json:"delivered"`
	Refused       int               `json:"refused"`
	Expired       int               `json:"expired"`
	OldestPending *time.Time        `json:"oldest_pending"` // null: none pending
	NextTry       *time.Time        `json:"next_try"`       // null: none pending
	LastError     string            `json:"last_error"`     // the newest failed try's, among the pending
	RecentRefused []RefusedDelivery `json:"recent_refused"`
}

// RefusedDelivery is a delivery the endpoint refused for good.
type RefusedDelivery struct {
	ID    string    `json:"id"`    // the delivery's id (webhook-id)
	Event int64     `json:"event"` // the change's number
	At    time.Time `json:"at"`
	Error string    `json:"error"` // the answer, e.g. "answered 400 Bad Request"
}

// Status is every webhook's Status, in the file's order.
func (s *Sender) Status(ctx context.Context) ([]Status, error) {
	report, err := s.cfg.Store.DeliveryReport(ctx, recentRefused)
	if err != nil {
		return nil, err
	}
	out := make([]Status, 0, len(s.eps))
	for _, ep := range s.eps {
		st := Status{Webhook: ep.w.Label(), RecentRefused: []RefusedDelivery{}}
		if r := report[ep.key]; r != nil {
			st.Pending, st.Delivered, st.Refused, st.Expired, st.LastError = r.Pending, r.Delivered, r.Refused, r.Expired, r.LastError
			st.OldestPending, st.NextTry = timeOrNil(r.OldestPending), timeOrNil(r.NextTry)
			for _, d := range r.RecentRefused {
				st.RecentRefused = append(st.RecentRefused, RefusedDelivery{ID: d.UID, Event: d.EventID, At: d.At.UTC(), Error: d.Why})
			}
		}
		out = append(out, st)
	}
	return out, nil
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
