package knownissues

import (
	"strings"
	"testing"
)

const file = `{
  "unsupported_op:aten::_fft_r2c": {"title": "FFT on TPU", "url": "https://github.com/org/torch_tpu/issues/12", "state": "open"},
  "unsupported_op:*": {"title": "Missing ops", "url": "https://github.com/org/torch_tpu/issues/1", "state": "open"},
  "unsupported_op:aten::_fft*": {"title": "All FFT ops", "url": "https://github.com/org/torch_tpu/issues/7", "state": "fixed in torch_tpu 0.3.0"},
  "oom": {"title": "Out of memory", "url": "http://tracker.example/oom", "state": "wontfix"}
}`

func TestMatch(t *testing.T) {
	tab, err := Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != 4 {
		t.Errorf("Len = %d, want 4", tab.Len())
	}
	for _, tc := range []struct {
		sig, url string // url "" = no match
	}{
		{"unsupported_op:aten::_fft_r2c", "https://github.com/org/torch_tpu/issues/12"},    // exact wins over both prefixes
		{"unsupported_op:aten::_fft_c2c", "https://github.com/org/torch_tpu/issues/7"},     // the longer prefix
		{"unsupported_op:aten::nonzero", "https://github.com/org/torch_tpu/issues/1"},      // the shorter prefix
		{"unsupported_op:", "https://github.com/org/torch_tpu/issues/1"},                   // a prefix covers itself
		{"oom", "http://tracker.example/oom"},                                              // exact
		{"oom:more", ""},                                                                   // an exact key is no prefix
		{"compile_error:x", ""},                                                            // nothing
		{"", ""},                                                                           // no signature
		{"unsupported_op", ""},                                                             // shorter than the prefix
		{"UNSUPPORTED_OP:aten::_fft_r2c", ""},                                              // case matters
		{"unsupported_op:aten::_fft_r2c ", "https://github.com/org/torch_tpu/issues/7"},    // not exact: the prefix
		{"unsupported_op:aten::_fft*", "https://github.com/org/torch_tpu/issues/7"},        // a literal star is just text
		{"xunsupported_op:aten::_fft_r2c", ""},                                             // a prefix anchors at the start
		{"unsupported_op:aten::_ff", "https://github.com/org/torch_tpu/issues/1"},          // not the FFT prefix
		{"unsupported_op:aten::_fft", "https://github.com/org/torch_tpu/issues/7"},         // exactly the FFT prefix
		{"unsupported_op:aten::_fft_r2c\x00", "https://github.com/org/torch_tpu/issues/7"}, // no exact match with trailing NUL
	} {
		got := tab.Match(tc.sig)
		switch {
		case tc.url == "" && got != nil:
			t.Errorf("Match(%q) = %+v, want none", tc.sig, got)
		case tc.url != "" && (got == nil || got.URL != tc.url):
			t.Errorf("Match(%q) = %+v, want %s", tc.sig, got, tc.url)
		}
	}
	if got := tab.Match("oom"); got.Title != "Out of memory" || got.State != "wontfix" {
		t.Errorf("Match(oom) = %+v", got)
	}
	// A match is a copy: changing it changes nothing in the table.
	tab.Match("oom").Title = "changed"
	if tab.Match("oom").Title != "Out of memory" {
		t.Error("Match hands out the table's own entry")
	}
	if (Table{}).Match("oom") != nil || (Table{}).MatchPtr(nil) != nil || tab.MatchPtr(nil) != nil {
		t.Error("an empty table or an absent signature matched")
	}
	sig := "oom"
	if tab.MatchPtr(&sig) == nil {
		t.Error("MatchPtr(&oom) = nil")
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string // want: a part of the error
	}{
		{"not json", `{`, "not a JSON object"},
		{"a list", `[]`, "not a JSON object"},
		{"null", `null`, "null"},
		{"no title", `{"oom": {"url": "https://x.example/1", "state": "open"}}`, `entry "oom": title is missing`},
		{"blank title", `{"oom": {"title": "  ", "url": "https://x.example/1", "state": "open"}}`, `entry "oom": title is missing`},
		{"no state", `{"oom": {"title": "t", "url": "https://x.example/1"}}`, `entry "oom": state is missing`},
		{"javascript url", `{"oom": {"title": "t", "url": "javascript:alert(1)", "state": "open"}}`, `entry "oom": url "javascript:alert(1)"`},
		{"relative url", `{"oom": {"title": "t", "url": "/issues/1", "state": "open"}}`, `entry "oom": url`},
		{"credentials", `{"oom": {"title": "t", "url": "https://u:p@x.example/1", "state": "open"}}`, `without credentials`},
		{"unknown field", `{"oom": {"title": "t", "url": "https://x.example/1", "state": "open", "owner": "me"}}`, `entry "oom": want {"title", "url", "state"}`},
		{"not an object", `{"oom": "https://x.example/1"}`, `entry "oom": want`},
		{"empty key", `{"": {"title": "t", "url": "https://x.example/1", "state": "open"}}`, `entry "": empty signature`},
		{"bare star", `{"*": {"title": "t", "url": "https://x.example/1", "state": "open"}}`, `entry "*": empty signature`},
		{"inner star", `{"a*b": {"title": "t", "url": "https://x.example/1", "state": "open"}}`, `entry "a*b": "*" may only end`},
		{"control title", `{"oom": {"title": "a\u001b[31m", "url": "https://x.example/1", "state": "open"}}`, `entry "oom": title has control characters`},
		{"control key", `{"o\u0007m": {"title": "t", "url": "https://x.example/1", "state": "open"}}`, `entry "o\am": signature has control`},
		{"long state", `{"oom": {"title": "t", "url": "https://x.example/1", "state": "` + strings.Repeat("s", 101) + `"}}`, `state longer than 100`},
		{"huge", `{"a": "` + strings.Repeat("x", MaxFileBytes) + `"}`, "over the"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v; want an error with %q", err, tc.want)
			}
		})
	}
	if tab, err := Parse([]byte(`{}`)); err != nil || tab.Len() != 0 {
		t.Errorf("an empty object: %v, %d entries", err, tab.Len())
	}
}

