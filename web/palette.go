package web

import (
	"fmt"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// tone groups status words that share a colour.
type tone string

const (
	tonePass    tone = "pass"    // pass
	toneFail    tone = "fail"    // fail
	toneWarn    tone = "warn"    // oom, timeout, crash: held against the model, but not a plain failure
	toneNeutral tone = "neutral" // skipped, error, untested, unknown: no verdict on the model
)

// toneOf maps a status word to its colour group (statusWords). Anything
// unknown is neutral.
func toneOf(s compat.Status) tone { return wordOf(s).tone }

// chip is the foreground and background of a status label on a page.
type chip struct{ FG, BG string }

// Palette: the single source of the site's status colours. The stylesheet's
// status rules are generated from it (statusCSS) and palette_test.go checks
// every pair against WCAG AA (4.5:1 for normal text).
var (
	// badgeFill is the message background of SVG badges; the text is white.
	badgeFill = map[tone]string{
		tonePass:    "#1a7f37",
		toneFail:    "#cf222e",
		toneWarn:    "#bc4c00",
		toneNeutral: "#656d76",
	}
	// badgeLabelFill is the label (left) background of SVG badges.
	badgeLabelFill = "#555555"
	badgeText      = "#ffffff"

	chipLight = map[tone]chip{
		tonePass:    {"#116329", "#dafbe1"},
		toneFail:    {"#a40e26", "#ffebe9"},
		toneWarn:    {"#953800", "#fff1e5"},
		toneNeutral: {"#424a53", "#eaeef2"},
	}
	chipDark = map[tone]chip{
		tonePass:    {"#7ee787", "#0f2d1b"},
		toneFail:    {"#ffa198", "#3d1214"},
		toneWarn:    {"#ffb77c", "#3a2008"},
		toneNeutral: {"#c9d1d9", "#2d333b"},
	}
	// Page text on page backgrounds, light and dark.
	pageLight = map[string]string{"fg": "#1f2328", "muted": "#59636e", "link": "#0969da", "bg": "#ffffff", "banner-fg": "#953800", "banner-bg": "#fff1e5"}
	pageDark  = map[string]string{"fg": "#e6edf3", "muted": "#9198a1", "link": "#4493f8", "bg": "#0d1117", "banner-fg": "#ffb77c", "banner-bg": "#3a2008"}
)

var tones = []tone{tonePass, toneFail, toneWarn, toneNeutral}

// statusCSS renders the palette as CSS custom properties, light by default
// and dark under prefers-color-scheme.
func statusCSS() string {
	var b strings.Builder
	write := func(page map[string]string, chips map[tone]chip) {
		for _, k := range []string{"fg", "muted", "link", "bg", "banner-fg", "banner-bg"} {
			fmt.Fprintf(&b, "  --%s: %s;\n", k, page[k])
		}
		for _, t := range tones {
			fmt.Fprintf(&b, "  --%s-fg: %s;\n  --%s-bg: %s;\n", t, chips[t].FG, t, chips[t].BG)
		}
	}
	b.WriteString(":root {\n  color-scheme: light dark;\n")
	write(pageLight, chipLight)
	b.WriteString("}\n@media (prefers-color-scheme: dark) {\n:root {\n")
	write(pageDark, chipDark)
	b.WriteString("}\n}\n")
	for _, t := range tones {
		fmt.Fprintf(&b, ".st-%s { color: var(--%s-fg); background: var(--%s-bg); }\n", t, t, t)
		fmt.Fprintf(&b, ".chart .t-%s { fill: var(--%s-fg); }\n", t, t) // status bands, bars (web/chart)
	}
	return b.String()
}
