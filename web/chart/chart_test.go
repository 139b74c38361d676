package chart

import (
	"encoding/xml"
	"errors"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got template.HTML) {
	t.Helper()
	testenv.Golden(t, name, []byte(got))
}

// pct formats a rate as the site does.
func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + " %" }

func ptr(f float64) *float64 { return &f }

var nan = math.NaN()

// Charts as the site draws them; the golden files were checked by eye in a
// browser (light, dark, 360 px wide) before being committed.
func goldenCharts() map[string]template.HTML {
	return map[string]template.HTML{
		"line_rates.html": Line{
			Meta:   Meta{ID: "rates", Title: "Pass rate by runtime", Desc: "Share of tested models that pass on TPU."},
			XName:  "Runtime",
			Labels: []string{"torch_tpu 0.1.0", "torch_tpu 0.1.1", "torch_tpu 0.2.0", "torch_tpu 0.3.0"},
			Series: []Series{
				{Name: "Pass rate", Values: []float64{0.41, 0.44, 0.52, 0.50}},
				{Name: "Download-weighted", Values: []float64{0.62, 0.70, 0.71, 0.78}},
			},
			Format: pct, Min: ptr(0), Max: ptr(1),
		}.Render(),
		"line_many.html": Line{
			Meta:   Meta{ID: "many", Title: "Tokens per second"},
			XName:  "Tested",
			Labels: []string{"d01", "d02", "d03", "d04", "d05", "d06", "d07", "d08", "d09", "d10", "d11", "d12"},
			Series: []Series{{Name: "tok/s", Values: []float64{10, 12, 11, 30, 29, 31, 5, 28, 27, 29, 30, 32}}},
		}.Render(),
		"line_small.html": Line{
			Meta:   Meta{ID: "speed", Title: "Compile time (s)", Caption: true},
			XName:  "Tested",
			Labels: []string{"2026-11-01", "2026-11-08", "2026-11-15", "2026-11-22", "2026-11-29"},
			Series: []Series{{Name: "Compile", Values: []float64{42.5, nan, 38.25, 12, 11.5}}},
			Small:  true,
		}.Render(),
		"bars.html": Bars{
			Meta: Meta{ID: "failures", Title: "Top failure signatures by downloads"},
			Bars: []Bar{
				{Label: "unsupported_op:aten::_fft_r2c", Value: 0.09, Note: "14 models"},
				{Label: "compile_error:torch._dynamo.exc.Unsupported", Value: 0.031, Note: "3 models"},
				{Label: "oom", Value: 0.0004, Note: "1 model"},
			},
			Format: pct, Tone: "fail",
			LabelName: "Signature", ValueName: "Share of downloads", NoteName: "Models",
		}.Render(),
		"band.html": Band{
			Meta: Meta{ID: "band-tpu", Title: "Status on TPU over time"},
			Cells: []Cell{
				{Label: "fail", Tone: "fail", When: "2026-11-01 06:00 UTC", Note: "forward, unsupported_op:aten::_fft_r2c"},
				{Label: "fail", Tone: "fail", When: "2026-11-08 06:00 UTC", Note: "forward, unsupported_op:aten::_fft_r2c"},
				{Label: "pass", Tone: "pass", When: "2026-11-15 06:00 UTC"},
				{Label: "oom", Tone: "warn", When: "2026-11-22 06:00 UTC", Note: "load"},
				{Label: "pass", Tone: "pass", When: "2026-11-29 06:00 UTC"},
			},
		}.Render(),
		"empty.html": Bars{Meta: Meta{ID: "none", Title: "Top failure signatures", Empty: "No failures on record."}}.Render(),
	}
}

func TestGolden(t *testing.T) {
	charts := goldenCharts()
	for name, got := range charts {
		t.Run(name, func(t *testing.T) {
			golden(t, name, got)
			checkWellFormed(t, got)
		})
	}
	if len(charts) != 6 {
		t.Fatalf("%d golden charts", len(charts))
	}
}

