// Package hub is the scanner's Hugging Face Hub client: it lists popular
// models, reads model info at a pinned revision, and downloads allowlisted
// files into the Hub cache layout that huggingface_hub and transformers use,
// so Python tools share the downloads.
//
// It behaves like huggingface_hub where the Hub defines behaviour:
//
//   - Listing: /api/models with expand[]= fields and the Link header's
//     rel="next" cursor, up to 1000 models a page.
//   - Files: /{id}/resolve/{sha}/{file}, always pinned to a commit. LFS files
//     answer 302 to a CDN with X-Linked-Etag (their sha256) and
//     X-Linked-Size; other files answer 200 with ETag (their git blob sha1).
//     Blobs are stored as blobs/<etag>, written to blobs/<etag>.incomplete
//     first, verified, renamed; snapshots/<sha>/<file> are relative symlinks
//     to them; refs/main holds the commit of main when the Hub said so.
//   - Errors: X-Error-Code (GatedRepo, RepoNotFound, EntryNotFound,
//     RevisionNotFound), then the disabled message, then the status.
//   - Retries: 408, 429, 5xx and network errors, 5 tries, backoff 1, 2, 4, 8 s
//     (jittered); a 429 waits the RateLimit header's t (+1 s) or Retry-After.
//     401, 403 and 404 are never retried.
//
// The token goes to the endpoint's origin only: redirects are followed by
// hand, and a request to any other origin (the CDN) carries no
// Authorization. The token never appears in logs, errors or results.
package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Defaults for Options fields left zero.
const (
	DefaultEndpoint      = "https://huggingface.co"
	DefaultMaxFileBytes  = 20 << 30
	DefaultMaxModelBytes = 60 << 30
	DefaultConcurrency   = 4
	DefaultStallTimeout  = 60 * time.Second
	// DefaultRequestTimeout bounds one API answer (a listing page, model
	// info, a file's HEAD) from sending to its last byte.
	DefaultRequestTimeout = 2 * time.Minute
	// DefaultMinTransferRate is the slowest average a file download may
	// keep: a file of n bytes gets RequestTimeout + n/rate in all.
	DefaultMinTransferRate = 512 << 10

	// maxTries is how many times one request is sent before giving up.
	maxTries = 5
	// maxRedirects bounds redirect chains (renames, CDN hops).
	maxRedirects = 10
)

