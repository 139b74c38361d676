package watch

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
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
// Its String and LogValue name it by Label only: the secret, and every
// part of a URL (which may itself be a credential, as a Slack webhook's
// path or a per-function URL's host is), never reach a log or a page.
type Webhook struct {
	// Name labels the endpoint in logs and metrics; default "#" and its
	// Index.
	Name    string `json:"name,omitempty"`
	URL     string `json:"url"`
	Secret  string `json:"secret"`
	Filters Filter `json:"filters"`
	// Index is the endpoint's place in the webhooks file, from 1
	// (ParseWebhooks sets it); 0: not from a file.
	Index int `json:"-"`
}

// Label is the endpoint's name in logs and metrics: Name, else "#" and
// its Index ("#2"); never a part of its URL, which /metrics (a public
// page) would show.
func (w Webhook) Label() string {
	if w.Name != "" {
		return w.Name
	}
	return "#" + strconv.Itoa(w.Index)
}

// secretPrefix marks a secret in Standard Webhooks' form: "whsec_" and
// the key's bytes in base64.
const secretPrefix = "whsec_"

// SigningKey is the key of the Standard Webhooks signature
// (webhook-signature): for a secret in Standard Webhooks' form ("whsec_"
// and base64) the bytes it encodes, as that standard's libraries read it;
// for any other secret its bytes as written (a receiver using such a
// library passes "whsec_" + base64 of the secret). X-Scanner-Signature
// keeps the secret as written, whatever its form.
func (w Webhook) SigningKey() []byte {
	if key, ok := strings.CutPrefix(w.Secret, secretPrefix); ok {
		if b, err := base64.StdEncoding.DecodeString(key); err == nil {
			return b
		}
	}
	return []byte(w.Secret)
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
	for i, r := range raw {
		w, err := parseWebhook(r)
		if err != nil {
			return nil, fmt.Errorf("webhook #%d%s: %w", i+1, labelOf(w), err)
		}
		w.Index = i + 1
		out = append(out, w)
	}
	if err := Distinct(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Distinct refuses two webhooks with the same URL (letter case of its
// scheme and host, and a default port, aside) or the same Label (a name
// given twice, or one that is another's "#N"): each webhook has its own
// deliveries and its own metrics series. The error names both by their
// place in the list.
func Distinct(ws []Webhook) error {
	urls, labels := map[string]int{}, map[string]int{}
	for i, w := range ws {
		if j, dup := urls[sameURL(w.URL)]; dup {
			return fmt.Errorf("webhook #%d%s: the same url as webhook #%d", i+1, labelOf(w), j)
		}
		if j, dup := labels[w.Label()]; dup {
			return fmt.Errorf("webhook #%d%s: the same name as webhook #%d (%q)", i+1, labelOf(w), j, clip(w.Label()))
		}
		urls[sameURL(w.URL)], labels[w.Label()] = i+1, i+1
	}
	return nil
}

// sameURL is u as compared for duplicates: scheme and host lower-cased,
// the scheme's default port and an empty path made explicit.
func sameURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	p.Scheme, p.Host = strings.ToLower(p.Scheme), strings.ToLower(p.Host)
	if port := p.Port(); (p.Scheme == "http" && port == "80") || (p.Scheme == "https" && port == "443") {
		p.Host = strings.TrimSuffix(p.Host, ":"+port)
	}
	if p.Path == "" && p.RawPath == "" {
		p.Path = "/"
	}
	return p.String()
}

// labelOf is " (name or host)" for the operator's error at start, "" when
// the entry has neither yet.
func labelOf(w Webhook) string {
	if w.Name != "" {
		return " (" + clip(w.Name) + ")"
	}
	if u, err := url.Parse(w.URL); err == nil && u.Host != "" {
		return " (" + clip(u.Host) + ")"
	}
	return ""
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
	if strings.HasPrefix(w.Name, "#") {
		return w, fmt.Errorf("name: may not start with # (an unnamed webhook is labelled #N, its place in the file)")
	}
	if len(w.Secret) < minSecretBytes {
		return w, fmt.Errorf("secret is missing or shorter than %d bytes (e.g. openssl rand -hex 32)", minSecretBytes)
	}
	if key, ok := strings.CutPrefix(w.Secret, secretPrefix); ok {
		if b, err := base64.StdEncoding.DecodeString(key); err != nil || len(b) < minSecretBytes {
			return w, fmt.Errorf("secret: one that starts with %s must be Standard Webhooks' form, %s and at least %d bytes in base64", secretPrefix, secretPrefix, minSecretBytes)
		}
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
