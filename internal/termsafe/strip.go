package termsafe

import (
	"strings"
	"unicode/utf8"
)

// Strip returns s without what Text would escape, for text that is kept
// rather than printed (a result's message and log tail, as the store
// records them): terminal escape sequences go whole (ESC [ … final byte,
// the C1 CSI U+009B likewise, ESC ] … up to BEL or ESC \, ESC and one more
// character), so a coloured "\x1b[31mERROR\x1b[0m" keeps "ERROR"; every
// other character Text escapes (C0 but TAB and LF, DEL, C1, bidirectional
// controls) is dropped, and bytes that are not UTF-8 become U+FFFD. Text
// without such characters is returned as is.
func Strip(s string) string {
	i := firstUnsafe(s, true)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteString("\uFFFD")
		case r == 0x1b:
			size += escapeLen(s[i+size:])
		case r == 0x9b:
			size += csiLen(s[i+size:])
		case unsafeRune(r, true):
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// escapeLen is the length of what follows an ESC as part of its sequence.
func escapeLen(s string) int {
	switch {
	case s == "":
		return 0
	case s[0] == '[':
		return 1 + csiLen(s[1:])
	case s[0] == ']' || s[0] == 'P' || s[0] == '_' || s[0] == '^':
		return 1 + stringLen(s[1:]) // OSC, DCS, APC, PM: a string up to its terminator
	}
	_, size := utf8.DecodeRuneInString(s)
	return size // a two-character escape (ESC c, ESC 7, …)
}

// csiLen is the length of a control sequence's parameters, intermediates
// and final byte (ECMA-48: 0x30–0x3F*, 0x20–0x2F*, one of 0x40–0x7E); a
// sequence cut short ends at the first byte outside those ranges.
func csiLen(s string) int {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// stringLen is the length of a control string up to and including its
// terminator, BEL or ESC \ (the whole rest when it has none).
func stringLen(s string) int {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		}
	}
	return len(s)
}
