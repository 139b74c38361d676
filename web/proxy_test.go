package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// TestForwardedHeaders: without trusted proxies X-Forwarded-* change
// nothing (the connection and its Host decide); from a trusted proxy they
// set the feed's and the badge snippets' origin, but only ever to an http
// or https URL with a valid host. Such responses say Vary.
func TestForwardedHeaders(t *testing.T) {
	forged := map[string]string{"X-Forwarded-Proto": "javascript:alert(1)//", "X-Forwarded-Host": "evil.example"}
	tests := []struct {
		name    string
		trusted []string // app.Test's connections come from 0.0.0.0
		header  map[string]string
		want    string
	}{
		{"no trusted proxy: forged headers ignored", nil, forged, "http://scanner.test/"},
		{"an untrusted client", []string{"10.0.0.0/8"}, forged, "http://scanner.test/"},
		{"a trusted proxy", []string{"0.0.0.0/32"}, map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "compat.example.org"},
			"https://compat.example.org/"},
		{"a trusted proxy's bad scheme falls back to the connection's", []string{"0.0.0.0"}, forged, "http://evil.example/"},
		{"a trusted proxy's bad host falls back to the Host header", []string{"0.0.0.0"},
			map[string]string{"X-Forwarded-Host": "evil.example/<script>", "X-Forwarded-Proto": "HTTPS"}, "https://scanner.test/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, 2, 2, Config{TrustedProxies: tt.trusted})
			for _, path := range []string{"/feed.json", "/models/" + ts.ids[0]} {
				h := map[string]string{"Host": "scanner.test"}
				for k, v := range tt.header {
					h[k] = v
				}
				r := ts.do(t, http.MethodGet, path, h)
				if r.status != http.StatusOK {
					t.Fatalf("%s: %d", path, r.status)
				}
				if !strings.Contains(r.body, tt.want) {
					t.Errorf("%s: no URL under %s in %.400s", path, tt.want, r.body)
				}
				for _, bad := range []string{"javascript:", "evil.example/<", "\"evil.example"} {
					if strings.Contains(r.body, bad) {
						t.Errorf("%s: holds %q", path, bad)
					}
				}
				if tt.want != "http://evil.example/" && strings.Contains(r.body, "evil.example") {
					t.Errorf("%s: the forged host got in", path)
				}
				vary := r.header.Get("Vary")
				for _, k := range []string{"Host", "X-Forwarded-Host", "X-Forwarded-Proto"} {
					if !strings.Contains(vary, k) {
						t.Errorf("%s: Vary %q lacks %s", path, vary, k)
					}
				}
			}
		})
	}
	t.Run("a public URL decides, whatever the headers", func(t *testing.T) {
		ts := newTestServer(t, 1, 1, Config{PublicURL: "https://compat.example.org", TrustedProxies: []string{"0.0.0.0/0"}})
		r := ts.do(t, http.MethodGet, "/feed.json", map[string]string{"X-Forwarded-Host": "evil.example"})
		if !strings.Contains(r.body, "https://compat.example.org/") || strings.Contains(r.body, "evil") {
			t.Errorf("feed: %.300s", r.body)
		}
	})
}

