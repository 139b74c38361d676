package compat

import (
	"errors"
	"fmt"
	"strings"
)

// RuntimeRef names a runtime as the site compares them: the target a result
// ran on and the versions that decide a retest (the fields of Runtime.RetestKey).
// Two results belong to the same runtime exactly when their targets and
// their Runtime.RetestKey are equal.
type RuntimeRef struct {
	Target       Target
	Torch        string
	TorchTPU     string
	Transformers string
	Harness      string
}

// Ref is the runtime r names on target t.
func (r Runtime) Ref(t Target) RuntimeRef {
	return RuntimeRef{Target: t, Torch: r.Torch, TorchTPU: r.TorchTPU, Transformers: r.Transformers, Harness: r.Harness}
}

// RetestKey is Runtime.RetestKey of the versions: what the store files results under.
func (r RuntimeRef) RetestKey() string {
	return Runtime{Torch: r.Torch, TorchTPU: r.TorchTPU, Transformers: r.Transformers, Harness: r.Harness}.RetestKey()
}

// MaxRuntimeKey bounds the length of a runtime key that ParseRuntimeKey accepts.
const MaxRuntimeKey = 512

// keySep separates the fields of a runtime key; keyEscape starts an escaped byte.
const (
	keySep    = '~'
	keyEscape = '_'
)

// Key is the runtime's stable, URL-safe name, readable as its versions:
//
//	tpu~2.15.0~0.2.0~5.23.0~1.4.0
//
// target, torch, torch_tpu, transformers and harness, separated by "~"; an
// absent version is empty (cpu~2.15.0~~5.23.0~1.4.0). Letters, digits, "."
// and "-" stand as they are; every other byte is written _XX (upper-case
// hex), so "2.15.0+cpu" is 2.15.0_2Bcpu. Every character of a key is
// unreserved in URLs (RFC 3986), and ParseRuntimeKey reverses it.
func (r RuntimeRef) Key() string {
	var b strings.Builder
	for i, f := range r.fields() {
		if i > 0 {
			b.WriteByte(keySep)
		}
		escapeKeyField(&b, f)
	}
	return b.String()
}

func (r RuntimeRef) fields() [5]string {
	return [5]string{string(r.Target), r.Torch, r.TorchTPU, r.Transformers, r.Harness}
}

// keyPlain reports whether c stands for itself in a runtime key.
func keyPlain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-'
}

const upperHex = "0123456789ABCDEF"

func escapeKeyField(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if keyPlain(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte(keyEscape)
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
}

// ErrRuntimeKey is wrapped by every error of ParseRuntimeKey.
var ErrRuntimeKey = errors.New("invalid runtime key")

// ParseRuntimeKey reads a key written by RuntimeRef.Key. It accepts only the
// canonical spelling (so one runtime has one key) and a concrete target.
func ParseRuntimeKey(key string) (RuntimeRef, error) {
	if key == "" || len(key) > MaxRuntimeKey {
		return RuntimeRef{}, fmt.Errorf("%w: want 1 to %d characters", ErrRuntimeKey, MaxRuntimeKey)
	}
	parts := strings.Split(key, string(keySep))
	if len(parts) != 5 {
		return RuntimeRef{}, fmt.Errorf("%w %q: want target~torch~torch_tpu~transformers~harness", ErrRuntimeKey, key)
	}
	var f [5]string
	for i, p := range parts {
		s, err := unescapeKeyField(p)
		if err != nil {
			return RuntimeRef{}, fmt.Errorf("%w %q: %v", ErrRuntimeKey, key, err)
		}
		f[i] = s
	}
	t, err := ParseResultTarget(f[0])
	if err != nil {
		return RuntimeRef{}, fmt.Errorf("%w %q: %v", ErrRuntimeKey, key, err)
	}
	r := RuntimeRef{Target: t, Torch: f[1], TorchTPU: f[2], Transformers: f[3], Harness: f[4]}
	if r.Key() != key {
		return RuntimeRef{}, fmt.Errorf("%w %q: not in canonical form (%s)", ErrRuntimeKey, key, r.Key())
	}
	return r, nil
}

func unescapeKeyField(p string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case keyPlain(c):
			b.WriteByte(c)
		case c == keyEscape:
			if i+2 >= len(p) {
				return "", fmt.Errorf("a cut-off escape at byte %d", i)
			}
			hi, lo := unhex(p[i+1]), unhex(p[i+2])
			if hi < 0 || lo < 0 {
				return "", fmt.Errorf("a bad escape at byte %d", i)
			}
			b.WriteByte(byte(hi<<4 | lo))
			i += 2
		default:
			return "", fmt.Errorf("byte %q not allowed", c)
		}
	}
	return b.String(), nil
}

// unhex is the value of an upper-case hex digit, -1 for anything else.
func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// RuntimeKeyPattern is the form of a canonical key (Key; what
// ParseRuntimeKey accepts, within MaxRuntimeKey), as the OpenAPI document
// states it: a target, then four fields of plain characters and escapes
// of the bytes that are not plain (TestRuntimeKeyPattern).
const RuntimeKeyPattern = `^(tpu|cpu|cuda)(~` + keyFieldPattern + `){4}$`

// keyFieldPattern is one version field of a canonical key: plain bytes
// (keyPlain) and _XX escapes of every other byte, upper-case hex.
const keyFieldPattern = `(?:[A-Za-z0-9.-]|_(?:[01][0-9A-F]|2[0-9A-CF]|3[A-F]|40|5[B-F]|60|7[B-F]|[89A-F][0-9A-F]))*`
