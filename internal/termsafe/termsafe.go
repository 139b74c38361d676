// Package termsafe makes text that came from strangers (Hub ids and error
// messages, a server's answers, a harness's output) safe to print on a
// terminal or write to a log: control characters cannot clear the screen,
// retitle the window, move the cursor, forge a log line or reorder what is
// shown. It is the one rule for that; the CLI's output and the log handler
// (Handler) both use it.
package termsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Line returns s with every character that could act on a terminal or
// split a log line written as a visible escape: C0 controls (ESC, CR, LF,
// BEL, NUL, …, all but TAB), DEL, C1 controls (U+0080–U+009F, CSI among
// them), Unicode's bidirectional controls (U+200E, U+200F, U+202A–U+202E,
// U+2066–U+2069) and bytes that are not UTF-8. ESC becomes `\x1b`, U+202E
// becomes `\u202e`. Text without such characters is returned as is.
func Line(s string) string { return clean(s, false) }

// Text is Line for text printed as several lines: it keeps line feeds.
func Text(s string) string { return clean(s, true) }

func clean(s string, keepLF bool) string {
	i := firstUnsafe(s, keepLF)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r, keepLF) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r, keepLF):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// firstUnsafe is the byte index of the first character Line (or Text)
// escapes, or -1: the common case, plain text, costs one pass and no
// allocation.
func firstUnsafe(s string, keepLF bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && !(keepLF && c == '\n') || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || unsafeRune(r, keepLF) {
			return i
		}
		i += size
	}
	return -1
}

func unsafeRune(r rune, keepLF bool) bool {
	switch {
	case r == '\t', keepLF && r == '\n':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
