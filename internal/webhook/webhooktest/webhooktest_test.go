package webhooktest_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/internal/webhook"
	"github.com/google-pytorch/torchtpu-scanner/internal/webhook/webhooktest"
)

const secret = "receiver-secret-0123456789"

// post sends body to r as the sender would, signed with key.
func post(t *testing.T, r *webhooktest.Receiver, key string, body []byte) (int, error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, r.URL(), bytes.NewReader(body))
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.SignatureHeader, webhook.Sign([]byte(key), body))
	req.Header.Set(webhook.DeliveryHeader, "d1")
	req.Header.Set(webhook.IDHeader, "d1")
	req.Header.Set(webhook.TimestampHeader, strconv.FormatInt(ts, 10))
	req.Header.Set(webhook.StandardSignatureHeader, webhook.SignStandard([]byte(key), "d1", ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestReceiver: a delivery the sender's code signs is accepted and counted
// with no complaint; one signed with another secret is counted and named
// bad; failing answers 503, down refuses, and a hang holds until release.
func TestReceiver(t *testing.T) {
	r := webhooktest.New(t, secret)
	body := []byte(`{"text": "org/m: fail", "url": "https://x/models/org/m", "event": {"id": 7}}`)
	if code, err := post(t, r, secret, body); err != nil || code != http.StatusNoContent {
		t.Fatalf("a good delivery: %d, %v", code, err)
	}
	if got := r.Counts(); got[7] != 1 || len(r.Bad()) != 0 || len(r.Deliveries()) != 1 {
		t.Fatalf("counts %v, bad %v", got, r.Bad())
	}
	if _, err := post(t, r, "another-secret-0123456789", body); err != nil {
		t.Fatal(err)
	}
	if bad := r.Bad(); len(bad) != 2 {
		t.Errorf("a wrongly signed delivery: bad %v, want both signatures named", bad)
	}
	r.Fail(true)
	if code, _ := post(t, r, secret, body); code != http.StatusServiceUnavailable {
		t.Errorf("failing: %d", code)
	}
	r.Fail(false)
	r.Hang()
	done := make(chan int, 1)
	go func() { code, _ := post(t, r, secret, body); done <- code }()
	testenv.Eventually(t, "the held delivery", 5*time.Second, func() bool { return r.Tries() == 4 })
	r.Release()
	if code := <-done; code != http.StatusServiceUnavailable || r.Counts()[7] != 2 {
		t.Errorf("a released delivery: %d, counts %v", code, r.Counts())
	}
	r.Down()
	if _, err := post(t, r, secret, body); err == nil {
		t.Error("a delivery to a receiver that is down got through")
	}
	r.Up()
	if code, err := post(t, r, secret, body); err != nil || code != http.StatusNoContent || r.Counts()[7] != 3 {
		t.Errorf("up again: %d, %v, counts %v", code, err, r.Counts())
	}
}
