package termsafe

import "testing"

func TestStrip(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text\nwith lines\tand tabs", "plain text\nwith lines\tand tabs"},
		{"héllo ✓ 日本", "héllo ✓ 日本"},
		// A harness's coloured output: the SGR sequences go whole.
		{"\x1b[31mERROR\x1b[0m: boom", "ERROR: boom"},
		{"\x1b[1;33;40mwarn\x1b[m", "warn"},
		// Cursor moves and screen clears (CSI with parameters and intermediates).
		{"a\x1b[2Jb\x1b[10;20Hc\x1b[?25ld", "abcd"},
		// OSC (window title, hyperlinks), ended by BEL or ST.
		{"x\x1b]0;pwned\x07y", "xy"},
		{"x\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\y", "xlinky"},
		// The C1 CSI (U+009B) introduces a sequence as ESC [ does.
		{"csi\u009b31mred", "csired"},
		// Other escapes: ESC and the next character.
		{"a\x1bcb", "ab"},
		// A lone ESC at the end, a cut-off CSI.
		{"end\x1b", "end"},
		{"cut\x1b[31", "cut"},
		// BEL, NUL, DEL, CR, other C0 and C1, bidi overrides.
		{"bell\x07 nul\x00 del\x7f cr\r\n", "bell nul del cr\n"},
		{"c1\u0085\u009f", "c1"},
		{"evil\u202etxt.exe \u2066x\u2069", "eviltxt.exe x"},
		// Bytes that are not UTF-8 become U+FFFD.
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Strip(tt.in); got != tt.want {
			t.Errorf("Strip(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := Strip(tt.want); got != tt.want {
			t.Errorf("Strip is not idempotent on %q: %q", tt.want, got)
		}
		if hostile := hostileBytes(Strip(tt.in)); len(hostile) > 0 {
			t.Errorf("Strip(%q) left %q", tt.in, hostile)
		}
	}
}

// TestStripSequenceBounds: a CSI's intermediates start at the space (0x20)
// and its final byte runs from @ (0x40) to ~ (0x7E); an OSC without its
// terminator takes the rest of the text.
func TestStripSequenceBounds(t *testing.T) {
	for in, want := range map[string]string{
		"a\x1b[1 qb":      "ab", // DECSCUSR: a space intermediate
		"a\x1b[4@b":       "ab", // ICH: the final byte @
		"a\x1b[3~b":       "ab", // the final byte ~
		"a\x1b[3\x7fb":    "ab", // DEL is not a final byte: the sequence ends before it, and DEL goes as a control
		"a\x1b]0;title":   "a",
		"a\x1b]0;t\x1b\\": "a",
	} {
		if got := Strip(in); got != want {
			t.Errorf("Strip(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFirstUnsafe: the plain-text check Line and Text start with finds the
// first byte they would change, and nothing in plain text (spaces, tabs,
// printable ASCII and runes), so that plain text is returned as it is.
func TestFirstUnsafe(t *testing.T) {
	for _, tc := range []struct {
		in     string
		keepLF bool
		want   int
	}{
		{"a b\tc ~", false, -1},
		{"héllo ✓", false, -1},
		{"a\nb", true, -1},
		{"a\nb", false, 1},
		{"ab\x7f", false, 2},
		{"a\x1fb", false, 1},
		{"a\x80b", false, 1},
		{"é\xffb", false, 2},
		{"a\u202eb", false, 1},
	} {
		if got := firstUnsafe(tc.in, tc.keepLF); got != tc.want {
			t.Errorf("firstUnsafe(%q, %v) = %d, want %d", tc.in, tc.keepLF, got, tc.want)
		}
	}
}
