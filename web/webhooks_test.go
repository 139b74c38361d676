package web

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/webhook"
)

type fakeWebhooks []webhook.Status

func (f fakeWebhooks) Status(context.Context) ([]webhook.Status, error) { return f, nil }

// TestAPIWebhooksIsTheOperators: GET /api/v1/webhooks shows each webhook's
// deliveries and refusals to the admin token's holder only; without
// webhooks it is an empty list.
func TestAPIWebhooksIsTheOperators(t *testing.T) {
	const token = "s3cret-token"
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	hooks := fakeWebhooks{{Webhook: "#1", Pending: 1, Refused: 1, NextTry: &at, LastError: "answered 503 Service Unavailable",
		RecentRefused: []webhook.RefusedDelivery{{ID: "ab-7", Event: 7, At: at, Error: "answered 400 Bad Request"}}}}
	ts := newTestServer(t, 0, 0, Config{AdminToken: token, Webhooks: hooks})
	for auth, want := range map[string]int{"": 401, "Bearer wrong": 403} {
		h := map[string]string{}
		if auth != "" {
			h["Authorization"] = auth
		}
		if r := ts.do(t, "GET", "/api/v1/webhooks", h); r.status != want {
			t.Errorf("Authorization %q: %d %s, want %d", auth, r.status, r.body, want)
		}
	}
	r := ts.do(t, "GET", "/api/v1/webhooks", map[string]string{"Authorization": "Bearer " + token})
	var body struct {
		Webhooks []webhook.Status `json:"webhooks"`
	}
	if err := json.Unmarshal([]byte(r.body), &body); r.status != 200 || err != nil || len(body.Webhooks) != 1 ||
		body.Webhooks[0].RecentRefused[0].Error != "answered 400 Bad Request" || body.Webhooks[0].OldestPending != nil {
		t.Errorf("%d %s (%v)", r.status, r.body, err)
	}
	if r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", r.header.Get("Cache-Control"))
	}
	// Without an admin token the route is off; without webhooks, an empty list.
	if r := newTestServer(t, 0, 0, Config{Webhooks: hooks}).do(t, "GET", "/api/v1/webhooks", map[string]string{"Authorization": "Bearer x"}); r.status != 403 {
		t.Errorf("no admin token: %d %s", r.status, r.body)
	}
	if r := newTestServer(t, 0, 0, Config{AdminToken: token}).do(t, "GET", "/api/v1/webhooks", map[string]string{"Authorization": "Bearer " + token}); r.status != 200 || r.body != `{"webhooks":[]}` {
		t.Errorf("no webhooks: %d %s", r.status, r.body)
	}
}
