// Package chart renders the site's charts as inline SVG on the server: a
// line chart (one or two series, points labelled, or a small one for speed
// history), a horizontal bar chart and a status band. Each is a pure
// function of its data that returns one HTML fragment: a <figure> holding
// the SVG, whose <title> and <desc> are its text alternative, and the same
// data as an HTML table behind a <details>, for screen readers, keyboards
// and copying.
//
// Every string is escaped here, whatever its origin (Hub ids and failure
// signatures are strangers' text). Colours come from the site's stylesheet
// through classes (series s0 and s1, tones t-{tone}) and currentColor, so
// charts follow light and dark mode like the rest of the page, and the page's
// Content-Security-Policy needs no inline styles. A chart scales to its
// container's width (viewBox, width 100%). Coordinates are always finite: a
// value that is not (NaN, ±Inf) counts as not measured.
package chart

import (
	"html/template"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Meta is what every chart has.
type Meta struct {
	// ID names the chart's elements; it must be unique on the page. Letters,
	// digits, "-" and "_" are kept, anything else becomes "-".
	ID string
	// Title is the chart's name: the SVG's <title>, the table's caption.
	Title string
	// Desc, when set, starts the text alternative (<desc>); the chart adds a
	// summary of its data.
	Desc string
	// Empty is said instead of a chart when there is no data ("" = "No data yet.").
	Empty string
	// Caption shows the title above the chart, for a chart without a
	// heading of its own on the page.
	Caption bool
}

// dash stands for a value that was not measured, as on the rest of the site.
const dash = "—"

// writer builds a fragment; its helpers escape text and format numbers.
type writer struct{ b strings.Builder }

// raw writes markup that the chart made itself.
func (w *writer) raw(s ...string) {
	for _, x := range s {
		w.b.WriteString(x)
	}
}

// text writes s escaped for HTML and SVG text and quoted attributes.
func (w *writer) text(s string) { w.b.WriteString(esc(s)) }

// html is the fragment built so far: every string in it went through esc.
func (w *writer) html() template.HTML { return template.HTML(w.b.String()) }

// esc escapes &, <, >, " and ', and drops what a document may not carry:
// control characters (but tab and newline) and invalid UTF-8.
func esc(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '&' || c == '<' || c == '>' || c == '"' || c == '\'' || c < 0x20 || c == 0x7f || c >= utf8.RuneSelf {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&#34;")
		case r == '\'':
			b.WriteString("&#39;")
		case r == '\t' || r == '\n':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			// dropped: control characters
		case r == utf8.RuneError:
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// num formats a coordinate with one decimal, "12" rather than "12.0". A
// non-finite value never reaches here (the charts drop them); should one,
// it is written as 0 rather than NaN.
func num(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "0"
	}
	f = math.Round(f*10) / 10
	if f == 0 {
		return "0" // not "-0"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// finite reports whether f is a measured value.
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// cleanID keeps letters, digits, "-" and "_"; anything else becomes "-".
func cleanID(id string) string {
	if id == "" {
		return "chart"
	}
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	return string(b)
}

// cleanClass keeps a class word's lower-case letters, digits and "-".
func cleanClass(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			b = append(b, c)
		}
	}
	return string(b)
}

// truncate shortens s to at most n runes, ending in "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// fitRunes is about how many characters of font size font fit in width
// (an average glyph is taken as 0.62 em wide), at least 4.
func fitRunes(width float64, font int) int {
	return max(4, int(width/(0.62*float64(font))))
}

// Compact formats a count or measurement briefly: 12, 12.5, 0.25, 1.2k,
// 12k, 3.4M, 1.2B, 5T. Non-finite values are a dash.
func Compact(v float64) string {
	if !finite(v) {
		return dash
	}
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	for _, u := range []struct {
		div  float64
		name string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= u.div*0.9995 {
			return sign + sig(v/u.div) + u.name
		}
	}
	return sign + sig(v)
}

// sig writes v (≥ 0) with about three significant digits, without trailing zeros.
func sig(v float64) string {
	var prec int
	switch {
	case v == 0:
		return "0"
	case v < 0.01:
		return strconv.FormatFloat(v, 'g', 2, 64)
	case v < 10:
		prec = 2
	case v < 100:
		prec = 1
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// format applies f, or Compact when f is nil, to a measured value; a value
// that was not measured is a dash.
func format(f func(float64) string, v float64) string {
	if !finite(v) {
		return dash
	}
	if f == nil {
		return Compact(v)
	}
	return f(v)
}

// figure opens a chart's <figure> (and caption) and its <svg>, with the text alternative.
func (w *writer) figure(kind string, m Meta, desc string, width, height int) {
	id, title := cleanID(m.ID), m.Title
	w.raw(`<figure class="chart chart-`, kind, `" id="`, id, `">`, "\n")
	if m.Caption {
		w.raw("<figcaption>")
		w.text(title)
		w.raw("</figcaption>\n")
	}
	w.raw(`<svg class="chart-svg" viewBox="0 0 `, strconv.Itoa(width), ` `, strconv.Itoa(height),
		`" width="100%" role="img" aria-labelledby="`, id, `-t" aria-describedby="`, id, `-d" focusable="false" xmlns="http://www.w3.org/2000/svg">`, "\n")
	w.raw(`<title id="`, id, `-t">`)
	w.text(title)
	w.raw("</title>\n", `<desc id="`, id, `-d">`)
	w.text(desc)
	w.raw("</desc>\n")
}

// table writes the data behind a chart: a caption, column heads, rows.
// The first cell of each row is its header.
func (w *writer) table(title string, heads []string, rows [][]string) {
	// The table may scroll sideways: a labelled region that takes the
	// focus, so that a keyboard can scroll it.
	w.raw("</svg>\n", `<details class="chart-data"><summary>Data table</summary>`, "\n",
		`<div class="table-wrap" tabindex="0" role="region" aria-label="`)
	w.text(title + ", data")
	w.raw(`"><table>`, "\n<caption>")
	w.text(title)
	w.raw("</caption>\n<thead><tr>")
	for i, h := range heads {
		w.raw(`<th scope="col"`)
		if i > 0 {
			w.raw(` class="num"`)
		}
		w.raw(">")
		w.text(h)
		w.raw("</th>")
	}
	w.raw("</tr></thead>\n<tbody>\n")
	for _, r := range rows {
		w.raw("<tr>")
		for i, c := range r {
			if i == 0 {
				w.raw(`<th scope="row">`)
				w.text(c)
				w.raw("</th>")
				continue
			}
			w.raw(`<td class="num">`)
			w.text(c)
			w.raw("</td>")
		}
		w.raw("</tr>\n")
	}
	w.raw("</tbody>\n</table></div>\n</details>\n</figure>\n")
}

// empty is the fragment for a chart without data.
func empty(kind string, m Meta) template.HTML {
	var w writer
	msg := m.Empty
	if msg == "" {
		msg = "No data yet."
	}
	w.raw(`<figure class="chart chart-`, kind, ` chart-empty" id="`, cleanID(m.ID), `">`, "\n<figcaption>")
	w.text(m.Title)
	w.raw("</figcaption>\n<p>")
	w.text(msg)
	w.raw("</p>\n</figure>\n")
	return w.html()
}

// joinDesc puts the caller's description before the chart's own summary.
func joinDesc(desc, summary string) string {
	desc = strings.TrimSpace(desc)
	if desc == "" {
		return summary
	}
	if !strings.HasSuffix(desc, ".") {
		desc += "."
	}
	return desc + " " + summary
}
