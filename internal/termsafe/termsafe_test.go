package termsafe

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLineAndText(t *testing.T) {
	tests := []struct {
		in, line, text string
	}{
		{"Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B"},
		{"héllo wörld ✓ 日本", "héllo wörld ✓ 日本", "héllo wörld ✓ 日本"},
		{"tab\tkept", "tab\tkept", "tab\tkept"},
		{"\x1b[2J\x1b]0;pwned\x07", `\x1b[2J\x1b]0;pwned\x07`, `\x1b[2J\x1b]0;pwned\x07`},
		{"a\x00b", `a\x00b`, `a\x00b`},
		{"line1\nline2\r", `line1\x0aline2\x0d`, "line1\nline2\\x0d"},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"csi\u009b31m", `csi\x9b31m`, `csi\x9b31m`},
		{"evil\u202etxt.exe", `evil\u202etxt.exe`, `evil\u202etxt.exe`},
		{"iso\u2066x\u2069", `iso\u2066x\u2069`, `iso\u2066x\u2069`},
		{"bad\xffutf8", `bad\xffutf8`, `bad\xffutf8`},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := Line(tt.in); got != tt.line {
			t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
		}
		if got := Text(tt.in); got != tt.text {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
		}
	}
}

// hostileBytes reports the characters a terminal would act on.
func hostileBytes(s string) []rune {
	var bad []rune
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			bad = append(bad, r)
			continue
		}
		if r != '\n' && r != '\t' && unsafeRune(r, false) {
			bad = append(bad, r)
		}
	}
	return bad
}

func TestHandlerCleansEveryString(t *testing.T) {
	evil := "x\x1b]0;pwned\x07\u009b2J\u202e\xff"
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			var h slog.Handler = slog.NewTextHandler(&buf, nil)
			if format == "json" {
				h = slog.NewJSONHandler(&buf, nil)
			}
			log := slog.New(Handler(h)).With("with", evil).WithGroup("g" + evil)
			log.Info("msg "+evil, "id", evil, "err", errors.New("boom "+evil), "bytes", []byte(evil),
				slog.Group("grp", "inner", evil), "k"+evil, 1)
			out := buf.String()
			if bad := hostileBytes(out); len(bad) > 0 {
				t.Fatalf("log line still holds %q:\n%s", bad, out)
			}
			// Each attribute is there, escaped (once per place it was logged).
			if n := strings.Count(out, `x\\x1b]0;pwned`) + strings.Count(out, `x\x1b]0;pwned`); n < 7 {
				t.Errorf("%d escaped copies, want 7 (msg, with, group, id, err, bytes, grp.inner):\n%s", n, out)
			}
			if strings.Count(out, "\n") != 1 {
				t.Errorf("want exactly one line:\n%s", out)
			}
		})
	}
}
