package web

import (
	"net/url"
	"strings"
	"testing"
)

// TestModelIDRule checks that the routes take their idea of a Hub id from
// compat.ValidateModelID: ids the Hub refuses are not looked up at all,
// valid ids the store lacks are looked up (and not known).
func TestModelIDRule(t *testing.T) {
	ts := newTestServer(t, 1, 1, Config{})
	tests := []struct {
		id    string
		valid bool
	}{
		{"gpt2", true},
		{"Qwen/Qwen3-0.6B", true},
		{"a.git/b", true},
		{"_x/y_", true},
		{"-a/b", false},
		{"a-/b", false},
		{"a--b/c", false},
		{"a/b.git", false},
		{"a/.b", false},
		{strings.Repeat("a", 97), false},
	}
	for _, tt := range tests {
		r := ts.get(t, "/models/"+tt.id)
		looked := strings.Contains(r.body, "does not know")
		if r.status != 404 || looked != tt.valid {
			t.Errorf("/models/%s: %d, looked up %v; want 404, looked up %v", tt.id, r.status, looked, tt.valid)
		}
	}
	for org, want := range map[string]int{"org00": 200, "a.git": 200, "-a": 400, "a--b": 400, "a/b": 400} {
		if r := ts.get(t, "/api/v1/models?org="+url.QueryEscape(org)); r.status != want {
			t.Errorf("?org=%s: %d, want %d", org, r.status, want)
		}
	}
}
