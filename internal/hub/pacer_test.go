package hub

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestPacerLowWater: the pacer spreads requests once the requests left are
// at most a tenth of the window's quota (10 without a policy): each waits
// the time to the reset shared among the requests left, one after another.
func TestPacerLowWater(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	const reset = 100 * time.Second
	tests := []struct {
		name    string
		observe []RateLimit
		want    []time.Duration // successive waits, all asked at now
	}{
		{"no policy, 10 left: spread", []RateLimit{{Remaining: 10, Reset: reset}},
			[]time.Duration{0, reset / 11, reset/11 + reset/10}},
		{"no policy, 11 left: one goes at once, then spread", []RateLimit{{Remaining: 11, Reset: reset}},
			[]time.Duration{0, 0, reset / 11}},
		{"50 of 500 left: spread", []RateLimit{{Remaining: 50, Reset: reset, Limit: 500}},
			[]time.Duration{0, reset / 51, reset/51 + reset/50}},
		{"49 of 500 left", []RateLimit{{Remaining: 49, Reset: reset, Limit: 500}},
			[]time.Duration{0, reset / 50, reset/50 + reset/49}},
		{"51 of 500 left", []RateLimit{{Remaining: 51, Reset: reset, Limit: 500}},
			[]time.Duration{0, 0, reset / 51}},
		{"the quota stays known when an answer has no policy",
			[]RateLimit{{Remaining: 400, Reset: reset, Limit: 500}, {Remaining: 50, Reset: reset}},
			[]time.Duration{0, reset / 51}},
		{"spent: wait for the reset and a second", []RateLimit{{Remaining: 0, Reset: reset, Limit: 500}},
			[]time.Duration{reset + time.Second, reset + time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p pacer
			for _, rl := range tt.observe {
				rl.Resource = "api"
				p.observe(rl, now)
			}
			var got []time.Duration
			for range tt.want {
				got = append(got, p.wait("api", now))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("waits %v, want %v", got, tt.want)
			}
		})
	}
}

// TestParseRateLimitBounds: values up to 2^31 are read, larger ones are
// not numbers the Hub sends and are ignored.
func TestParseRateLimitBounds(t *testing.T) {
	for _, tt := range []struct {
		v    string
		ok   bool
		want time.Duration
	}{
		{`"api";r=1;t=2147483648`, true, 2147483648 * time.Second},
		{`"api";r=1;t=2147483649`, false, 0},
	} {
		rl, ok := ParseRateLimit(http.Header{"Ratelimit": {tt.v}})
		if ok != tt.ok || rl.Reset != tt.want {
			t.Errorf("%s: %+v %v, want reset %v %v", tt.v, rl, ok, tt.want, tt.ok)
		}
	}
}

// TestRateLimitPolicy: the quota and window come from the policy item of
// the limited resource, even one that says 0, else from the first item
// that has a quota.
func TestRateLimitPolicy(t *testing.T) {
	for _, tt := range []struct {
		name, policy  string
		limit, window int
	}{
		{"the resource's own item, though it says 0", `"fixed window";"api";q=0;w=0, "fixed window";"pages";q=100;w=60`, 0, 0},
		{"an item without a name", `"fixed window";q=500;w=300`, 500, 300},
		{"the first of items for other resources", `"fixed window";"pages";q=100;w=60, "fixed window";"resolvers";q=3000;w=300`, 100, 60},
	} {
		rl, ok := ParseRateLimit(http.Header{"Ratelimit": {`"api";r=5;t=10`}, "Ratelimit-Policy": {tt.policy}})
		if !ok || rl.Limit != tt.limit || rl.Window != time.Duration(tt.window)*time.Second {
			t.Errorf("%s: %+v %v, want q=%d w=%d", tt.name, rl, ok, tt.limit, tt.window)
		}
	}
}
