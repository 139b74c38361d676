// Package show writes the scanner's values for people: numbers, bytes,
// times and runtimes; model paths and Hub links; the words, tones and
// colours of the statuses; how a result was sharded. Every audience of the
// web server (pages, badges, feeds, the API) uses it, and it imports none
// of them.
package show

import (
	"fmt"
	"html/template"
	"math"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// Words writes a vocabulary word (a string, or a pointer to one, such as
// *compat.Reason) with spaces for underscores; nil is "".
func Words(v any) string {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return ""
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.String {
		return fmt.Sprint(v)
	}
	return strings.ReplaceAll(rv.String(), "_", " ")
}

// ModelPath is the site path of a model page, each part path-escaped.
func ModelPath(id string) string { return "/models/" + EscapeID(id) }

// EscapeID path-escapes each part of an id, keeping the "/".
func EscapeID(id string) string {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// Hub is the Hub's base URL (Config.HubEndpoint, no trailing "/"), for
// links to models.
type Hub string

// Model links a model on the Hub.
func (h Hub) Model(id string) string { return string(h) + "/" + EscapeID(id) }

// Tree links a model's revision on the Hub.
func (h Hub) Tree(id, sha string) string {
	if sha == "" {
		return h.Model(id)
	}
	return h.Model(id) + "/tree/" + url.PathEscape(sha)
}

// ShortSHA is the first 10 characters of a revision.
func ShortSHA(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}

// Deref is *p, "" for nil.
func Deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// Dash is shown for values that were not measured: never a made-up 0.
const Dash = "—"

// Num formats a measured value with prec decimals, or a dash.
func Num(p *float64, prec int) string {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
		return Dash
	}
	return strconv.FormatFloat(*p, 'f', prec, 64)
}

// Bytes formats a byte count in binary units, or a dash.
func Bytes(p *int64) string {
	if p == nil {
		return Dash
	}
	v := float64(*p)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if math.Abs(v) < 1024 || u == "TiB" {
			if u == "B" {
				return strconv.FormatInt(*p, 10) + " B"
			}
			return strconv.FormatFloat(v, 'f', 1, 64) + " " + u
		}
		v /= 1024
	}
	return Dash
}

// Count writes an integer with thousands separators.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Pct writes a fraction as a percentage, or a dash.
func Pct(p *float64) string {
	if p == nil || math.IsNaN(*p) {
		return Dash
	}
	return strconv.FormatFloat(*p*100, 'f', 1, 64) + " %"
}

// When writes a time in UTC, minutes precision, or a dash.
func When(t time.Time) string {
	if t.IsZero() {
		return Dash
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// Runtime lists the versions that decide retests.
func Runtime(r compat.Runtime) string {
	var parts []string
	for _, kv := range [][2]string{{"vllm-torchtpu", r.VLLMTorchTPU}, {"torch", r.Torch}, {"torch_tpu", r.TorchTPU},
		{"transformers", r.Transformers}, {"harness", r.Harness}, {"python", r.Python}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	if r.Device != "" {
		d := r.Device
		if r.DeviceCount > 1 {
			d += " ×" + strconv.Itoa(r.DeviceCount)
		}
		parts = append(parts, d)
	}
	if len(parts) == 0 {
		return Dash
	}
	return strings.Join(parts, " · ")
}

// TargetName is how a target is called on pages (compat.Target.Name).
func TargetName(t compat.Target) string { return t.Name() }

// BreakID is a model id escaped, with a line-break opportunity (<wbr>)
// after each "/" and "-", so that a narrow screen breaks "org37/model-00117"
// at its parts rather than inside a word (the CSS breaks a word only when
// a part alone is wider than the line).
func BreakID(id string) template.HTML {
	var b strings.Builder
	for _, r := range id {
		b.WriteString(template.HTMLEscapeString(string(r)))
		if r == '/' || r == '-' {
			b.WriteString("<wbr>")
		}
	}
	return template.HTML(b.String()) // every rune of id escaped above
}

// Prediction is the table's line for a result's prediction: its
// Summary off TPU, "" on tpu or without one.
func Prediction(r *compat.Result) string {
	if r == nil || r.TPUOps == nil || r.Target == compat.TargetTPU {
		return ""
	}
	return r.TPUOps.Summary()
}

// PredictionCaveat is what every prediction is not.
const PredictionCaveat = "A prediction from torch_tpu's kernel registrations and the ops this run traced on its own " +
	"device, not a TPU result: a registered kernel says nothing of dtypes (complex, float64, int8)."

func RequestPath(id int64) string { return "/requests/" + strconv.FormatInt(id, 10) }
