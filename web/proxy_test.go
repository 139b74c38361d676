package web

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

func TestClientIP(t *testing.T) {
	p, err := parseProxies([]string{"10.0.0.0/8", "192.168.1.1", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		remote string
		xff    []string
		want   string
	}{
		{"a direct client: its headers are ignored", "203.0.113.9", []string{"1.2.3.4"}, "203.0.113.9"},
		{"through a trusted proxy", "10.1.2.3", []string{"198.51.100.7"}, "198.51.100.7"},
		{"the client's own X-Forwarded-For is not believed", "10.1.2.3", []string{"6.6.6.6, 198.51.100.7"}, "198.51.100.7"},
		{"two trusted proxies", "192.168.1.1", []string{"198.51.100.7, 10.9.9.9"}, "198.51.100.7"},
		{"several header lines", "10.1.2.3", []string{"6.6.6.6", "198.51.100.7"}, "198.51.100.7"},
		{"with a port", "10.1.2.3", []string{"198.51.100.7:5555"}, "198.51.100.7"},
		{"IPv6 through the IPv6 proxy", "::1", []string{"2001:db8::7"}, "2001:db8::7"},
		{"IPv4-mapped proxy address", "::ffff:10.1.2.3", []string{"198.51.100.7"}, "198.51.100.7"},
		{"a trusted proxy without the header", "10.1.2.3", nil, "10.1.2.3"},
		{"junk stops the walk at the last known hop", "10.1.2.3", []string{"198.51.100.7, junk"}, "10.1.2.3"},
		{"only trusted hops: the leftmost", "10.1.2.3", []string{"10.0.0.5, 10.0.0.6"}, "10.0.0.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.clientIP(netip.MustParseAddr(tt.remote), tt.xff)
			if got.String() != tt.want {
				t.Errorf("clientIP(%s, %q) = %s, want %s", tt.remote, tt.xff, got, tt.want)
			}
		})
	}
	if _, err := parseProxies([]string{"proxy.example"}); err == nil {
		t.Error("a host name was accepted as a trusted proxy")
	}
}

func TestValidHost(t *testing.T) {
	for h, want := range map[string]bool{
		"compat.example.org": true, "localhost:8080": true, "127.0.0.1": true, "[::1]:8080": true, "[2001:db8::1]": true,
		"": false, "evil.example/<script>": false, "javascript:alert(1)": false, "a b": false, "host:": false,
		"host:99999999": false, "::1": false, "[::1": false, "user@host": false, "-bad.example": false, "x..y": false,
	} {
		if got := validHost(h); got != want {
			t.Errorf("validHost(%q) = %v, want %v", h, got, want)
		}
	}
}

// validHost at its edges: every letter and digit range's first and last
// character, a port with 0 and 9, a 63-character label (64 is too long) and
// a host of exactly 262 characters (263 is too long).
func TestValidHostEdges(t *testing.T) {
	l63 := strings.Repeat("a", 63)
	name256 := strings.Join([]string{l63, l63, l63, strings.Repeat("b", 62), "c"}, ".") // 256 characters
	for h, want := range map[string]bool{
		"a.z.A.Z.0.9.example.org": true, "example.org:8090": true, "example.org:9": true, "example.org:0": true,
		"`.example.org": false, "{.example.org": false, "@.example.org": false, "[.example.org": false, "/.example.org": false,
		"example.org:8/": false, "example.org:8;": false,
		l63 + ".example.org": true, l63 + "a.example.org": false,
		name256 + ":12345": true, name256 + ":123456": false, name256 + "a:12345": false,
	} {
		if got := validHost(h); got != want {
			t.Errorf("validHost(%q) (%d characters) = %v, want %v", h, len(h), got, want)
		}
	}
}

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

// TestClientKey: the one key of every per-client limit. IPv4 counts per
// address (an IPv4-mapped IPv6 address is its IPv4 address); IPv6 by its
// first bits, a /64 by default. Expectations are written out by hand.
func TestClientKey(t *testing.T) {
	for _, c := range []struct {
		addr string
		bits int
		want string
	}{
		{"203.0.113.5", 64, "203.0.113.5"},
		{"203.0.113.6", 64, "203.0.113.6"}, // a neighbour is another client
		{"::ffff:203.0.113.5", 64, "203.0.113.5"},
		{"203.0.113.5", 128, "203.0.113.5"},
		{"2001:db8:1:2::1", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", 64, "2001:db8:1:3::/64"},
		{"2001:db8:1:2:3:4:5:6", 48, "2001:db8:1::/48"},
		{"2001:db8:1:2:3:4:5:6", 56, "2001:db8:1::/56"},
		{"2001:db8:1:2:3:4:5:6", 128, "2001:db8:1:2:3:4:5:6/128"},
		{"fe80::1%eth0", 64, "fe80::/64"},
		{"::1", 64, "::/64"},
	} {
		if got := clientKey(netip.MustParseAddr(c.addr), c.bits); got != c.want {
			t.Errorf("clientKey(%s, /%d) = %q, want %q", c.addr, c.bits, got, c.want)
		}
	}
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
