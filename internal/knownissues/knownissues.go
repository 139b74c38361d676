// Package knownissues is the operator's table of tracked failures
// (--known-issues FILE): failure signatures, exact or by prefix, mapped to
// where each is tracked. It decides one thing, which entry (if any) a
// signature falls under (Table.Match), and reads and checks the file.
//
// The file is a JSON object whose keys are signatures and whose values are
// {"title", "url", "state"}:
//
//	{
//	  "unsupported_op:aten::_fft_r2c": {"title": "FFT ops on TPU", "url": "https://github.com/…/issues/12", "state": "open"},
//	  "compile_error:*": {"title": "Compile errors", "url": "https://…", "state": "fixed in torch_tpu 0.3.0"}
//	}
//
// A key that ends in "*" is a prefix: it covers every signature that starts
// with what comes before the "*". An exact key wins over any prefix, and a
// longer prefix over a shorter one.
package knownissues

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// MaxFileBytes caps the known-issues file.
const MaxFileBytes = 1 << 20

// Field limits: what a page shows stays readable.
const (
	maxKey   = 500
	maxTitle = 200
	maxURL   = 2000
	maxState = 100
)

// Table maps failure signatures to their tracking issues. The zero Table
// knows none. A Table is read-only once parsed and safe for concurrent use.
type Table struct {
	exact    map[string]compat.KnownIssue
	prefixes []prefix // longest first
}

type prefix struct {
	p     string
	issue compat.KnownIssue
}

// Len is how many entries the table has.
func (t Table) Len() int { return len(t.exact) + len(t.prefixes) }

// Match returns the entry sig falls under: the exact key, else the longest
// prefix key that sig starts with; nil when none (sig "" matches nothing).
// The result is a fresh copy.
func (t Table) Match(sig string) *compat.KnownIssue {
	if sig == "" {
		return nil
	}
	if is, ok := t.exact[sig]; ok {
		return &is
	}
	for _, p := range t.prefixes {
		if strings.HasPrefix(sig, p.p) {
			is := p.issue
			return &is
		}
	}
	return nil
}

// MatchPtr is Match of a signature that may be absent.
func (t Table) MatchPtr(sig *string) *compat.KnownIssue {
	if sig == nil {
		return nil
	}
	return t.Match(*sig)
}

// Parse reads a known-issues file. Its error names the entry at fault (by
// its key) and what is wrong with it; the caller adds the file's name.
func Parse(data []byte) (Table, error) {
	if len(data) > MaxFileBytes {
		return Table{}, fmt.Errorf("%d bytes, over the %d-byte cap", len(data), MaxFileBytes)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Table{}, fmt.Errorf("not a JSON object of signatures: %w", err)
	}
	if raw == nil {
		return Table{}, errors.New("not a JSON object of signatures: null")
	}
	if err := givenTwice(data); err != nil {
		return Table{}, err
	}
	t := Table{exact: map[string]compat.KnownIssue{}}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		is, err := parseEntry(k, raw[k])
		if err != nil {
			return Table{}, fmt.Errorf("entry %q: %w", clip(k), err)
		}
		if p, ok := strings.CutSuffix(k, "*"); ok {
			t.prefixes = append(t.prefixes, prefix{p: p, issue: is})
		} else {
			t.exact[k] = is
		}
	}
	slices.SortStableFunc(t.prefixes, func(a, b prefix) int { return cmp.Compare(len(b.p), len(a.p)) }) // longest first
	return t, nil
}

// givenTwice refuses a file (a JSON object, checked already) in which one
// signature is the key of two entries: JSON keeps the last, and the first
// would be dropped without a word. Its error names the signature and both
// entries, by line and title.
func givenTwice(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		return fmt.Errorf("not a JSON object of signatures: %w", err)
	}
	type entry struct {
		line  int
		title string
	}
	seen := map[string]entry{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("not a JSON object of signatures: %w", err)
		}
		key, _ := tok.(string)
		line := 1 + bytes.Count(data[:dec.InputOffset()], []byte("\n"))
		var v struct {
			Title string `json:"title"`
		}
		if err := dec.Decode(&v); err != nil {
			v.Title = "" // parseEntry says what is wrong with it
		}
		this := entry{line: line, title: strings.TrimSpace(v.Title)}
		if first, ok := seen[key]; ok {
			return fmt.Errorf("signature %q is given twice, by the entry on line %d (%q) and the one on line %d (%q): keep one",
				clip(key), first.line, clip(first.title), this.line, clip(this.title))
		}
		seen[key] = this
	}
	return nil
}

// parseEntry checks one key and its value.
func parseEntry(key string, raw json.RawMessage) (compat.KnownIssue, error) {
	switch p, isPrefix := strings.CutSuffix(key, "*"); {
	case key == "" || isPrefix && p == "":
		return compat.KnownIssue{}, errors.New("empty signature (a prefix needs something before its \"*\")")
	case len(key) > maxKey:
		return compat.KnownIssue{}, fmt.Errorf("signature longer than %d bytes", maxKey)
	case strings.Contains(p, "*"):
		return compat.KnownIssue{}, errors.New("\"*\" may only end a signature (a prefix)")
	case !printable(key):
		return compat.KnownIssue{}, errors.New("signature has control characters or is not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var is compat.KnownIssue
	if err := dec.Decode(&is); err != nil {
		return is, fmt.Errorf("want {\"title\", \"url\", \"state\"}: %w", err)
	}
	is.Title, is.URL, is.State = strings.TrimSpace(is.Title), strings.TrimSpace(is.URL), strings.TrimSpace(is.State)
	if err := checkText("title", is.Title, maxTitle); err != nil {
		return is, err
	}
	if err := checkText("state", is.State, maxState); err != nil {
		return is, err
	}
	if len(is.URL) > maxURL {
		return is, fmt.Errorf("url longer than %d bytes", maxURL)
	}
	u, err := url.Parse(is.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return is, fmt.Errorf("url %q: want an absolute http(s) URL without credentials", clip(is.URL))
	}
	return is, nil
}

func checkText(name, v string, limit int) error {
	switch {
	case v == "":
		return fmt.Errorf("%s is missing or empty", name)
	case len(v) > limit:
		return fmt.Errorf("%s longer than %d bytes", name, limit)
	case !printable(v):
		return fmt.Errorf("%s has control characters or is not UTF-8", name)
	}
	return nil
}

// printable reports whether s is UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return false
		}
	}
	return true
}

// clip shortens what an error quotes.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:80] + "…"
}
