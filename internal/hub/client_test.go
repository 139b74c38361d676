package hub

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
)

func TestRetry429(t *testing.T) {
	tests := []struct {
		name     string
		fault    hubtest.Fault
		wantWait time.Duration
	}{
		{"RateLimit t", hubtest.Status429(7), 8 * time.Second},
		{"Retry-After seconds", hubtest.RetryAfter429("3"), 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hooked []time.Duration
			e := newEnv(t, func(o *Options) { o.OnRateLimitWait = func(d time.Duration) { hooked = append(hooked, d) } }, manyRepos(3)...)
			e.hub.Fault("/api/models", tt.fault)
			got, err := e.c.ListModels(context.Background(), ListOptions{Limit: 3})
			if err != nil || len(got) != 3 {
				t.Fatalf("%v, %d models", err, len(got))
			}
			if w := e.waits.all(); !slices.Equal(w, []time.Duration{tt.wantWait}) {
				t.Fatalf("waits %v, want [%v]", w, tt.wantWait)
			}
			if !slices.Equal(hooked, []time.Duration{tt.wantWait}) {
				t.Errorf("OnRateLimitWait %v", hooked)
			}
			var statuses []int
			for _, r := range e.requests("hub", "/api/models") {
				statuses = append(statuses, r.Status)
			}
			if !slices.Equal(statuses, []int{429, 200}) {
				t.Errorf("statuses %v, want the 429 once, then 200", statuses)
			}
		})
	}
}

func TestRetry5xxThenSuccess(t *testing.T) {
	var statuses []int
	var mu sync.Mutex
	e := newEnv(t, func(o *Options) {
		o.OnResponse = func(s int, _ time.Duration) { mu.Lock(); statuses = append(statuses, s); mu.Unlock() }
	}, smallModel("acme/tiny"))
	// The drop comes first: on a fresh connection, so that Go's transport
	// does not retry it by itself as it does on reused idle connections.
	e.hub.Fault("/api/models/", hubtest.Drop())
	e.hub.Fault("/api/models/", hubtest.Status5xx(503))
	e.hub.Fault("/api/models/", hubtest.Status5xx(502))
	if _, err := e.c.ModelInfo(context.Background(), "acme/tiny", ""); err != nil {
		t.Fatal(err)
	}
	if w := e.waits.all(); !slices.Equal(w, []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}) {
		t.Errorf("backoff waits %v, want attempts 1, 2, 3", w)
	}
	if !slices.Equal(statuses, []int{0, 503, 502, 200}) {
		t.Errorf("OnResponse statuses %v", statuses)
	}
}

func TestRetry5xxExhausted(t *testing.T) {
	e := newEnv(t, nil, smallModel("acme/tiny"))
	e.hub.Fault("/api/models/", hubtest.Status5xx(500).Times(-1))
	_, err := e.c.ModelInfo(context.Background(), "acme/tiny", "")
	var he *Error
	if !errors.As(err, &he) || he.Status != 500 || he.Reason() != "" {
		t.Fatalf("err = %v, want the 500 as *Error with no reason", err)
	}
	if n := len(e.requests("hub", "/api/models/")); n != maxTries {
		t.Fatalf("%d requests, want %d tries", n, maxTries)
	}
}

func TestRetryStall(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.StallTimeout = 300 * time.Millisecond }, manyRepos(2)...)
	e.hub.Fault("/api/models", hubtest.Slow(10*time.Second))
	start := time.Now()
	if _, err := e.c.ListModels(context.Background(), ListOptions{Limit: 2}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v: the stalled request was not abandoned", d)
	}
	if w := e.waits.all(); !slices.Equal(w, []time.Duration{time.Millisecond}) {
		t.Errorf("waits %v, want one retry after the stall", w)
	}
	if n := len(e.requests("hub", "/api/models")); n != 2 {
		t.Errorf("%d requests, want the stalled one and its retry", n)
	}
}

