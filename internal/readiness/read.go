package readiness

import (
	"encoding/json"
	"math"
	"strings"
)

// field is the outcome of reading one size from a config.
type field int

const (
	absent field = iota // no such key, or null
	valid               // a whole number within the field's bounds
	bad                 // present, but zero, negative, fractional, absurd or not a number
)

// Bounds on sizes: a value outside them is not a real model's, and whatever
// needs it is not computed (config_incomplete says which key).
const (
	maxDim     = 1 << 20 // hidden, intermediate, head_dim, lora ranks
	maxVocab   = 1 << 24
	maxLayers  = 1 << 12
	maxHeads   = 1 << 16
	maxExperts = 1 << 16
	maxContext = 1 << 32
	// maxParams bounds the parameter count, from the checkpoint or the
	// config: 100 trillion, far above any published model.
	maxParams = 100_000_000_000_000
)

// reader reads sizes from one config object and records what it could not
// read: the keys that were absurd, for config_incomplete.
type reader struct {
	m      map[string]any
	prefix string // "text_config." for nested configs, in messages
	bad    *[]string
}

// int reads the first of keys that is present, a whole number from 1 to
// limit. It returns the value and valid, or 0 and absent (no key) or bad (a
// key with an unusable value, recorded in r.bad).
func (r reader) int(limit int64, keys ...string) (int64, field) {
	return r.between(1, limit, keys...)
}

// count is int for sizes that may be 0 (first_k_dense_replace).
func (r reader) count(limit int64, keys ...string) (int64, field) {
	return r.between(0, limit, keys...)
}

func (r reader) between(lo, hi int64, keys ...string) (int64, field) {
	for _, k := range keys {
		v, ok := r.m[k]
		if !ok || v == nil {
			continue
		}
		n, st := wholeNumber(v, lo, hi)
		if st == bad && r.bad != nil {
			*r.bad = append(*r.bad, r.prefix+k)
		}
		return n, st
	}
	return 0, absent
}

// ints reads a list of whole numbers from 0 to limit (others are skipped).
func (r reader) ints(key string, limit int64) []int64 {
	raw, _ := r.m[key].([]any)
	var out []int64
	for _, v := range raw {
		if n, st := wholeNumber(v, 0, limit); st == valid {
			out = append(out, n)
		}
	}
	return out
}

// wholeNumber accepts JSON numbers that are whole and within [lo, hi].
func wholeNumber(v any, lo, hi int64) (int64, field) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case json.Number:
		g, err := x.Float64()
		if err != nil {
			return 0, bad
		}
		f = g
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	default:
		return 0, bad // strings, booleans, objects
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, bad
	}
	return int64(f), valid
}

// str reads a string value ("" when absent or not a string).
func (r reader) str(key string) string {
	s, _ := r.m[key].(string)
	return s
}

// flag reads a boolean; ok is false when the key is absent or not a boolean.
func (r reader) flag(key string) (val, ok bool) {
	val, ok = r.m[key].(bool)
	return val, ok
}

// sub returns the nested config object under key, or nil.
func (r reader) sub(key string) *reader {
	m, ok := r.m[key].(map[string]any)
	if !ok {
		return nil
	}
	return &reader{m: m, prefix: r.prefix + key + ".", bad: r.bad}
}

// has reports whether key is present with a non-null value.
func (r reader) has(key string) bool {
	v, ok := r.m[key]
	return ok && v != nil
}

// strings reads a list of strings (non-strings are skipped).
func (r reader) strings(key string) []string {
	raw, _ := r.m[key].([]any)
	var out []string
	for _, v := range raw {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// lower is strings.ToLower for config words (model types, dtypes, methods).
func lower(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