// Options configure a Client. Only CacheDir is needed, and only for Download.
type Options struct {
	// Endpoint is the Hub's base URL, e.g. https://huggingface.co (the
	// default) or a mirror. A trailing slash is ignored.
	Endpoint string
	// Token, when set, is sent as "Authorization: Bearer" to Endpoint's
	// origin (scheme, host and port) and nowhere else.
	Token string
	// CacheDir is the Hub cache root (…/huggingface/hub).
	CacheDir string
	// HTTPClient is used for every request; its CheckRedirect is replaced
	// (on a copy) because redirects are followed by hand. Default: a client
	// with no overall timeout. Leave its Timeout at zero: it would cut long
	// downloads; StallTimeout catches dead connections instead.
	HTTPClient *http.Client
	// Logger receives retries, rate-limit waits and downloads. Default: none.
	Logger *slog.Logger
	// MaxFileBytes and MaxModelBytes cap one file and one Download call
	// (files already in the cache included). Defaults 20 GiB and 60 GiB.
	MaxFileBytes, MaxModelBytes int64
	// Concurrency is how many files a Download fetches at once (default 4).
	Concurrency int
	// Backoff returns the wait before retry number attempt (1 for the first
	// retry). Default: 1, 2, 4, 8 s, each jittered by ±25%.
	Backoff func(attempt int) time.Duration
	// StallTimeout aborts a request whose answer or body sends nothing for
	// this long; the request is then retried (a download resumes). Default 60 s.
	StallTimeout time.Duration
	// RequestTimeout is the total deadline of one API answer (a listing
	// page, model info, a file's HEAD), headers and body, however steadily
	// a server drips it. Default 2 min.
	RequestTimeout time.Duration
	// MinTransferRate (bytes per second) sets each file download's total
	// deadline, all resumes included: RequestTimeout + size/MinTransferRate
	// for the size the Hub announced. Default 512 KiB/s.
	MinTransferRate int64
	// UserAgent is sent with every request. Default "torchtpu-scanner".
	UserAgent string
	// OnResponse is called after every HTTP exchange with its status (0 for
	// a network error) and duration, e.g. for Prometheus metrics.
	OnResponse func(status int, d time.Duration)
	// OnRateLimitWait is called for every wait caused by the Hub's rate
	// limit (a 429, or pacing before the budget runs out).
	OnRateLimitWait func(d time.Duration)
	// Sleep waits d or until ctx is done, returning ctx.Err() then. Tests
	// replace it to observe waits without spending them. Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client talks to one Hub endpoint. It is safe for concurrent use.
type Client struct {
	endpoint *url.URL
	base     string // endpoint without trailing slash
	token    string
	cacheDir string
	hc       *http.Client
	log      *slog.Logger
	maxFile  int64
	maxModel int64
	conc     int
	backoff  func(int) time.Duration
	stall    time.Duration
	reqLimit time.Duration
	minRate  int64
	ua       string
	onResp   func(int, time.Duration)
	onWait   func(time.Duration)
	sleep    func(context.Context, time.Duration) error
	now      func() time.Time
	maxJSON  int // the largest JSON answer read whole (maxJSON; tests lower it)

	pacer pacer

	mu sync.Mutex
	// mainSHA remembers, per model id, the commit the Hub reported for main
	// (listings and model info at main), so Download writes refs/main only
	// when it is true.
	mainSHA map[string]string
}

// New checks o and returns a Client.
func New(o Options) (*Client, error) {
	ep := strings.TrimRight(strings.TrimSpace(o.Endpoint), "/")
	if ep == "" {
		ep = DefaultEndpoint
	}
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
		return nil, fmt.Errorf("hub: endpoint %q: want an http(s) URL without credentials or query", o.Endpoint)
	}
	tok := strings.TrimSpace(o.Token)
	if strings.ContainsAny(tok, "\r\n\t ") {
		return nil, errors.New("hub: token contains white space")
	}
	c := &Client{
		endpoint: u,
		base:     ep,
		token:    tok,
		cacheDir: o.CacheDir,
		log:      o.Logger,
		maxFile:  o.MaxFileBytes,
		maxModel: o.MaxModelBytes,
		conc:     o.Concurrency,
		backoff:  o.Backoff,
		stall:    o.StallTimeout,
		reqLimit: o.RequestTimeout,
		minRate:  o.MinTransferRate,
		ua:       o.UserAgent,
		onResp:   o.OnResponse,
		onWait:   o.OnRateLimitWait,
		sleep:    o.Sleep,
		now:      time.Now,
		maxJSON:  maxJSON,
		mainSHA:  map[string]string{},
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.maxFile <= 0 {
		c.maxFile = DefaultMaxFileBytes
	}
	if c.maxModel <= 0 {
		c.maxModel = DefaultMaxModelBytes
	}
	if c.conc <= 0 {
		c.conc = DefaultConcurrency
	}
	if c.backoff == nil {
		c.backoff = defaultBackoff
	}
	if c.stall <= 0 {
		c.stall = DefaultStallTimeout
	}
	if c.reqLimit <= 0 {
		c.reqLimit = DefaultRequestTimeout
	}
	if c.minRate <= 0 {
		c.minRate = DefaultMinTransferRate
	}
	if c.ua == "" {
		c.ua = "torchtpu-scanner"
	}
	if c.sleep == nil {
		c.sleep = sleepCtx
	}
	var hc http.Client
	if o.HTTPClient != nil {
		hc = *o.HTTPClient
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 16
		hc.Transport = t
	}
	// Redirects are followed by hand (follow, Download) so that the token
	// never leaves the endpoint's origin and renames can be recorded.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.hc = &hc
	return c, nil
}

// Endpoint returns the endpoint URL the client talks to.
func (c *Client) Endpoint() string { return c.base }

func defaultBackoff(attempt int) time.Duration {
	d := time.Second << min(max(attempt-1, 0), 3) // 1, 2, 4, 8 s
	return time.Duration(float64(d) * (0.75 + 0.5*rand.Float64()))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// sameOrigin reports whether u is on the endpoint's origin: same scheme,
// host (case-insensitive) and port (the scheme's default when absent). Only
// such requests carry the token.
func (c *Client) sameOrigin(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, c.endpoint.Scheme) &&
		strings.EqualFold(u.Hostname(), c.endpoint.Hostname()) &&
		port(u) == port(c.endpoint)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// safeURL renders u for logs and errors: never userinfo, and no query for
// other origins (a CDN's signed URL is a credential too).
func (c *Client) safeURL(u *url.URL) string {
	v := *u
	v.User = nil
	v.Fragment = ""
	if !c.sameOrigin(u) {
		v.RawQuery = ""
	}
	return c.redact(v.String())
}

// redact removes the token from s, in case a server echoed it.
func (c *Client) redact(s string) string {
	if c.token == "" || !strings.Contains(s, c.token) {
		return s
	}
	return strings.ReplaceAll(s, c.token, "[REDACTED]")
}

// errStalled marks a request aborted by the stall watchdog.
var errStalled = errors.New("stalled: no data received")

// ErrDeadline marks a request or download that did not complete within its
// total deadline (Options.RequestTimeout, or a file's share of
// MinTransferRate), however steadily it was dripping.
var ErrDeadline = errors.New("hub: deadline exceeded")

// send performs one logical request: it waits for the rate-limit pacer,
// sends, and retries 408, 429, 5xx and network errors with backoff. It never
// follows redirects. A 2xx or 3xx answer is returned with its body open; an
// answer >= 400 is returned as an *Error (body read and closed).
//
// limit, when positive, is each try's total deadline, answer and body
// (see watchdog).
func (c *Client) send(ctx context.Context, method string, u *url.URL, hdr http.Header, limit time.Duration) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		if err := c.pace(ctx, u); err != nil {
			return nil, err
		}
		resp, err := c.once(ctx, method, u, hdr, limit)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if attempt >= maxTries {
				return nil, fmt.Errorf("%s %s: %w (after %d tries)", method, c.safeURL(u), err, attempt)
			}
			if err := c.retryWait(ctx, method, u, attempt, 0, c.backoff(attempt), false, err.Error()); err != nil {
				return nil, err
			}
			continue
		}
		if resp.StatusCode < 400 {
			return resp, nil
		}
		if !retryable(resp.StatusCode) || attempt >= maxTries {
			return nil, c.newError(method, u, resp)
		}
		wait, rateLimited := c.retryAfter(resp, attempt)
		status := resp.StatusCode
		rl, hasRL := ParseRateLimit(resp.Header)
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		if err := c.retryWait(ctx, method, u, attempt, status, wait, rateLimited, ""); err != nil {
			return nil, err
		}
		if rateLimited && hasRL && rl.Remaining == 0 {
			c.pacer.forget(rl.Resource) // waited out: the window has reset
		}
	}
}

