package show

import (
	"fmt"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// Tone groups status words that share a colour.
type Tone string

const (
	TonePass    Tone = "pass"    // pass
	ToneFail    Tone = "fail"    // fail
	ToneWarn    Tone = "warn"    // oom, timeout, crash: held against the model, but not a plain failure
	ToneNeutral Tone = "neutral" // skipped, error, untested, unknown: no verdict on the model
)

// ToneOf maps a status word to its colour group (statusWords). Anything
// unknown is neutral.
func ToneOf(s compat.Status) Tone { return WordOf(s).Tone }

// Chip is the foreground and background of a status label on a page.
type Chip struct{ FG, BG string }

// Palette: the single source of the site's status colours. The stylesheet's
// status rules are generated from it (statusCSS) and palette_test.go checks
// every pair against WCAG AA (4.5:1 for normal text).
var (
	// badgeFill is the message background of SVG badges; the text is white.
	BadgeFill = map[Tone]string{
		TonePass:    "#1a7f37",
		ToneFail:    "#cf222e",
		ToneWarn:    "#bc4c00",
		ToneNeutral: "#656d76",
	}
	// badgeLabelFill is the label (left) background of SVG badges.
	BadgeLabelFill = "#555555"
	BadgeText      = "#ffffff"

	ChipLight = map[Tone]Chip{
		TonePass:    {"#116329", "#dafbe1"},
		ToneFail:    {"#a40e26", "#ffebe9"},
		ToneWarn:    {"#953800", "#fff1e5"},
		ToneNeutral: {"#424a53", "#eaeef2"},
	}
	ChipDark = map[Tone]Chip{
		TonePass:    {"#7ee787", "#0f2d1b"},
		ToneFail:    {"#ffa198", "#3d1214"},
		ToneWarn:    {"#ffb77c", "#3a2008"},
		ToneNeutral: {"#c9d1d9", "#2d333b"},
	}
	// Page text on page backgrounds, light and dark.
	PageLight = map[string]string{"fg": "#1f2328", "muted": "#59636e", "link": "#0969da", "bg": "#ffffff", "banner-fg": "#953800", "banner-bg": "#fff1e5"}
	PageDark  = map[string]string{"fg": "#e6edf3", "muted": "#9198a1", "link": "#4493f8", "bg": "#0d1117", "banner-fg": "#ffb77c", "banner-bg": "#3a2008"}
)

var tones = []Tone{TonePass, ToneFail, ToneWarn, ToneNeutral}

// StatusCSS renders the palette as CSS custom properties, light by default
// and dark under prefers-color-scheme.
func StatusCSS() string {
	var b strings.Builder
	write := func(page map[string]string, chips map[Tone]Chip) {
		for _, k := range []string{"fg", "muted", "link", "bg", "banner-fg", "banner-bg"} {
			fmt.Fprintf(&b, "  --%s: %s;\n", k, page[k])
		}
		for _, t := range tones {
			fmt.Fprintf(&b, "  --%s-fg: %s;\n  --%s-bg: %s;\n", t, chips[t].FG, t, chips[t].BG)
		}
	}
	b.WriteString(":root {\n  color-scheme: light dark;\n")
	write(PageLight, ChipLight)
	b.WriteString("}\n@media (prefers-color-scheme: dark) {\n:root {\n")
	write(PageDark, ChipDark)
	b.WriteString("}\n}\n")
	for _, t := range tones {
		fmt.Fprintf(&b, ".st-%s { color: var(--%s-fg); background: var(--%s-bg); }\n", t, t, t)
		fmt.Fprintf(&b, ".chart .t-%s { fill: var(--%s-fg); }\n", t, t) // status bands, bars (web/chart)
	}
	return b.String()
}