// TestParseBounds: a file of exactly the cap and a URL of exactly its most
// are accepted, a byte more is not; an error quotes a key of 80 bytes
// whole and clips a longer one.
func TestParseBounds(t *testing.T) {
	pad := func(body string, n int) []byte { return []byte(body + strings.Repeat(" ", n-len(body))) }
	if _, err := Parse(pad("{}", MaxFileBytes)); err != nil {
		t.Errorf("a file of exactly %d bytes: %v", MaxFileBytes, err)
	}
	if _, err := Parse(pad("{}", MaxFileBytes+1)); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("a file a byte over: %v", err)
	}
	entry := func(url string) []byte {
		return []byte(`{"oom": {"title": "t", "url": "` + url + `", "state": "open"}}`)
	}
	base := "https://example.org/"
	if _, err := Parse(entry(base + strings.Repeat("a", 2000-len(base)))); err != nil {
		t.Errorf("a url of 2000 bytes: %v", err)
	}
	if _, err := Parse(entry(base + strings.Repeat("a", 2001-len(base)))); err == nil || !strings.Contains(err.Error(), "url longer than 2000 bytes") {
		t.Errorf("a url of 2001 bytes: %v", err)
	}
	bad := func(key string) string {
		_, err := Parse([]byte(`{"` + key + `": {"title": "t", "url": "ftp://x", "state": "open"}}`))
		if err == nil {
			t.Fatalf("entry %q accepted", key)
		}
		return err.Error()
	}
	k80 := strings.Repeat("k", 80)
	if msg := bad(k80); !strings.Contains(msg, `"`+k80+`"`) {
		t.Errorf("an 80-byte key was not quoted whole: %s", msg)
	}
	if msg := bad(k80 + "z"); !strings.Contains(msg, `"`+k80+`…"`) {
		t.Errorf("an 81-byte key was not clipped to 80: %s", msg)
	}
}

// TestParseRefusesASignatureGivenTwice: JSON keeps the last of two equal
// keys, so the first entry would be dropped without a word. Parse refuses
// the file, naming the signature and both entries (by line), also when
// the two spell the key differently (an escape) and for a prefix.
func TestParseRefusesASignatureGivenTwice(t *testing.T) {
	for name, c := range map[string]struct {
		file  string
		words []string
	}{
		"exact": {`{
  "oom": {"title": "Out of memory", "url": "http://tracker.example/oom", "state": "open"},
  "compile_error:x": {"title": "X", "url": "http://tracker.example/x", "state": "open"},
  "oom": {"title": "OOM again", "url": "http://tracker.example/oom2", "state": "open"}
}`, []string{`"oom"`, "twice", "line 2", "line 4", "Out of memory", "OOM again"}},
		"escaped": {`{"oom": {"title": "A", "url": "http://t.example/a", "state": "open"},
"o\u006fm": {"title": "B", "url": "http://t.example/b", "state": "open"}}`, []string{`"oom"`, "twice", "line 1", "line 2"}},
		"prefix": {`{
  "unsupported_op:*": {"title": "A", "url": "http://t.example/a", "state": "open"},

  "unsupported_op:*": {"title": "B", "url": "http://t.example/b", "state": "open"}
}`, []string{`"unsupported_op:*"`, "line 2", "line 4"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(c.file))
			if err == nil {
				t.Fatal("a signature given twice was accepted")
			}
			for _, w := range c.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse: %v; want it to say %s", err, w)
				}
			}
		})
	}
	// The same title twice under two signatures is fine.
	if _, err := Parse([]byte(`{"a": {"title": "T", "url": "http://t.example/", "state": "open"},
"b": {"title": "T", "url": "http://t.example/", "state": "open"}}`)); err != nil {
		t.Errorf("two signatures, one issue: %v", err)
	}
}