// retryable: 408, 429 and 5xx except 501 (Not Implemented never heals).
func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests ||
		(status >= 500 && status != http.StatusNotImplemented)
}

// retryAfter decides the wait before retrying a retryable answer, as
// huggingface_hub's http_backoff does: on 429 with `RateLimit: …;r=0;t=N`,
// N+1 s; else with Retry-After, that +1 s; else the backoff.
func (c *Client) retryAfter(resp *http.Response, attempt int) (time.Duration, bool) {
	if resp.StatusCode == http.StatusTooManyRequests {
		if rl, ok := ParseRateLimit(resp.Header); ok && rl.Remaining == 0 {
			return rl.Reset + time.Second, true
		}
	}
	if d, ok := parseRetryAfter(resp.Header, c.now()); ok {
		return d + time.Second, resp.StatusCode == http.StatusTooManyRequests
	}
	return c.backoff(attempt), resp.StatusCode == http.StatusTooManyRequests
}

func (c *Client) retryWait(ctx context.Context, method string, u *url.URL, attempt, status int, wait time.Duration, rateLimited bool, cause string) error {
	attrs := []any{"method", method, "url", c.safeURL(u), "attempt", attempt, "wait", wait}
	if status != 0 {
		attrs = append(attrs, "status", status)
	}
	if cause != "" {
		attrs = append(attrs, "error", c.redact(cause))
	}
	if rateLimited {
		c.log.Warn("hub: rate limited, waiting", attrs...)
		if c.onWait != nil {
			c.onWait(wait)
		}
	} else {
		c.log.Warn("hub: retrying", attrs...)
	}
	return c.sleep(ctx, wait)
}

// pace waits as long as the rate-limit pacer says before a request to u.
func (c *Client) pace(ctx context.Context, u *url.URL) error {
	if !c.sameOrigin(u) {
		return ctx.Err() // the CDN is not under the Hub's API limits
	}
	d := c.pacer.wait(resourceFor(u.Path), c.now())
	if d <= 0 {
		return ctx.Err()
	}
	c.log.Info("hub: pacing to stay within the rate limit", "url", c.safeURL(u), "wait", d)
	if c.onWait != nil {
		c.onWait(d)
	}
	return c.sleep(ctx, d)
}

