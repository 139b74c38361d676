package chart

import (
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Cell is one result in a status band.
type Cell struct {
	Label string // the status word
	Tone  string // its colour: the site's tone of that name (class t-{Tone})
	When  string // when, as the page writes times
	Note  string // optional: stage, failure, runtime
}

// Band is a status band over time: one cell per result, oldest first,
// coloured by its tone, with a legend of the labels it shows.
type Band struct {
	Meta
	Cells []Cell
}

// Band geometry, in SVG user units.
const (
	bandW     = 360
	bandTop   = 4
	bandCellH = 28
	bandCellW = 24.0 // the widest a cell gets (few results)
	bandFont  = 12
)

// Render writes the band, or the Empty message when there are no cells.
func (c Band) Render() template.HTML {
	n := len(c.Cells)
	if n == 0 {
		return empty("band", c.Meta)
	}
	legend := c.legend()
	h := bandTop + bandCellH + 20 + 20
	var w writer
	w.figure("band", c.Meta, joinDesc(c.Desc, c.summary(legend)), bandW, h)
	cw := math.Min(bandCellW, float64(bandW)/float64(n))
	gap := 0.0
	if cw >= 4 {
		gap = 1
	}
	w.raw(`<g class="cells" fill="currentColor">`, "\n")
	for i, cell := range c.Cells {
		w.raw(`<rect class="cell`, toneClass(cell.Tone), `" x="`, num(float64(i)*cw), `" y="`, strconv.Itoa(bandTop),
			`" width="`, num(cw-gap), `" height="`, strconv.Itoa(bandCellH), `"><title>`)
		w.text(cellText(cell))
		w.raw("</title></rect>\n")
	}
	w.raw("</g>\n")
	ty := num(bandTop + bandCellH + 16)
	w.raw(`<g class="x" font-size="`, strconv.Itoa(bandFont), `" fill="currentColor">`, "\n")
	first, last := c.Cells[0].When, c.Cells[n-1].When
	span := float64(n)*cw - gap
	if half := fitRunes(span/2-4, bandFont); n > 1 && len([]rune(first)) <= half && len([]rune(last)) <= half {
		// Under the first and the last cell.
		w.raw(`<text x="0" y="`, ty, `">`)
		w.text(first)
		w.raw("</text>\n", `<text x="`, num(span), `" y="`, ty, `" text-anchor="end">`)
		w.text(last)
		w.raw("</text>\n")
	} else {
		// Too narrow for two: one line from the first cell on.
		text := first
		if n > 1 {
			text += " – " + last
		}
		w.raw(`<text x="0" y="`, ty, `">`)
		w.text(truncate(text, fitRunes(bandW, bandFont)))
		w.raw("</text>\n")
	}
	w.raw("</g>\n")
	w.bandLegend(legend, float64(h-6))

	rows := make([][]string, n)
	notes := false
	for _, cell := range c.Cells {
		notes = notes || cell.Note != ""
	}
	heads := []string{"When", "Status"}
	if notes {
		heads = append(heads, "Detail")
	}
	for i, cell := range c.Cells {
		rows[i] = []string{cell.When, cell.Label}
		if notes {
			rows[i] = append(rows[i], cell.Note)
		}
	}
	w.table(c.Title, heads, rows)
	return w.html()
}

func toneClass(tone string) string {
	if t := cleanClass(tone); t != "" {
		return " t-" + t
	}
	return ""
}

func cellText(c Cell) string {
	s := c.When + ": " + c.Label
	if c.Note != "" {
		s += " (" + c.Note + ")"
	}
	return s
}

// legendEntry is one label of a band and how many cells carry it.
type legendEntry struct {
	cell  Cell
	count int
}

// legend lists the band's labels in the order they first appear.
func (c Band) legend() []legendEntry {
	var out []legendEntry
	at := map[string]int{}
	for _, cell := range c.Cells {
		if i, ok := at[cell.Label]; ok {
			out[i].count++
			continue
		}
		at[cell.Label] = len(out)
		out = append(out, legendEntry{cell: cell, count: 1})
	}
	return out
}

// bandLegend draws a swatch and the label of each entry on one line at y.
func (w *writer) bandLegend(legend []legendEntry, y float64) {
	w.raw(`<g class="legend" font-size="`, strconv.Itoa(bandFont), `" fill="currentColor">`, "\n")
	x := 0.0
	for _, e := range legend {
		if x > bandW-40 {
			break // the table and the summary name them all
		}
		label := truncate(e.cell.Label, 16)
		w.raw(`<rect class="cell`, toneClass(e.cell.Tone), `" x="`, num(x), `" y="`, num(y-9), `" width="10" height="10"/>`)
		w.raw(`<text x="`, num(x+14), `" y="`, num(y), `">`)
		w.text(label + " " + strconv.Itoa(e.count))
		w.raw("</text>\n")
		x += 14 + 7*float64(len([]rune(label))+1+len(strconv.Itoa(e.count))) + 14
	}
	w.raw("</g>\n")
}

// summary says how many results from when to when, how many of each
// label, and the latest.
func (c Band) summary(legend []legendEntry) string {
	n := len(c.Cells)
	var b strings.Builder
	if n == 1 {
		b.WriteString("1 result, " + c.Cells[0].When + ": ")
	} else {
		b.WriteString(strconv.Itoa(n) + " results from " + c.Cells[0].When + " to " + c.Cells[n-1].When + ": ")
	}
	for i, e := range legend {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(e.count) + " " + e.cell.Label)
	}
	b.WriteString(". Latest: " + cellText(c.Cells[n-1]) + ".")
	return b.String()
}