// allowed are the elements and attributes a chart may contain: no script,
// no style, no event handlers, no links.
var allowed = map[string]map[string]bool{
	"figure": {"class": true, "id": true}, "figcaption": {}, "p": {},
	"svg":   {"class": true, "viewBox": true, "width": true, "role": true, "aria-labelledby": true, "aria-describedby": true, "focusable": true, "xmlns": true},
	"title": {"id": true}, "desc": {"id": true},
	"g":       {"class": true, "font-size": true, "fill": true},
	"line":    {"class": true, "x1": true, "x2": true, "y1": true, "y2": true, "stroke": true, "stroke-opacity": true, "stroke-width": true, "stroke-dasharray": true},
	"path":    {"class": true, "d": true, "fill": true, "stroke": true, "stroke-width": true, "stroke-dasharray": true},
	"circle":  {"class": true, "cx": true, "cy": true, "r": true, "fill": true},
	"rect":    {"class": true, "x": true, "y": true, "width": true, "height": true, "rx": true, "fill": true},
	"text":    {"class": true, "x": true, "y": true, "dy": true, "text-anchor": true, "font-size": true, "fill": true},
	"details": {"class": true}, "summary": {}, "div": {"class": true, "tabindex": true, "role": true, "aria-label": true}, "table": {}, "caption": {},
	"thead": {}, "tbody": {}, "tr": {}, "th": {"scope": true, "class": true}, "td": {"class": true},
}

// checkWellFormed parses a chart as XML (it is written to be), checks every
// element and attribute against the allowlist and every number in a
// geometric attribute for being finite, and returns the decoded text.
func checkWellFormed(t *testing.T, frag template.HTML) string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader("<root>" + string(frag) + "</root>"))
	d.Strict = true
	var text strings.Builder
	elements := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, frag)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if x.Name.Local == "root" {
				continue
			}
			elements++
			attrs, ok := allowed[x.Name.Local]
			if !ok {
				t.Errorf("element <%s> not allowed", x.Name.Local)
				continue
			}
			for _, a := range x.Attr {
				name := a.Name.Local
				if a.Name.Space != "" && name != "xmlns" {
					name = a.Name.Space + ":" + name
				}
				if !attrs[name] {
					t.Errorf("<%s %s=%q>: attribute not allowed", x.Name.Local, name, a.Value)
				}
				checkNumbers(t, x.Name.Local, name, a.Value)
			}
		case xml.CharData:
			text.Write(x)
			text.WriteByte('\n')
		}
	}
	if elements == 0 {
		t.Fatalf("no elements in %s", frag)
	}
	return text.String()
}

// geometric attributes hold numbers (and path letters) only.
var geometric = map[string]bool{"x": true, "y": true, "x1": true, "x2": true, "y1": true, "y2": true, "cx": true, "cy": true,
	"r": true, "width": true, "height": true, "d": true, "viewBox": true}

func checkNumbers(t *testing.T, el, attr, v string) {
	t.Helper()
	if !geometric[attr] || (el == "svg" && attr == "width") {
		return
	}
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == 'M' || r == 'L' }) {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			t.Errorf("<%s %s=%q>: %q is not a finite number", el, attr, v, f)
		}
		if math.Abs(x) > 10000 {
			t.Errorf("<%s %s=%q>: %v is far outside the chart", el, attr, v, x)
		}
	}
}

