package show

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// wcagAA is the minimum contrast ratio for normal-size text (WCAG 2.x, 1.4.3).
const wcagAA = 4.5

func TestContrastRatio(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want float64
	}{{"#000000", "#ffffff", 21}, {"#ffffff", "#ffffff", 1}, {"#777777", "#ffffff", 4.48}} {
		got, err := contrastRatio(c.a, c.b)
		if err != nil || got < c.want-0.01 || got > c.want+0.01 {
			t.Errorf("contrast(%s,%s) = %.2f, %v; want %.2f", c.a, c.b, got, err, c.want)
		}
	}
	if _, err := contrastRatio("red", "#fff"); err == nil {
		t.Error("want an error for a non-hex colour")
	}
}

func TestPaletteContrast(t *testing.T) {
	check := func(what, fg, bg string) {
		t.Helper()
		r, err := contrastRatio(fg, bg)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if r < wcagAA {
			t.Errorf("%s: %s on %s has contrast %.2f, below WCAG AA %.1f", what, fg, bg, r, wcagAA)
		}
	}
	check("badge label", BadgeText, BadgeLabelFill)
	for _, s := range append(compat.Statuses, "unknown") {
		tn := ToneOf(s)
		check("badge "+string(s), BadgeText, BadgeFill[tn])
		check("light chip "+string(s), ChipLight[tn].FG, ChipLight[tn].BG)
		check("dark chip "+string(s), ChipDark[tn].FG, ChipDark[tn].BG)
		// Chips sit on the page background too: their text must read there.
		check("light chip text on page "+string(s), ChipLight[tn].FG, PageLight["bg"])
		check("dark chip text on page "+string(s), ChipDark[tn].FG, PageDark["bg"])
	}
	for _, k := range []string{"fg", "muted", "link"} {
		check("light page "+k, PageLight[k], PageLight["bg"])
		check("dark page "+k, PageDark[k], PageDark["bg"])
	}
	check("light banner", PageLight["banner-fg"], PageLight["banner-bg"])
	check("dark banner", PageDark["banner-fg"], PageDark["banner-bg"])
}

func TestStatusTones(t *testing.T) {
	want := map[compat.Status]Tone{"pass": TonePass, "fail": ToneFail, "oom": ToneWarn, "timeout": ToneWarn, "crash": ToneWarn,
		"skipped": ToneNeutral, "error": ToneNeutral, "untested": ToneNeutral}
	for _, s := range compat.Statuses {
		if ToneOf(s) != want[s] {
			t.Errorf("tone(%s) = %s, want %s", s, ToneOf(s), want[s])
		}
	}
}

func TestStatusCSSUsesPalette(t *testing.T) {
	css := StatusCSS()
	for _, tn := range tones {
		for _, c := range []string{ChipLight[tn].FG, ChipLight[tn].BG, ChipDark[tn].FG, ChipDark[tn].BG} {
			if !strings.Contains(css, c) {
				t.Errorf("status CSS lacks %s", c)
			}
		}
		if !strings.Contains(css, ".st-"+string(tn)+" ") {
			t.Errorf("status CSS lacks .st-%s", tn)
		}
		if !strings.Contains(css, ".chart .t-"+string(tn)+" { fill: var(--"+string(tn)+"-fg); }") {
			t.Errorf("status CSS lacks the chart fill of tone %s", tn)
		}
	}
	if !strings.Contains(css, "prefers-color-scheme: dark") {
		t.Error("no dark mode")
	}
}

// relativeLuminance is WCAG 2's relative luminance of a #rrggbb colour.
func relativeLuminance(hex string) (float64, error) {
	h := strings.TrimPrefix(hex, "#")
	if len(h) != 6 {
		return 0, fmt.Errorf("colour %q: want #rrggbb", hex)
	}
	v, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("colour %q: %w", hex, err)
	}
	ch := func(c uint64) float64 {
		x := float64(c) / 255
		if x <= 0.03928 {
			return x / 12.92
		}
		return math.Pow((x+0.055)/1.055, 2.4)
	}
	return 0.2126*ch(v>>16&0xff) + 0.7152*ch(v>>8&0xff) + 0.0722*ch(v&0xff), nil
}

// contrastRatio is WCAG 2's contrast ratio of two #rrggbb colours (1 to 21).
func contrastRatio(a, b string) (float64, error) {
	la, err := relativeLuminance(a)
	if err != nil {
		return 0, err
	}
	lb, err := relativeLuminance(b)
	if err != nil {
		return 0, err
	}
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05), nil
}
