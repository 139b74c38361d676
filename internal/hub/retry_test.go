package hub

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRetryable: which answers are worth sending the request again for:
// a request timeout, a rate limit, and server errors other than 501.
func TestRetryable(t *testing.T) {
	for status, want := range map[int]bool{
		408: true, 429: true, 500: true, 502: true, 503: true, 504: true, 599: true,
		501: false, 400: false, 401: false, 403: false, 404: false, 410: false, 499: false,
	} {
		if got := retryable(status); got != want {
			t.Errorf("retryable(%d) = %v, want %v", status, got, want)
		}
	}
}

// countingServer answers every request with answer, counting them.
func countingServer(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, func() int) {
	var mu sync.Mutex
	n := 0
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(s.Close)
	return s, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// TestNetworkErrorTries: a connection that always breaks is tried
// maxTries (5) times, with a backoff before each retry, and the error
// says so.
func TestNetworkErrorTries(t *testing.T) {
	s, count := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	var waits []time.Duration
	c, err := New(Options{
		Endpoint:   s.URL,
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		Backoff:    func(attempt int) time.Duration { return time.Duration(attempt) * time.Millisecond },
		Sleep: func(ctx context.Context, d time.Duration) error {
			waits = append(waits, d)
			return ctx.Err()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ModelInfo(context.Background(), "x/y", "")
	if err == nil || !strings.Contains(err.Error(), "(after 5 tries)") {
		t.Fatalf("err %v, want the network error after 5 tries", err)
	}
	if n := count(); n != maxTries {
		t.Errorf("%d requests, want %d", n, maxTries)
	}
	if len(waits) != maxTries-1 || waits[0] != time.Millisecond || waits[3] != 4*time.Millisecond {
		t.Errorf("waits %v, want 1..4 ms", waits)
	}
}

// TestBadRequestIsAnError: a 400 is the Hub's error answer, sent once.
func TestBadRequestIsAnError(t *testing.T) {
	s, count := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Error-Message", "bad revision")
		w.WriteHeader(http.StatusBadRequest)
	})
	c, err := New(Options{Endpoint: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ModelInfo(context.Background(), "x/y", "")
	var he *Error
	if !errors.As(err, &he) || he.Status != 400 || he.Message != "bad revision" {
		t.Fatalf("err %v, want the 400 as *Error", err)
	}
	if n := count(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestRetryLog: a retry is logged with the answer's status, or with the
// network error when there was no answer.
func TestRetryLog(t *testing.T) {
	fail := true
	var mu sync.Mutex
	s, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		f := fail
		fail = false
		mu.Unlock()
		if !f {
			w.Write([]byte(`{"id":"x/y"}`))
			return
		}
		if r.URL.Query().Get("drop") != "" {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	for _, tt := range []struct {
		query     string
		want, not string
	}{
		{"", "status=503", "error="},
		{"drop=1", "error=", "status="},
	} {
		mu.Lock()
		fail = true
		mu.Unlock()
		logs := &syncBuffer{}
		c, err := New(Options{
			Endpoint:   s.URL,
			HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
			Logger:     slog.New(slog.NewTextHandler(logs, nil)),
			Backoff:    func(int) time.Duration { return time.Millisecond },
			Sleep:      func(ctx context.Context, d time.Duration) error { return ctx.Err() },
		})
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(s.URL + "/api/models/x/y?" + tt.query)
		var v map[string]any
		if _, err := c.getJSON(context.Background(), u, &v); err != nil {
			t.Fatal(err)
		}
		line := logs.String()
		if !strings.Contains(line, "hub: retrying") || !strings.Contains(line, tt.want) || strings.Contains(line, tt.not) {
			t.Errorf("%q: log %q, want %s and no %s", tt.query, line, tt.want, tt.not)
		}
	}
}

// TestLocation: a redirect leads to an http(s) URL, resolved against the
// request's.
func TestLocation(t *testing.T) {
	from, _ := url.Parse("https://huggingface.co/api/models/a/b")
	for _, tt := range []struct {
		loc, want string // want "" for an error
	}{
		{"/api/models/c/d", "https://huggingface.co/api/models/c/d"},
		{"https://cdn.example/x?sig=1", "https://cdn.example/x?sig=1"},
		{"http://mirror.example/y", "http://mirror.example/y"},
		{"", ""},
		{"ftp://files.example/x", ""},
		{"file:///etc/passwd", ""},
		{"javascript:alert(1)", ""},
		{"http://[::1", ""},
	} {
		resp := &http.Response{StatusCode: http.StatusFound, Header: http.Header{}}
		if tt.loc != "" {
			resp.Header.Set("Location", tt.loc)
		}
		to, err := location(resp, from)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("Location %q accepted: %v", tt.loc, to)
		case tt.want != "" && (err != nil || to.String() != tt.want):
			t.Errorf("Location %q: %v, %v; want %s", tt.loc, to, err, tt.want)
		}
	}
}

// TestRateLimitWaitHook: OnRateLimitWait hears of the waits a 429 caused,
// whatever told the wait (the backoff when the Hub said nothing), and of
// no other retry's.
func TestRateLimitWaitHook(t *testing.T) {
	for _, tt := range []struct {
		name       string
		status     int
		retryAfter string
		wait       time.Duration
		hooked     bool
	}{
		{"a bare 429", 429, "", 3 * time.Millisecond, true},
		{"a 429 with Retry-After", 429, "2", 3 * time.Second, true},
		{"a bare 503", 503, "", 3 * time.Millisecond, false},
		{"a 503 with Retry-After", 503, "2", 3 * time.Second, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first := true
			s, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				if first {
					first = false
					if tt.retryAfter != "" {
						w.Header().Set("Retry-After", tt.retryAfter)
					}
					w.WriteHeader(tt.status)
					return
				}
				w.Write([]byte(`{"id":"x/y"}`))
			})
			var waits, hooked []time.Duration
			c, err := New(Options{
				Endpoint:        s.URL,
				Backoff:         func(int) time.Duration { return 3 * time.Millisecond },
				Sleep:           func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return ctx.Err() },
				OnRateLimitWait: func(d time.Duration) { hooked = append(hooked, d) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.ModelInfo(context.Background(), "x/y", ""); err != nil {
				t.Fatal(err)
			}
			if len(waits) != 1 || waits[0] != tt.wait {
				t.Errorf("waits %v, want [%v]", waits, tt.wait)
			}
			if tt.hooked != (len(hooked) == 1) || len(hooked) > 1 || tt.hooked && hooked[0] != tt.wait {
				t.Errorf("OnRateLimitWait heard %v, want it told: %v", hooked, tt.hooked)
			}
		})
	}
}
