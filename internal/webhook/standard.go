package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers (https://www.standardwebhooks.com), sent
// beside SignatureHeader: webhook-signature signs the delivery's id and
// the try's time with the body, so a captured delivery cannot be replayed
// once its timestamp is past the receiver's tolerance.
const (
	// IDHeader is the delivery's id, the same on every try (DeliveryHeader's).
	IDHeader = "webhook-id"
	// TimestampHeader is the try's time in Unix seconds.
	TimestampHeader = "webhook-timestamp"
	// StandardSignatureHeader is "v1," and the base64 HMAC-SHA256 of
	// "<id>.<timestamp>.<body>" with the webhook's signing key
	// (watch.Webhook.SigningKey).
	StandardSignatureHeader = "webhook-signature"
	// Tolerance is how far from the receiver's clock a timestamp may be
	// (Standard Webhooks' default): VerifyStandard refuses one further off.
	Tolerance = 5 * time.Minute
)

// SignStandard is the value of StandardSignatureHeader for the delivery
// id sent at Unix time ts with body.
func SignStandard(key []byte, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Errors of VerifyStandard.
var (
	ErrMissingHeaders = errors.New("webhook-id, webhook-timestamp or webhook-signature is missing")
	ErrStale          = errors.New("webhook-timestamp is not within the tolerance of now")
	ErrNoSignature    = errors.New("no v1 signature matches")
)

// VerifyStandard checks a delivery as a receiver should: its timestamp
// within Tolerance of now, and one of the space-separated signatures of
// h's StandardSignatureHeader made with key over id, timestamp and body
// (compared in constant time).
func VerifyStandard(key []byte, h http.Header, body []byte, now time.Time) error {
	id, tsText, sigs := h.Get(IDHeader), h.Get(TimestampHeader), h.Get(StandardSignatureHeader)
	if id == "" || tsText == "" || sigs == "" {
		return ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return ErrStale
	}
	if d := now.Sub(time.Unix(ts, 0)); d > Tolerance || d < -Tolerance {
		return ErrStale
	}
	want := []byte(SignStandard(key, id, ts, body))
	for _, sig := range strings.Fields(sigs) {
		if strings.HasPrefix(sig, "v1,") && hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrNoSignature
}