// once sends one HTTP request. The token is attached only for the
// endpoint's origin. The answer's body is watched: if no byte arrives for
// the stall timeout, the request is cancelled and reads fail with
// errStalled; if the answer is not complete within limit (when positive),
// they fail with ErrDeadline.
func (c *Client) once(ctx context.Context, method string, u *url.URL, hdr http.Header, limit time.Duration) (*http.Response, error) {
	actx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(actx, method, u.String(), nil)
	if err != nil {
		cancel()
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", c.ua)
	if c.token != "" && c.sameOrigin(u) {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	w := &watchdog{cancel: cancel, d: c.stall, limit: limit}
	w.arm()
	start := time.Now()
	resp, err := c.hc.Do(req)
	dur := time.Since(start)
	if err != nil {
		stalled := w.stop()
		cancel()
		c.observe(0, dur, nil)
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL is added back, safely, by the caller
		}
		switch {
		case ctx.Err() != nil:
		case stalled == errDeadlineHit:
			err = fmt.Errorf("%w: no answer within %s", ErrDeadline, limit)
		case stalled != nil:
			err = fmt.Errorf("%w for %s waiting for an answer", errStalled, c.stall)
		}
		return nil, err
	}
	c.observe(resp.StatusCode, dur, resp.Header)
	w.kick()
	resp.Body = &watchedBody{rc: resp.Body, w: w, parent: ctx}
	return resp, nil
}

func (c *Client) observe(status int, d time.Duration, h http.Header) {
	if c.onResp != nil {
		c.onResp(status, d)
	}
	if h != nil {
		if rl, ok := ParseRateLimit(h); ok {
			c.pacer.observe(rl, c.now())
		}
	}
}

// watchdog cancels a request when it is not kicked for d (a stall), or,
// when limit is positive, limit after it was armed however often it was
// kicked (a drip).
type watchdog struct {
	mu       sync.Mutex
	t        *time.Timer
	deadline *time.Timer
	d        time.Duration
	limit    time.Duration
	cancel   context.CancelFunc
	fired    error // errStalled or errDeadlineHit once it fired
	done     bool
}

// errDeadlineHit is the watchdog's note that limit passed.
var errDeadlineHit = errors.New("deadline")

func (w *watchdog) arm() {
	w.t = time.AfterFunc(w.d, func() { w.fire(errStalled) })
	if w.limit > 0 {
		w.deadline = time.AfterFunc(w.limit, func() { w.fire(errDeadlineHit) })
	}
}

func (w *watchdog) fire(why error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && w.fired == nil {
		w.fired = why
		w.cancel()
	}
}

func (w *watchdog) kick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && w.fired == nil {
		w.t.Reset(w.d)
	}
}

// stop disarms the watchdog and reports why it had fired (nil: it had not).
func (w *watchdog) stop() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	w.t.Stop()
	if w.deadline != nil {
		w.deadline.Stop()
	}
	return w.fired
}

// watchedBody kicks the watchdog on every read and turns its cancellation
// into errStalled.
type watchedBody struct {
	rc     io.ReadCloser
	w      *watchdog
	parent context.Context
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.w.kick()
	}
	if err != nil && err != io.EOF {
		b.w.mu.Lock()
		fired := b.w.fired
		b.w.mu.Unlock()
		switch {
		case fired == nil || b.parent.Err() != nil:
		case fired == errDeadlineHit:
			err = fmt.Errorf("%w: the answer did not complete within %s", ErrDeadline, b.w.limit)
		default:
			err = fmt.Errorf("%w for %s while reading", errStalled, b.w.d)
		}
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.w.stop()
	err := b.rc.Close()
	b.w.cancel()
	return err
}

// follow sends a GET (or HEAD) and follows redirects by hand, re-deciding
// for every hop whether the token may go there; limit is each hop's total
// deadline (0: none). It returns the final answer
// and the URLs visited before it (the redirect chain, oldest first).
func (c *Client) follow(ctx context.Context, method string, u *url.URL, hdr http.Header, limit time.Duration) (*http.Response, *url.URL, []*url.URL, error) {
	var chain []*url.URL
	for range maxRedirects + 1 {
		resp, err := c.send(ctx, method, u, hdr, limit)
		if err != nil {
			return nil, u, chain, err
		}
		if !isRedirect(resp.StatusCode) {
			return resp, u, chain, nil
		}
		next, err := location(resp, u)
		resp.Body.Close()
		if err != nil {
			return nil, u, chain, fmt.Errorf("%s %s: %w", method, c.safeURL(u), err)
		}
		chain = append(chain, u)
		u = next
	}
	return nil, u, chain, fmt.Errorf("%s %s: more than %d redirects", method, c.safeURL(u), maxRedirects)
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// location resolves a redirect's Location against the request URL.
func location(resp *http.Response, from *url.URL) (*url.URL, error) {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil, fmt.Errorf("redirect %d without Location", resp.StatusCode)
	}
	to, err := from.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("redirect to a bad Location: %w", err)
	}
	if to.Scheme != "http" && to.Scheme != "https" {
		return nil, fmt.Errorf("redirect to unsupported scheme %q", to.Scheme)
	}
	return to, nil
}

// isNetErr reports whether err is a transport failure worth resuming after.
func isNetErr(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errStalled) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || strings.Contains(err.Error(), "connection reset")
}
