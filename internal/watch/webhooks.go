package watch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"unicode"
)

// Limits of the webhooks file.
const (
	MaxWebhooksFileBytes = 1 << 20
	maxWebhooks          = 100
	minSecretBytes       = 16
	maxNameBytes         = 64
)

// Webhook is one endpoint of the webhooks file: where changes that pass
// Filters are POSTed, and the secret their HMAC signature is made with.
// Its String and LogValue name it by Label only: the secret (and a URL
// that may itself be a credential, as a Slack webhook's is) never reaches
// a log.
type Webhook struct {
	// Name labels the endpoint in logs and metrics; default its URL's host.
	Name    string `json:"name,omitempty"`
	URL     string `json:"url"`
	Secret  string `json:"secret"`
	Filters Filter `json:"filters"`
}

// Label is the endpoint's name in logs and metrics: Name, else the URL's host.
func (w Webhook) Label() string {
	if w.Name != "" {
		return w.Name
	}
	if u, err := url.Parse(w.URL); err == nil {
		return u.Host
	}
	return "webhook"
}

// Key identifies the endpoint in the database (its deliveries): a hash of
// its URL, so the store holds no URL.
func (w Webhook) Key() string {
	h := sha256.Sum256([]byte(w.URL))
	return hex.EncodeToString(h[:12])
}

// String is the Label: a Webhook printed never shows its secret or URL.
func (w Webhook) String() string { return w.Label() }

// GoString is the Label too (%#v).
func (w Webhook) GoString() string { return "watch.Webhook(" + w.Label() + ")" }

// LogValue is the Label (slog).
func (w Webhook) LogValue() slog.Value { return slog.StringValue(w.Label()) }

// ParseWebhooks reads a webhooks file: a JSON list of {"url", "secret",
// "filters"} (and an optional "name"). Its error names the entry at fault
// by its place in the list (from 1) and its label, never its secret or
// URL path; the caller adds the file's name.
func ParseWebhooks(data []byte) ([]Webhook, error) {
	if len(data) > MaxWebhooksFileBytes {
		return nil, fmt.Errorf("%d bytes, over the %d-byte cap", len(data), MaxWebhooksFileBytes)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("not a JSON list of webhooks: %w", err)
	}
	switch {
	case len(raw) == 0:
		return nil, errEmpty
	case len(raw) > maxWebhooks:
		return nil, fmt.Errorf("%d webhooks, at most %d", len(raw), maxWebhooks)
	}
	out := make([]Webhook, 0, len(raw))
	seen := map[string]int{}
	names := map[string]int{}
	for i, r := range raw {
		w, err := parseWebhook(r)
		if err != nil {
			return nil, fmt.Errorf("webhook #%d%s: %w", i+1, labelOf(w), err)
		}
		if j, dup := seen[w.Key()]; dup {
			return nil, fmt.Errorf("webhook #%d%s: the same url as webhook #%d", i+1, labelOf(w), j)
		}
		if j, dup := names[w.Label()]; dup && w.Name != "" {
			return nil, fmt.Errorf("webhook #%d%s: the same name as webhook #%d", i+1, labelOf(w), j)
		}
		seen[w.Key()], names[w.Label()] = i+1, i+1
		out = append(out, w)
	}
	return out, nil
}

// labelOf is " (label)" for an error, "" when the entry has none yet.
func labelOf(w Webhook) string {
	if w.URL == "" && w.Name == "" {
		return ""
	}
	return " (" + clip(w.Label()) + ")"
}

func parseWebhook(raw json.RawMessage) (Webhook, error) {
	var w Webhook
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		// The decoder's error may quote a value (the secret): say only what
		// shape was wanted.
		var probe map[string]json.RawMessage
		if json.Unmarshal(raw, &probe) != nil {
			return Webhook{}, fmt.Errorf("want an object {\"url\", \"secret\", \"filters\"}")
		}
		for k := range probe {
			switch k {
			case "name", "url", "secret", "filters":
			default:
				return Webhook{}, fmt.Errorf("unknown field %q (want url, secret, filters and an optional name)", clip(k))
			}
		}
		return Webhook{}, fmt.Errorf("want url, name and secret as strings, filters as {\"model\": [ids], \"org\", \"target\", \"kind\": [kinds]}")
	}
	u, err := url.Parse(w.URL)
	switch {
	case w.URL == "":
		return w, fmt.Errorf("url is missing")
	case err != nil || u.Host == "":
		return Webhook{URL: "", Name: w.Name}, fmt.Errorf("url: want an absolute http(s) URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return w, fmt.Errorf("url: scheme %q refused: want http or https", clip(u.Scheme))
	}
	if len(w.Name) > maxNameBytes || strings.IndexFunc(w.Name, func(r rune) bool { return unicode.IsControl(r) || r == '"' || r == '\\' }) >= 0 {
		return w, fmt.Errorf("name: at most %d printable characters, no quotes or backslashes", maxNameBytes)
	}
	if len(w.Secret) < minSecretBytes {
		return w, fmt.Errorf("secret is missing or shorter than %d bytes (e.g. openssl rand -hex 32)", minSecretBytes)
	}
	if err := w.Filters.Validate(); err != nil {
		return w, fmt.Errorf("filters: %w", err)
	}
	if slices.Contains(w.Filters.Kinds, KindRuntime) {
		return w, fmt.Errorf("filters: kind %q: a webhook is told of status changes; new runtimes are in the feed only (/feed.atom?kind=runtime)", KindRuntime)
	}
	w.Filters.Models = dedupe(w.Filters.Models)
	w.Filters.Kinds = dedupe(w.Filters.Kinds)
	return w, nil
}
