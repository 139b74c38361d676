// Package watch says which changes someone watching the scanner wants: the
// feed's filters (?model=&org=&target=&kind=), one Filter shared by
// /feed.json, /feed.atom and the operator's webhooks, and the webhooks
// file (--webhooks FILE) that names who is told of which changes.
//
// It decides one thing, whether a change passes a filter (Filter.Match),
// and reads and checks what a filter is made of.
package watch

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// KindRuntime is the kind of the feed's new-runtime items; the other kinds
// are the status changes' (compat.EventKinds).
const KindRuntime = "runtime"

// MaxModels caps the models one filter names.
const MaxModels = 20

// Kinds are the kinds a filter may ask for, in the site's order.
func Kinds() []string {
	out := make([]string, 0, len(compat.EventKinds)+1)
	for _, k := range compat.EventKinds {
		out = append(out, string(k))
	}
	return append(out, KindRuntime)
}

// Item is what a filter looks at in one change: the model ("" for a
// runtime item), its target and its kind.
type Item struct {
	ModelID string
	Target  compat.Target
	Kind    string
}

// Filter selects changes; every field that is set must match, and a list
// matches when any of its values does. The zero Filter selects everything.
type Filter struct {
	Models []string      `json:"model,omitempty"`  // model ids, as the Hub writes them (letter case aside)
	Org    string        `json:"org,omitempty"`    // the part of the id before "/"
	Target compat.Target `json:"target,omitempty"` // tpu, cpu or cuda
	Kinds  []string      `json:"kind,omitempty"`   // Kinds()
}

// Empty reports whether f selects everything.
func (f Filter) Empty() bool {
	return len(f.Models) == 0 && f.Org == "" && f.Target == "" && len(f.Kinds) == 0
}

// Match reports whether the change it passes f. A runtime item concerns no
// model: a filter that names models or an org leaves it out.
func (f Filter) Match(it Item) bool {
	if f.Target != "" && it.Target != f.Target {
		return false
	}
	if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, it.Kind) {
		return false
	}
	if f.Org != "" && !strings.EqualFold(orgOf(it.ModelID), f.Org) {
		return false
	}
	if len(f.Models) > 0 && !slices.ContainsFunc(f.Models, func(m string) bool { return strings.EqualFold(m, it.ModelID) }) {
		return false
	}
	return true
}

// orgOf is the part of a model id before "/" ("" for a one-part id or a
// runtime item).
func orgOf(id string) string {
	org, _, ok := strings.Cut(id, "/")
	if !ok {
		return ""
	}
	return org
}

// Validate checks a filter as the feed's query or the webhooks file gives
// it, naming the field at fault.
func (f Filter) Validate() error {
	if len(f.Models) > MaxModels {
		return fmt.Errorf("model: %d ids, at most %d", len(f.Models), MaxModels)
	}
	for _, m := range f.Models {
		if err := compat.ValidateModelID(m); err != nil {
			return fmt.Errorf("model: %w", err)
		}
	}
	if f.Org != "" {
		if err := compat.ValidateModelNamespace(f.Org); err != nil {
			return fmt.Errorf("org: %w", err)
		}
	}
	if f.Target != "" {
		if _, err := compat.ParseResultTarget(string(f.Target)); err != nil {
			return fmt.Errorf("target: %w", err)
		}
	}
	for _, k := range f.Kinds {
		if !slices.Contains(Kinds(), k) {
			return fmt.Errorf("kind %q: want one of %s", clip(k), strings.Join(Kinds(), ", "))
		}
	}
	return nil
}

// ParseQuery reads a filter from a feed's query: model= and kind= may
// repeat (or list values with commas); org= and target= are single.
// target=auto (or empty) is every target. Other parameters are ignored.
func ParseQuery(q url.Values) (Filter, error) {
	var f Filter
	for _, name := range []string{"org", "target"} {
		if len(q[name]) > 1 {
			return f, fmt.Errorf("%s: give it once", name)
		}
	}
	f.Models = listOf(q["model"])
	f.Kinds = listOf(q["kind"])
	f.Org = strings.TrimSpace(q.Get("org"))
	t, err := compat.ParseTargetFilter(strings.TrimSpace(q.Get("target")))
	if err != nil {
		return f, fmt.Errorf("target: %w", err)
	}
	f.Target = t
	f.Models = dedupe(f.Models)
	f.Kinds = dedupe(f.Kinds)
	return f, f.Validate()
}

// Query is f as a canonical query string (no "?"), "" for the zero filter:
// the same filter always gives the same string.
func (f Filter) Query() string {
	v := url.Values{}
	for _, m := range f.Models {
		v.Add("model", m)
	}
	if f.Org != "" {
		v.Set("org", f.Org)
	}
	if f.Target != "" {
		v.Set("target", string(f.Target))
	}
	for _, k := range f.Kinds {
		v.Add("kind", k)
	}
	return v.Encode()
}

// Describe says in words what f selects, for a feed's title: "" for the
// zero filter, else e.g. "Qwen/Qwen3-0.6B, on tpu, regression and fix".
func (f Filter) Describe() string {
	var parts []string
	if len(f.Models) > 0 {
		parts = append(parts, strings.Join(f.Models, ", "))
	}
	if f.Org != "" {
		parts = append(parts, "models of "+f.Org)
	}
	if f.Target != "" {
		parts = append(parts, "on "+string(f.Target))
	}
	if len(f.Kinds) > 0 {
		parts = append(parts, strings.Join(f.Kinds, " and "))
	}
	return strings.Join(parts, ", ")
}

// listOf splits repeated, comma-separated values, dropping blanks.
func listOf(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func dedupe(in []string) []string {
	var out []string
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// clip shortens what an error quotes.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:80] + "…"
}

// errEmpty is the error of a file with no webhook.
var errEmpty = errors.New("no webhook in the list")