func TestNoRetryOnClientErrors(t *testing.T) {
	gated := smallModel("meta/gated")
	gated.Gated = "manual"
	tests := []struct {
		name   string
		token  string
		call   func(c *Client, h *hubtest.Hub) error
		status int
	}{
		{"401 missing repo", "", func(c *Client, h *hubtest.Hub) error {
			_, err := c.ModelInfo(context.Background(), "nobody/nothing", "")
			return err
		}, 401},
		{"403 gated with a token", "hf_other", func(c *Client, h *hubtest.Hub) error {
			_, err := c.Download(context.Background(), "meta/gated", h.SHA("meta/gated"), []string{"config.json"})
			return err
		}, 403},
		{"404 entry", "", func(c *Client, h *hubtest.Hub) error {
			_, err := c.Download(context.Background(), "acme/tiny", h.SHA("acme/tiny"), []string{"vocab.txt"})
			return err
		}, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.Token = tt.token }, smallModel("acme/tiny"), gated)
			e.hub.SetToken("hf_granted")
			err := tt.call(e.c, e.hub)
			var he *Error
			if !errors.As(err, &he) || he.Status != tt.status {
				t.Fatalf("err = %v, want status %d", err, tt.status)
			}
			if reqs := e.hub.Requests(); len(reqs) != 1 {
				t.Fatalf("%d requests, want 1 (no retry)", len(reqs))
			}
			if len(e.waits.all()) != 0 {
				t.Fatal("retried")
			}
		})
	}
}

func TestErrorMapping(t *testing.T) {
	gated := smallModel("meta/gated")
	gated.Gated = "auto"
	disabled := smallModel("bad/disabled")
	disabled.Disabled = true
	private := smallModel("acme/private")
	private.Private = true
	dl := func(id string, files ...string) func(*Client, *hubtest.Hub) error {
		return func(c *Client, h *hubtest.Hub) error {
			sha := h.SHA(id)
			if sha == "" {
				sha = strings.Repeat("a", 40)
			}
			_, err := c.Download(context.Background(), id, sha, files)
			return err
		}
	}
	info := func(id, rev string) func(*Client, *hubtest.Hub) error {
		return func(c *Client, h *hubtest.Hub) error {
			_, err := c.ModelInfo(context.Background(), id, rev)
			return err
		}
	}
	tests := []struct {
		name     string
		token    string
		call     func(*Client, *hubtest.Hub) error
		status   int
		code     string
		reason   compat.Reason
		sentinel error
		message  string
	}{
		{"gated anonymous", "", dl("meta/gated", "config.json"), 401, "GatedRepo", compat.ReasonGated, ErrGated, "You must have access"},
		{"gated without access", "hf_other", dl("meta/gated", "config.json"), 403, "GatedRepo", compat.ReasonGated, ErrGated, "not in the authorized list"},
		{"missing repo anonymous", "", info("nobody/nothing", ""), 401, "", compat.ReasonNotFound, ErrNotFound, "Invalid username or password."},
		{"private repo anonymous", "", info("acme/private", ""), 401, "", compat.ReasonNotFound, ErrNotFound, "Invalid username or password."},
		{"missing repo with a token", "hf_other", info("nobody/nothing", ""), 404, "RepoNotFound", compat.ReasonNotFound, ErrNotFound, "Repository not found"},
		{"missing file", "", dl("acme/tiny", "vocab.txt"), 404, "EntryNotFound", compat.ReasonNotFound, ErrNotFound, "Entry not found"},
		{"missing revision", "", info("acme/tiny", "v9"), 404, "RevisionNotFound", compat.ReasonNotFound, ErrNotFound, "Invalid rev id: v9"},
		{"missing commit", "", dl("nobody/nothing", "config.json"), 401, "", compat.ReasonNotFound, ErrNotFound, ""},
		{"disabled", "", dl("bad/disabled", "config.json"), 403, "", compat.ReasonDisabled, ErrDisabled, "Access to this resource is disabled."},
		{"invalid token", "hf_revoked", info("acme/tiny", ""), 401, "", "", ErrUnauthorized, "Invalid credentials in Authorization header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.Token = tt.token }, smallModel("acme/tiny"), gated, disabled, private)
			e.hub.SetToken("hf_granted")
			e.hub.RejectToken("hf_revoked")
			err := tt.call(e.c, e.hub)
			var he *Error
			if !errors.As(err, &he) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if he.Status != tt.status || he.Code != tt.code || he.Reason() != tt.reason || reasonOf(err) != tt.reason {
				t.Fatalf("got status %d code %q reason %q, want %d %q %q", he.Status, he.Code, he.Reason(), tt.status, tt.code, tt.reason)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.sentinel)
			}
			for _, other := range []error{ErrGated, ErrNotFound, ErrDisabled, ErrUnauthorized, ErrRateLimited} {
				if other != tt.sentinel && errors.Is(err, other) {
					t.Errorf("also matches %v", other)
				}
			}
			if !strings.Contains(he.Message, tt.message) || !strings.Contains(err.Error(), he.Message) {
				t.Errorf("message %q / %q, want the Hub's %q", he.Message, err.Error(), tt.message)
			}
		})
	}
}