// TestRateLimitPerClientBehindAProxy: without trusted proxies every
// request from one connection address shares a bucket, whatever
// X-Forwarded-For says; behind a trusted proxy each client has its own,
// and a client cannot get a fresh one by forging the header.
func TestRateLimitPerClientBehindAProxy(t *testing.T) {
	get := func(ts *testServer, xff string) int {
		return ts.do(t, http.MethodGet, "/api/v1/summary", map[string]string{"X-Forwarded-For": xff}).status
	}
	t.Run("no trusted proxy: one bucket per connection address", func(t *testing.T) {
		ts := newTestServer(t, 1, 1, Config{APIRate: 0.001, APIBurst: 2})
		codes := []int{get(ts, "1.1.1.1"), get(ts, "2.2.2.2"), get(ts, "3.3.3.3")}
		if codes[2] != http.StatusTooManyRequests {
			t.Errorf("statuses %v: forged X-Forwarded-For got fresh buckets", codes)
		}
	})
	t.Run("behind a trusted proxy: one bucket per client", func(t *testing.T) {
		ts := newTestServer(t, 1, 1, Config{APIRate: 0.001, APIBurst: 2, TrustedProxies: []string{"0.0.0.0/32"}})
		for _, ip := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"} {
			if code := get(ts, ip); code != http.StatusOK {
				t.Errorf("client %s: %d, want its own bucket", ip, code)
			}
		}
		// One client forging what comes before its address: still one bucket.
		codes := []int{get(ts, "6.6.6.1, 203.0.113.5"), get(ts, "6.6.6.2, 203.0.113.5"), get(ts, "6.6.6.3, 203.0.113.5")}
		if codes[0] != http.StatusOK || codes[2] != http.StatusTooManyRequests {
			t.Errorf("statuses %v, want 200 then 429 for one client", codes)
		}
	})
}

// New refuses an IPv6 client prefix shorter than the least it takes.
func TestIPv6ClientPrefixBounds(t *testing.T) {
	if _, err := New(Config{Store: storetest.MustOpen(t), IPv6ClientPrefix: 16}); err == nil {
		t.Error("an IPv6 client prefix of /16 was accepted")
	}
}

// TestPerClientLimitsCountAnIPv6Slash64AsOneClient: behind a trusted proxy
// (the test's way to choose the client's address), many addresses of one
// IPv6 /64 share the API's bucket and the test requests' hourly share,
// while another /64 and each IPv4 address have their own;
// IPv6ClientPrefix 128 counts each IPv6 address alone.
func TestPerClientLimitsCountAnIPv6Slash64AsOneClient(t *testing.T) {
	get := func(ts *testServer, ip string) int {
		return ts.do(t, http.MethodGet, "/api/v1/summary", map[string]string{"X-Forwarded-For": ip}).status
	}
	ts := newTestServer(t, 1, 1, Config{APIRate: 0.001, APIBurst: 3, TrustedProxies: []string{"0.0.0.0/32"}})
	var codes []int
	for i := 1; i <= 5; i++ {
		codes = append(codes, get(ts, fmt.Sprintf("2001:db8:1:2::%x", i*0x1111)))
	}
	if fmt.Sprint(codes) != "[200 200 200 429 429]" {
		t.Errorf("five addresses of one /64: %v; want one bucket of 3", codes)
	}
	for _, ip := range []string{"2001:db8:1:3::1", "198.51.100.1", "198.51.100.2", "::ffff:198.51.100.3"} {
		if code := get(ts, ip); code != http.StatusOK {
			t.Errorf("%s: %d; want a bucket of its own", ip, code)
		}
	}
	ts = newTestServer(t, 1, 1, Config{APIRate: 0.001, APIBurst: 3, TrustedProxies: []string{"0.0.0.0/32"}, IPv6ClientPrefix: 128})
	for i := 1; i <= 5; i++ {
		if code := get(ts, fmt.Sprintf("2001:db8:1:2::%x", i)); code != http.StatusOK {
			t.Errorf("/128: address %d: %d; want a bucket each", i, code)
		}
	}

	// Test requests: 3 an hour from one /64, whichever of its addresses asks.
	as, _ := askServer(t, Config{RequestRate: 3, TrustedProxies: []string{"0.0.0.0/32"}}, 100)
	codes = nil
	for i := range 6 {
		codes = append(codes, as.ask(t, fmt.Sprintf("v6/made-up-%d", i), map[string]string{"X-Forwarded-For": fmt.Sprintf("2001:db8:9:9::%d", i+1)}).status)
	}
	if codes[2] == 429 || codes[3] != 429 || codes[5] != 429 {
		t.Errorf("six test requests from six addresses of one /64: %v; want three, then 429", codes)
	}
	if r := as.ask(t, "v6/other", map[string]string{"X-Forwarded-For": "2001:db8:9:a::1"}); r.status == 429 {
		t.Errorf("another /64 was limited: %d %s", r.status, r.body)
	}
}
