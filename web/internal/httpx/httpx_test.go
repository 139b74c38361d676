package httpx

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestClientIP(t *testing.T) {
	p, err := ParseProxies([]string{"10.0.0.0/8", "192.168.1.1", "::1"})
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
	if _, err := ParseProxies([]string{"proxy.example"}); err == nil {
		t.Error("a host name was accepted as a trusted proxy")
	}
}

func TestValidHost(t *testing.T) {
	for h, want := range map[string]bool{
		"compat.example.org": true, "localhost:8080": true, "127.0.0.1": true, "[::1]:8080": true, "[2001:db8::1]": true,
		"": false, "evil.example/<script>": false, "javascript:alert(1)": false, "a b": false, "host:": false,
		"host:99999999": false, "::1": false, "[::1": false, "user@host": false, "-bad.example": false, "x..y": false,
	} {
		if got := ValidHost(h); got != want {
			t.Errorf("validHost(%q) = %v, want %v", h, got, want)
		}
	}
}

// ValidHost at its edges: every letter and digit range's first and last
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
		if got := ValidHost(h); got != want {
			t.Errorf("validHost(%q) (%d characters) = %v, want %v", h, len(h), got, want)
		}
	}
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
		if got := ClientKey(netip.MustParseAddr(c.addr), c.bits); got != c.want {
			t.Errorf("clientKey(%s, /%d) = %q, want %q", c.addr, c.bits, got, c.want)
		}
	}
}

func TestRateLimiterRefills(t *testing.T) {
	now := time.Unix(0, 0)
	l := NewRateLimiter(2, 2, func() time.Time { return now })
	for i := 0; i < 2; i++ {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatal("burst refused")
		}
	}
	ok, wait := l.Allow("a")
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("over burst: %v %v", ok, wait)
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Fatal("another client is limited")
	}
	now = now.Add(500 * time.Millisecond)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("no refill")
	}
	now = now.Add(time.Hour)
	l.Allow("c") // sweeps
	if len(l.buckets) != 1 {
		t.Errorf("idle buckets kept: %d", len(l.buckets))
	}
}

// The sweep runs at most once a minute (and again at exactly a minute), and
// forgets exactly the buckets idle long enough to have refilled: burst/rate
// seconds (10 tokens at 2 a second: 5 s).
func TestRateLimiterSweepEdges(t *testing.T) {
	t0 := time.Unix(1000, 0)
	now := t0
	l := NewRateLimiter(2, 10, func() time.Time { return now })
	at := func(d time.Duration, key string) {
		now = t0.Add(d)
		if ok, _ := l.Allow(key); !ok {
			t.Fatalf("%s refused", key)
		}
	}
	keys := func() []string { return slices.Sorted(maps.Keys(l.buckets)) }
	at(0, "a") // the first request sweeps (nothing yet)
	at(30*time.Second, "b")
	if got := keys(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("within a minute of the last sweep: %v, want a and b", got)
	}
	at(time.Minute, "c") // a minute after the last sweep: a and b idle for 60 s and 30 s, both full again
	if got := keys(); !slices.Equal(got, []string{"c"}) {
		t.Errorf("a minute after the last sweep: %v, want c alone", got)
	}
	at(2*time.Minute-5*time.Second, "d")
	at(2*time.Minute-5*time.Second+time.Nanosecond, "e")
	at(2*time.Minute, "f") // d idle exactly 5 s (full again), e a nanosecond less
	if got := keys(); !slices.Equal(got, []string{"e", "f"}) {
		t.Errorf("after the second sweep: %v, want e and f", got)
	}
}