// Hub strings and other strangers' text land in labels, titles, notes and
// series names; they must come out as text, every character intact.
func TestHostileStrings(t *testing.T) {
	hostile := []string{
		`<script>alert(1)</script>`,
		`"><img src=x onerror=alert(1)>`,
		`' onmouseover='alert(1)`,
		`a & b < c > d`,
		`]]><!--`,
		`javascript:alert(1)`,
	}
	for _, h := range hostile {
		charts := map[string]template.HTML{
			"line": Line{Meta: Meta{ID: h, Title: h, Desc: h}, XName: h, Labels: []string{h, h + "2"},
				Series: []Series{{Name: h, Values: []float64{1, 2}}, {Name: h, Values: []float64{2, 1}}},
				Format: func(float64) string { return h }}.Render(),
			"small": Line{Meta: Meta{ID: h, Title: h}, Labels: []string{h}, Series: []Series{{Name: h, Values: []float64{3}}}, Small: true}.Render(),
			"bars": Bars{Meta: Meta{ID: h, Title: h, Desc: h}, Bars: []Bar{{Label: h, Value: 5, Note: h}}, Tone: h,
				LabelName: h, ValueName: h, NoteName: h}.Render(),
			"band":  Band{Meta: Meta{ID: h, Title: h}, Cells: []Cell{{Label: h, Tone: h, When: h, Note: h}}}.Render(),
			"empty": Band{Meta: Meta{ID: h, Title: h, Empty: h}}.Render(),
		}
		for kind, out := range charts {
			text := checkWellFormed(t, out)
			if !strings.Contains(text, h) {
				t.Errorf("%s: the text %q does not come out intact:\n%s", kind, h, out)
			}
			if strings.Contains(string(out), "<script") || strings.Contains(string(out), "<img") {
				t.Errorf("%s: markup from %q came through:\n%s", kind, h, out)
			}
		}
	}
}

func TestEscapeDropsControlCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"plain":            "plain",
		"a\x00b\x1bc\x7fd": "abcd",
		"tab\tnew\nline":   "tab\tnew\nline",
		"bad \xff utf8":    "bad \uFFFD utf8",
		"c1 \u0085 x":      "c1  x",
		"é ✓ 模型":           "é ✓ 模型",
		`<&>"'`:            "&lt;&amp;&gt;&#34;&#39;",
		// Each character that needs work alone, so that no other character
		// of the string sends it the long way round.
		"&":      "&amp;",
		"<":      "&lt;",
		">":      "&gt;",
		`"`:      "&#34;",
		"'":      "&#39;",
		"\x01":   "",
		"\x1f":   "",
		"\x7f":   "",
		"\x80":   "\uFFFD", // a lone continuation byte: the first byte ≥ 0x80
		"\xff":   "\uFFFD",
		"\u0085": "",       // C1 control, valid UTF-8
		"\u0080": "",       // the first C1 control
		"\u009f": "",       // the last
		"\u00a0": "\u00a0", // no-break space, the first character after them
		" ~":     " ~",
	} {
		if got := esc(in); got != want {
			t.Errorf("esc(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEdgeCases(t *testing.T) {
	inf := math.Inf(1)
	cases := map[string]struct {
		out      template.HTML
		empty    bool
		contains []string
	}{
		"line without points": {out: Line{Meta: Meta{ID: "a", Title: "T"}}.Render(), empty: true, contains: []string{"No data yet."}},
		"line without series": {out: Line{Meta: Meta{ID: "a", Title: "T"}, Labels: []string{"x"}}.Render(), empty: true},
		"line never measured": {out: Line{Meta: Meta{ID: "a", Title: "T", Empty: "Not measured yet."}, Labels: []string{"x", "y"},
			Series: []Series{{Name: "s", Values: []float64{nan, inf}}}}.Render(), empty: true, contains: []string{"Not measured yet."}},
		"line one point": {out: Line{Meta: Meta{ID: "a", Title: "T"}, Labels: []string{"only"},
			Series: []Series{{Name: "s", Values: []float64{7}}}}.Render(), contains: []string{"1 point: only.", `cx="201"`, ">7</text>"}},
		"line all equal": {out: Line{Meta: Meta{ID: "a", Title: "T"}, Labels: []string{"a", "b", "c"},
			Series: []Series{{Name: "s", Values: []float64{0, 0, 0}}}}.Render(), contains: []string{"lowest 0, highest 0"}},
		"line all equal, not zero": {out: Line{Meta: Meta{ID: "a", Title: "T"}, Labels: []string{"a", "b"},
			Series: []Series{{Name: "s", Values: []float64{5, 5}}}}.Render(), contains: []string{"5 (a) to 5 (b)"}},
		"line huge values": {out: Line{Meta: Meta{ID: "a", Title: "T"}, Labels: []string{"a", "b"},
			Series: []Series{{Name: "s", Values: []float64{1e18, math.MaxFloat64}}}}.Render(), contains: []string{"1000000T"}},
		"line negative and huge": {out: Line{Meta: Meta{ID: "a", Title: "T"}, Labels: []string{"a", "b"},
			Series: []Series{{Name: "s", Values: []float64{-math.MaxFloat64, math.MaxFloat64}}}}.Render()},
		"line with gaps and inf": {out: Line{Meta: Meta{ID: "a", Title: "T"}, Labels: []string{"a", "b", "c", "d"},
			Series: []Series{{Name: "s", Values: []float64{1, inf, math.Inf(-1), 2}}}}.Render(),
			contains: []string{"not measured at 2 of 4 points", "<td class=\"num\">—</td>"}},
		"line values outside a fixed range": {out: Line{Meta: Meta{ID: "a", Title: "T"}, Labels: []string{"a", "b"},
			Series: []Series{{Name: "s", Values: []float64{-3, 7}}}, Min: ptr(0), Max: ptr(1)}.Render()},
		"line upside-down range": {out: Line{Meta: Meta{ID: "a", Title: "T"}, Labels: []string{"a", "b"},
			Series: []Series{{Name: "s", Values: []float64{1, 2}}}, Min: ptr(1), Max: ptr(0)}.Render()},
		"line shorter series": {out: Line{Meta: Meta{ID: "a", Title: "T"}, Labels: []string{"a", "b", "c"},
			Series: []Series{{Name: "s", Values: []float64{1}}}}.Render(), contains: []string{"not measured at 2 of 3 points"}},
		"line three series draws two": {out: Line{Meta: Meta{ID: "a", Title: "T"}, Labels: []string{"a"},
			Series: []Series{{Name: "one", Values: []float64{1}}, {Name: "two", Values: []float64{2}}, {Name: "three", Values: []float64{3}}}}.Render()},
		"bars none":       {out: Bars{Meta: Meta{ID: "b", Title: "T"}}.Render(), empty: true},
		"bars one":        {out: Bars{Meta: Meta{ID: "b", Title: "T"}, Bars: []Bar{{Label: "x", Value: 3}}}.Render(), contains: []string{"1 bar: x 3."}},
		"bars all zero":   {out: Bars{Meta: Meta{ID: "b", Title: "T"}, Bars: []Bar{{Label: "x"}, {Label: "y"}}}.Render()},
		"bars huge":       {out: Bars{Meta: Meta{ID: "b", Title: "T"}, Bars: []Bar{{Label: "x", Value: 9e18}, {Label: "y", Value: 1}}}.Render(), contains: []string{"9000000T"}},
		"bars nan":        {out: Bars{Meta: Meta{ID: "b", Title: "T"}, Bars: []Bar{{Label: "x", Value: nan}, {Label: "y", Value: -inf}}}.Render()},
		"bars negative":   {out: Bars{Meta: Meta{ID: "b", Title: "T"}, Bars: []Bar{{Label: "x", Value: -5}}}.Render()},
		"band none":       {out: Band{Meta: Meta{ID: "c", Title: "T"}}.Render(), empty: true},
		"band one":        {out: Band{Meta: Meta{ID: "c", Title: "T"}, Cells: []Cell{{Label: "pass", Tone: "pass", When: "now"}}}.Render(), contains: []string{"1 result, now: 1 pass. Latest: now: pass."}},
		"band many cells": {out: Band{Meta: Meta{ID: "c", Title: "T"}, Cells: manyCells(1000)}.Render(), contains: []string{"1000 results"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out := string(c.out)
			checkWellFormed(t, c.out)
			for _, bad := range []string{"NaN", "Inf", "e+", "-0 ", `"-0"`} {
				if strings.Contains(out, bad) {
					t.Errorf("output contains %q:\n%s", bad, out)
				}
			}
			if got := strings.Contains(out, "<svg"); got == c.empty {
				t.Errorf("svg present %v, want %v:\n%s", got, !c.empty, out)
			}
			if !c.empty && (!strings.Contains(out, "<title id=") || !strings.Contains(out, "<desc id=") || !strings.Contains(out, "<table>")) {
				t.Errorf("a chart needs its title, desc and data table:\n%s", out)
			}
			for _, s := range c.contains {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
		})
	}
}

func manyCells(n int) []Cell {
	cells := make([]Cell, n)
	for i := range cells {
		cells[i] = Cell{Label: "pass", Tone: "pass", When: strconv.Itoa(i)}
		if i%3 == 0 {
			cells[i] = Cell{Label: "fail", Tone: "fail", When: strconv.Itoa(i)}
		}
	}
	return cells
}

func TestCompact(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {7, "7"}, {12.5, "12.5"}, {0.25, "0.25"}, {0.004, "0.004"}, {999, "999"}, {999.6, "1k"},
		{1234, "1.23k"}, {12345, "12.3k"}, {123456, "123k"}, {1.5e6, "1.5M"}, {2e9, "2B"}, {5e12, "5T"},
		{1e18, "1000000T"}, {-1500, "-1.5k"},
		// A unit from 0.9995 of it on, where three digits would round up to it.
		{999.4, "999"}, {999.5, "1k"}, {999_499, "999k"}, {999_500, "1M"}, {999.5e6, "1B"}, {999.5e9, "1T"}, {nan, "—"}, {math.Inf(1), "—"}, {math.Inf(-1), "—"},
	} {
		if got := Compact(c.v); got != c.want {
			t.Errorf("Compact(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct{ v, want float64 }{
		{1, 1}, {1.1, 2}, {2, 2}, {2.1, 2.5}, {3, 5}, {7, 10}, {0.3, 0.5}, {42, 50}, {1234, 2000}, {math.MaxFloat64, math.MaxFloat64},
		// 1e-12 above a round number is taken as it (m × 10^k computed in
		// floating point may fall just short of the value it stands for):
		// 2.000000000002 × (1 − 1e-12) is 2 in float64.
		{2.000000000002, 2}, {5.000000000005, 5}, {2.00000000001, 2.5},
	} {
		if got := niceCeil(c.v); got != c.want {
			t.Errorf("niceCeil(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

func TestCleanID(t *testing.T) {
	for in, want := range map[string]string{"": "chart", "band-tpu": "band-tpu", `a"b c<d`: "a-b-c-d", "é": "--",
		// the ends of each kept range, and the bytes just outside them
		"azAZ09_-": "azAZ09_-", "`{@[/:": "------"} {
		if got := cleanID(in); got != want {
			t.Errorf("cleanID(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCleanClass: a class word keeps lower-case letters, digits and "-",
// and drops everything else.
func TestCleanClass(t *testing.T) {
	for in, want := range map[string]string{"fail": "fail", "az09-": "az09-", "`{/:AZ_ é": "", "t-Warn 2": "t-arn2"} {
		if got := cleanClass(in); got != want {
			t.Errorf("cleanClass(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTruncate: at most n runes, the last "…" when cut.
func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abcd", 4, "abcd"}, {"abcde", 4, "abc…"}, {"abcdefgh", 4, "abc…"}, {"模型模型", 4, "模型模型"}, {"模型模型模", 4, "模型模…"}, {"", 4, ""},
	} {
		if got := truncate(c.s, c.n); got != c.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
