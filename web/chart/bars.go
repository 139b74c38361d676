package chart

import (
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Bar is one row of a bar chart.
type Bar struct {
	Label string  // what the bar is: a failure signature
	Value float64 // its length: downloads, a share of them
	Note  string  // said after the value: "14 models"
}

// Bars is a horizontal bar chart: one row per bar, in the given order, its
// label above the bar and its value (and note) after it. The longest bar
// is the largest value; a value that is not finite or not positive draws
// no bar.
type Bars struct {
	Meta
	Bars []Bar
	// Format writes values; nil = Compact.
	Format func(float64) string
	// Tone colours the bars as the site's tone of that name (class t-{Tone});
	// "" = the first series colour.
	Tone string
	// LabelName, ValueName and NoteName head the table's columns ("" =
	// "Label", "Value", "Note"; the note column only when a bar has a note).
	LabelName, ValueName, NoteName string
}

// Bar chart geometry, in SVG user units.
const (
	barsW      = 360
	barRow     = 38
	barTop     = 4
	barHeight  = 10
	barTextMax = 124 // room after the longest bar for its value
	barFont    = 12
	barLabel   = 52 // runes of a label shown (all of it in the tooltip and table)
)

// Render writes the chart, or the Empty message when there are no bars.
func (c Bars) Render() template.HTML {
	if len(c.Bars) == 0 {
		return empty("bars", c.Meta)
	}
	max := 0.0
	notes := false
	for _, b := range c.Bars {
		if finite(b.Value) && b.Value > max {
			max = b.Value
		}
		notes = notes || b.Note != ""
	}
	h := barTop + len(c.Bars)*barRow + 2
	var w writer
	w.figure("bars", c.Meta, joinDesc(c.Desc, c.summary()), barsW, h)
	fill := "s0"
	if t := cleanClass(c.Tone); t != "" {
		fill = "t-" + t
	}
	w.raw(`<g font-size="`, strconv.Itoa(barFont), `" fill="currentColor">`, "\n")
	for i, b := range c.Bars {
		w.bar(b, barTop+i*barRow, max, fill, c.Format)
	}
	w.raw("</g>\n")

	heads := []string{or(c.LabelName, "Label"), or(c.ValueName, "Value")}
	if notes {
		heads = append(heads, or(c.NoteName, "Note"))
	}
	rows := make([][]string, len(c.Bars))
	for i, b := range c.Bars {
		rows[i] = []string{b.Label, format(c.Format, b.Value)}
		if notes {
			rows[i] = append(rows[i], b.Note)
		}
	}
	w.table(c.Title, heads, rows)
	return w.html()
}

// bar draws one row at y: the label, the bar scaled to max, the value.
func (w *writer) bar(b Bar, y int, max float64, fill string, f func(float64) string) {
	length := 0.0
	if finite(b.Value) && b.Value > 0 && max > 0 {
		length = math.Max(1.5, (barsW-barTextMax)*b.Value/max)
	}
	value := format(f, b.Value)
	if b.Note != "" {
		value += " · " + b.Note
	}
	fy := float64(y)
	w.raw(`<g class="bar"><title>`)
	w.text(b.Label + ": " + value)
	w.raw("</title>\n", `<text x="0" y="`, num(fy+13), `">`)
	w.text(truncate(b.Label, barLabel))
	w.raw("</text>\n")
	if length > 0 {
		w.raw(`<rect class="bar-fill `, fill, `" x="0" y="`, num(fy+17), `" width="`, num(length), `" height="`,
			strconv.Itoa(barHeight), `" rx="2"/>`, "\n")
	}
	w.raw(`<text class="value" x="`, num(length+6), `" y="`, num(fy+28), `">`)
	w.text(value)
	w.raw("</text></g>\n")
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// summary lists the first five bars with their values, and how many more.
func (c Bars) summary() string {
	var b strings.Builder
	n := len(c.Bars)
	if n == 1 {
		b.WriteString("1 bar: ")
	} else {
		b.WriteString(strconv.Itoa(n) + " bars: ")
	}
	for i, x := range c.Bars {
		if i == 5 {
			b.WriteString("; and " + strconv.Itoa(n-5) + " more")
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(x.Label + " " + format(c.Format, x.Value))
		if x.Note != "" {
			b.WriteString(" (" + x.Note + ")")
		}
	}
	b.WriteString(".")
	return b.String()
}