func TestRateLimitedError(t *testing.T) {
	e := newEnv(t, nil, smallModel("acme/tiny"))
	e.hub.Fault("/api/models/", hubtest.Status429(1).Times(-1))
	_, err := e.c.ModelInfo(context.Background(), "acme/tiny", "")
	if !errors.Is(err, ErrRateLimited) || reasonOf(err) != "" {
		t.Fatalf("err = %v", err)
	}
	if w := e.waits.all(); len(w) != maxTries-1 || w[0] != 2*time.Second {
		t.Fatalf("waits %v", w)
	}
}

// The client slows down when the RateLimit headers say the budget is nearly
// spent, before the Hub answers 429.
func TestRateLimitPacing(t *testing.T) {
	var hooked int
	e := newEnv(t, func(o *Options) { o.OnRateLimitWait = func(time.Duration) { hooked++ } }, smallModel("acme/tiny"))
	e.hub.SetRateLimit("api", 20, 300*time.Second)
	for range 20 {
		if _, err := e.c.ModelInfo(context.Background(), "acme/tiny", ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range e.hub.Requests() {
		if r.Status == 429 {
			t.Fatal("hit 429")
		}
	}
	w := e.waits.all()
	if len(w) == 0 || hooked != len(w) {
		t.Fatalf("no pacing waits (%v, hook %d)", w, hooked)
	}
	for _, d := range w {
		if d <= 0 || d > 301*time.Second {
			t.Errorf("wait %v out of range", d)
		}
	}
	// Budget spent: the next request waits for the reset (+1 s) instead of
	// drawing a 429.
	_, _ = e.c.ModelInfo(context.Background(), "acme/tiny", "")
	w = e.waits.all()
	if last := w[len(w)-1]; last < 290*time.Second {
		t.Errorf("last wait %v, want the window's reset", last)
	}
}

func TestContextCancelDuringBackoff(t *testing.T) {
	tests := []struct {
		name  string
		fault hubtest.Fault
	}{
		{"5xx backoff", hubtest.Status5xx(503).Times(-1)},
		{"429 wait", hubtest.Status429(3600).Times(-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := hubtest.New(t, smallModel("acme/tiny"))
			h.Fault("/api/models/", tt.fault)
			c, err := New(Options{Endpoint: h.URL(), Backoff: func(int) time.Duration { return time.Hour }})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err = c.ModelInfo(ctx, "acme/tiny", "")
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want the context's", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("returned after %v", d)
			}
		})
	}
}

func TestContextCancelDuringDownload(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Sleep = nil }, smallModel("acme/tiny"))
	e.hub.Fault("/lfs/", hubtest.Slow(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := e.c.Download(ctx, "acme/tiny", e.hub.SHA("acme/tiny"), smallFiles)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

// The token reaches the Hub only: never logs, errors, or the CDN, even when
// a server echoes it back.
func TestTokenHygiene(t *testing.T) {
	const token = "hf_SuperSecretToken123"
	gated := smallModel("meta/gated")
	gated.Gated = "manual"
	e := newEnv(t, func(o *Options) { o.Token = token }, smallModel("acme/tiny"), gated)
	e.hub.Fault("/api/models", hubtest.Status5xx(503))
	e.hub.Fault("/lfs/", hubtest.Truncate(10))
	ctx := context.Background()
	var errs []error
	if _, err := e.c.ListModels(ctx, ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Download(ctx, "acme/tiny", e.hub.SHA("acme/tiny"), smallFiles); err != nil {
		t.Fatal(err)
	}
	_, err := e.c.Download(ctx, "meta/gated", e.hub.SHA("meta/gated"), []string{"config.json"})
	errs = append(errs, err)

	// A server that echoes the Authorization header into its error.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Error-Message", "bad header: "+r.Header.Get("Authorization"))
		w.Header().Set("X-Request-Id", r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer echo.Close()
	c2, _ := New(Options{Endpoint: echo.URL, Token: token, Logger: e.c.log})
	_, err = c2.ModelInfo(ctx, "acme/tiny", "")
	errs = append(errs, err)

	for _, err := range errs {
		if err == nil || strings.Contains(err.Error(), token) {
			t.Errorf("error carries the token (or is nil): %v", err)
		}
	}
	if logs := e.logs.String(); logs == "" || strings.Contains(logs, token) {
		t.Errorf("logs carry the token (or are empty):\n%s", logs)
	}
	for _, r := range e.hub.Requests() {
		if r.Server == "cdn" && r.Authorization != "" {
			t.Errorf("CDN got Authorization: %+v", r)
		}
		if r.Server == "hub" && r.Authorization != "Bearer "+token {
			t.Errorf("hub request without the token: %+v", r)
		}
	}
	var resumed int
	for _, r := range e.requests("cdn", "/lfs/") {
		if r.Range == "bytes=10-" && r.Status == 206 {
			resumed++
		}
	}
	if w := e.waits.all(); resumed != 1 || len(w) < 2 {
		t.Errorf("%d resumes, waits %v: want the 503 retried and the transfer resumed once", resumed, w)
	}
}

// A redirect to another port of the same host is another origin: Go's own
// redirect logic would forward the token there; ours must not.
func TestTokenNotForwardedToOtherPort(t *testing.T) {
	var got string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		w.Write([]byte(`{"id":"x/y","sha":"` + strings.Repeat("a", 40) + `"}`))
	}))
	defer other.Close()
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer hub.Close()
	c, _ := New(Options{Endpoint: hub.URL, Token: "hf_tok"})
	if _, err := c.ModelInfo(context.Background(), "x/y", ""); err != nil {
		t.Fatal(err)
	}
	if got != "" {
		t.Fatalf("Authorization %q sent to another origin", got)
	}
}

func TestNew(t *testing.T) {
	for _, ep := range []string{"ftp://x", "not a url", "https://user:pw@huggingface.co", "https://huggingface.co?x=1"} {
		if _, err := New(Options{Endpoint: ep}); err == nil {
			t.Errorf("endpoint %q accepted", ep)
		}
	}
	c, err := New(Options{Endpoint: "https://hf-mirror.example/"})
	if err != nil || c.Endpoint() != "https://hf-mirror.example" {
		t.Fatalf("%v %v", c, err)
	}
	c, _ = New(Options{})
	if c.Endpoint() != DefaultEndpoint || c.conc != DefaultConcurrency || c.maxFile != DefaultMaxFileBytes {
		t.Fatalf("defaults %+v", c)
	}
	if _, err := New(Options{Token: "a b"}); err == nil {
		t.Error("token with a space accepted")
	}
	// The caller's client is not modified.
	hc := &http.Client{}
	if _, err := New(Options{HTTPClient: hc}); err != nil || hc.CheckRedirect != nil {
		t.Error("the caller's http.Client was modified")
	}
}

func TestDefaultBackoff(t *testing.T) {
	for attempt, base := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 9: 8 * time.Second} {
		for range 20 {
			if d := defaultBackoff(attempt); d < base*3/4 || d > base*5/4 {
				t.Fatalf("attempt %d: %v not within ±25%% of %v", attempt, d, base)
			}
		}
	}
}
