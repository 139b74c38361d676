package chart

import (
	"html/template"
	"strconv"
	"strings"
	"testing"
)

// group is the body of out's first <g class="class" ...> element.
func group(t *testing.T, out, class string) string {
	t.Helper()
	_, rest, ok := strings.Cut(out, `<g class="`+class+`"`)
	if !ok {
		t.Fatalf("no <g class=%q> in:\n%s", class, out)
	}
	_, body, _ := strings.Cut(rest, ">\n")
	body, _, _ = strings.Cut(body, "</g>")
	return body
}

// cells is a band of n results, When from whens in turn.
func cells(n int, whens ...string) []Cell {
	cs := make([]Cell, n)
	for i := range cs {
		cs[i] = Cell{Label: "pass", Tone: "pass", When: whens[i%len(whens)]}
	}
	return cs
}

// TestBandTimeLabels: the band's time axis names its first and last result
// under their cells when each fits in half the band's width, else says
// "first – last" on one line. The widths are worked out by hand from the
// geometry: 5 cells are 24 units wide with a 1-unit gap, so they span
// 5×24−1 = 119 units; half of that less 4 is 55.5 units, and a 12-unit
// font's glyph is taken as 0.62×12 = 7.44 units, so 7 runes fit (55.5/7.44
// = 7.46) and 8 do not.
func TestBandTimeLabels(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cells []Cell
		want  string // the body of <g class="x">
	}{
		{"short labels under the first and last cell", cells(5, "d1", "d2", "d3", "d4", "d5"),
			`<text x="0" y="48">d1</text>` + "\n" + `<text x="119" y="48" text-anchor="end">d5</text>` + "\n"},
		{"7 runes each: they fit", cells(5, "1234567", "x", "x", "x", "7654321"),
			`<text x="0" y="48">1234567</text>` + "\n" + `<text x="119" y="48" text-anchor="end">7654321</text>` + "\n"},
		{"8 runes first: one line", cells(5, "12345678", "x", "x", "x", "7654321"),
			`<text x="0" y="48">12345678 – 7654321</text>` + "\n"},
		{"8 runes last: one line", cells(5, "1234567", "x", "x", "x", "87654321"),
			`<text x="0" y="48">1234567 – 87654321</text>` + "\n"},
		{"8 runes each: one line", cells(5, "12345678", "x", "x", "x", "87654321"),
			`<text x="0" y="48">12345678 – 87654321</text>` + "\n"},
		// One result is named once, however short, never "now – now".
		{"one result", cells(1, "now"), `<text x="0" y="48">now</text>` + "\n"},
		// Two cells are 24 units each: they span 47, half less 4 is 19.5,
		// 2 runes fit (19.5/7.44 = 2.6).
		{"two results", cells(2, "ab", "cd"),
			`<text x="0" y="48">ab</text>` + "\n" + `<text x="47" y="48" text-anchor="end">cd</text>` + "\n"},
		// The one line is cut to what fits the band's whole width: 360/7.44
		// = 48.4, so 48 runes, the last of them "…".
		{"one line cut to the band", cells(2, strings.Repeat("a", 30), strings.Repeat("b", 30)),
			`<text x="0" y="48">` + strings.Repeat("a", 30) + " – " + strings.Repeat("b", 14) + "…</text>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := string(Band{Meta: Meta{ID: "b", Title: "T"}, Cells: tc.cells}.Render())
			checkWellFormed(t, template.HTML(out))
			if got := group(t, out, "x"); got != tc.want {
				t.Errorf("time labels:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestBandCellWidth: cells are as wide as the band allows, at most 24 units;
// each is 1 unit narrower (a gap) while 4 or more units wide, and without a
// gap when narrower.
func TestBandCellWidth(t *testing.T) {
	for _, tc := range []struct {
		n         int
		x1, width string // the second cell's x, every cell's width
	}{
		{1, "", "23"},
		{15, "24", "23"},    // 360/15 = 24
		{30, "12", "11"},    // 360/30 = 12
		{90, "4", "3"},      // 360/90 = 4: still a gap
		{100, "3.6", "3.6"}, // 360/100 = 3.6: none
	} {
		out := string(Band{Meta: Meta{ID: "b", Title: "T"}, Cells: cells(tc.n, "x")}.Render())
		body := group(t, out, "cells")
		if got := strings.Count(body, `<rect class="cell t-pass"`); got != tc.n {
			t.Errorf("%d cells: %d drawn", tc.n, got)
		}
		if got := strings.Count(body, ` width="`+tc.width+`" height="28"`); got != tc.n {
			t.Errorf("%d cells: %d of width %s:\n%s", tc.n, got, tc.width, body)
		}
		if tc.x1 != "" && !strings.Contains(body, `x="`+tc.x1+`" y="4"`) {
			t.Errorf("%d cells: no cell at x=%s:\n%s", tc.n, tc.x1, body)
		}
	}
}

// TestBandDetailColumn: the data table has a Detail column when, and only
// when, some result has a note.
func TestBandDetailColumn(t *testing.T) {
	noted := func(notes ...string) []Cell {
		cs := cells(len(notes), "x")
		for i, n := range notes {
			cs[i].Note = n
		}
		return cs
	}
	for _, tc := range []struct {
		name   string
		cells  []Cell
		detail bool
	}{
		{"no notes", noted("", ""), false},
		{"every result noted", noted("load", "forward"), true},
		{"one of two noted", noted("", "forward"), true},
		{"the first of two noted", noted("load", ""), true},
	} {
		out := string(Band{Meta: Meta{ID: "b", Title: "T"}, Cells: tc.cells}.Render())
		if got := strings.Contains(out, `<th scope="col" class="num">Detail</th>`); got != tc.detail {
			t.Errorf("%s: Detail column %v, want %v:\n%s", tc.name, got, tc.detail, out)
		}
		if tc.detail && !strings.Contains(out, `<td class="num">forward</td>`) && !strings.Contains(out, `<td class="num">load</td>`) {
			t.Errorf("%s: no note in the table:\n%s", tc.name, out)
		}
	}
}

// TestBandLegendStops: the legend draws entries left to right while the
// next one starts within 40 units of the band's right edge (320 of 360);
// the table and the summary name the rest. An entry "a 1" takes
// 14 + 7×3 + 14 = 49 units, so entries start at 0, 49, …, 294 (7 drawn);
// the 8th would start at 343.
func TestBandLegendStops(t *testing.T) {
	cs := make([]Cell, 10)
	for i := range cs {
		cs[i] = Cell{Label: string(rune('a' + i)), Tone: "pass", When: "x"}
	}
	out := string(Band{Meta: Meta{ID: "b", Title: "T"}, Cells: cs}.Render())
	body := group(t, out, "legend")
	if got := strings.Count(body, `width="10" height="10"`); got != 7 {
		t.Errorf("%d legend entries drawn, want 7:\n%s", got, body)
	}
	for i, x := range []int{0, 49, 98, 147, 196, 245, 294} {
		want := `<rect class="cell t-pass" x="` + strconv.Itoa(x) + `" y="57" width="10" height="10"/><text x="` +
			strconv.Itoa(x+14) + `" y="66">` + string(rune('a'+i)) + " 1</text>"
		if !strings.Contains(body, want) {
			t.Errorf("legend lacks %q:\n%s", want, body)
		}
	}
	if !strings.Contains(out, "1 a, 1 b, 1 c, 1 d, 1 e, 1 f, 1 g, 1 h, 1 i, 1 j.") {
		t.Errorf("the summary does not name every label:\n%s", out)
	}
}
