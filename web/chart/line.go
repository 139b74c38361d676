package chart

import (
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Series is one line: a value per point of its chart. A value that is not
// finite was not measured: a gap in the line, a dash in the table.
type Series struct {
	Name   string
	Values []float64
}

// Line is a line chart over ordered points (runtimes, results), one or two
// series; points are spaced evenly, oldest first.
type Line struct {
	Meta
	// XName heads the table's first column ("" = "Point").
	XName string
	// Labels name the points, one each: a runtime, a date.
	Labels []string
	// Series are drawn in the site's series colours s0 and s1 (the second
	// dashed, with square markers); a third and later are not drawn.
	Series []Series
	// Format writes values (labels, table); nil = Compact.
	Format func(float64) string
	// Min and Max fix the value axis (0 and 1 for rates); nil = from the
	// data, from 0 when no value is negative.
	Min, Max *float64
	// Small draws a small chart (speed history): no legend or grid; the
	// first, last, lowest and highest points are labelled.
	Small bool
}

// lineBox is a line chart's geometry, in SVG user units.
type lineBox struct {
	w, h                     int
	left, right, top, bottom float64
	inset                    float64 // between the plot's edge and the first and last points
	labelAll                 int     // label every point when there are at most this many
	font                     int
}

var (
	regularBox = lineBox{w: 360, h: 220, left: 50, right: 352, top: 34, bottom: 186, inset: 10, labelAll: 8, font: 12}
	smallBox   = lineBox{w: 240, h: 86, left: 6, right: 234, top: 18, bottom: 62, inset: 8, labelAll: 0, font: 11}
)

// Render writes the chart, or the Empty message when no value was measured.
func (l Line) Render() template.HTML {
	series := l.Series
	if len(series) > 2 {
		series = series[:2]
	}
	n := len(l.Labels)
	lo, hi, found := valueRange(series, n)
	if n == 0 || !found {
		return empty("line", l.Meta)
	}
	box, kind := regularBox, "line"
	if l.Small {
		box, kind = smallBox, "line chart-small"
	}
	lo, hi = l.domain(lo, hi)
	var w writer
	w.figure(kind, l.Meta, joinDesc(l.Desc, l.summary(series)), box.w, box.h)
	sc := scale{box: box, n: n, lo: lo, hi: hi}
	if l.Small {
		w.baseline(sc)
	} else {
		w.grid(sc, l.Format)
		w.legend(series, box)
	}
	w.xLabels(l.Labels, sc)
	for i, s := range series {
		var other *Series
		if len(series) == 2 {
			other = &series[1-i]
		}
		w.series(i, s, other, l.Labels, sc, l.Format)
	}
	heads := []string{l.XName}
	if heads[0] == "" {
		heads[0] = "Point"
	}
	for _, s := range series {
		heads = append(heads, s.Name)
	}
	rows := make([][]string, n)
	for p := range rows {
		rows[p] = []string{l.Labels[p]}
		for _, s := range series {
			rows[p] = append(rows[p], format(l.Format, value(s, p)))
		}
	}
	w.table(l.Title, heads, rows)
	return w.html()
}

// value is s's value at point p; NaN when it has none.
func value(s Series, p int) float64 {
	if p < len(s.Values) {
		return s.Values[p]
	}
	return math.NaN()
}

// valueRange is the lowest and highest measured value of the first n
// points; found is false when none was measured.
func valueRange(series []Series, n int) (lo, hi float64, found bool) {
	for _, s := range series {
		for p := 0; p < n; p++ {
			v := value(s, p)
			if !finite(v) {
				continue
			}
			if !found || v < lo {
				lo = v
			}
			if !found || v > hi {
				hi = v
			}
			found = true
		}
	}
	return lo, hi, found
}

// domain is the value axis: Min and Max where set, else from 0 (or a
// round number below the lowest negative value) to a round number at or
// above the highest value.
func (l Line) domain(lo, hi float64) (float64, float64) {
	if lo > 0 {
		lo = 0
	} else if lo < 0 {
		lo = -niceCeil(-lo)
	}
	if hi > 0 {
		hi = niceCeil(hi)
	}
	if l.Min != nil && finite(*l.Min) {
		lo = *l.Min
	}
	if l.Max != nil && finite(*l.Max) {
		hi = *l.Max
	}
	if !(hi > lo) || !finite(hi-lo) {
		// all values equal (all zero), a fixed range upside down, or a
		// span too wide for float64: a range around lo that holds.
		hi = lo + math.Max(1, math.Abs(lo))
		if !finite(hi) {
			lo, hi = -math.MaxFloat64/2, math.MaxFloat64/2
		}
	}
	return lo, hi
}

// niceCeil is the smallest of 1, 2, 2.5, 5 × 10^k at or above v > 0 (v
// itself when that is not a finite number).
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if c := m * p; c >= v*(1-1e-12) && finite(c) {
			return c
		}
	}
	return v
}

// scale maps point indexes and values to coordinates.
type scale struct {
	box    lineBox
	n      int
	lo, hi float64
}

func (s scale) x(p int) float64 {
	if s.n == 1 {
		return (s.box.left + s.box.right) / 2
	}
	span := s.box.right - s.box.left - 2*s.box.inset
	return s.box.left + s.box.inset + span*float64(p)/float64(s.n-1)
}

// y maps v into the plot, clamped to its edges (a value outside a fixed range).
func (s scale) y(v float64) float64 {
	f := (v - s.lo) / (s.hi - s.lo)
	f = math.Max(0, math.Min(1, f))
	if !finite(f) {
		f = 0
	}
	return s.box.bottom - f*(s.box.bottom-s.box.top)
}

// grid draws three horizontal rules (low, middle, high) with their values.
func (w *writer) grid(s scale, f func(float64) string) {
	w.raw(`<g class="grid" font-size="`, strconv.Itoa(s.box.font), `">`, "\n")
	for _, v := range []float64{s.lo, (s.lo + s.hi) / 2, s.hi} {
		y := num(s.y(v))
		w.raw(`<line x1="`, num(s.box.left), `" x2="`, num(s.box.right), `" y1="`, y, `" y2="`, y,
			`" stroke="currentColor" stroke-opacity="0.2"/>`)
		w.raw(`<text x="`, num(s.box.left-4), `" y="`, y, `" dy="0.35em" text-anchor="end" fill="currentColor">`)
		w.text(format(f, v))
		w.raw("</text>\n")
	}
	w.raw("</g>\n")
}

// baseline draws the value axis's low end as a faint rule (small charts).
func (w *writer) baseline(s scale) {
	y := num(s.y(s.lo))
	w.raw(`<line class="grid" x1="`, num(s.box.left), `" x2="`, num(s.box.right), `" y1="`, y, `" y2="`, y,
		`" stroke="currentColor" stroke-opacity="0.3"/>`, "\n")
}

// legend names the series at the top left, each with its line and marker.
func (w *writer) legend(series []Series, box lineBox) {
	w.raw(`<g class="legend" font-size="`, strconv.Itoa(box.font), `">`, "\n")
	x := box.left
	for i, s := range series {
		name := truncate(s.Name, 40)
		w.raw(`<line class="line s`, strconv.Itoa(i), `" x1="`, num(x), `" x2="`, num(x+18), `" y1="12" y2="12" stroke="currentColor" stroke-width="2"`, dashOf(i), `/>`)
		w.marker(i, x+9, 12)
		w.raw(closeMarker(i), `<text x="`, num(x+24), `" y="12" dy="0.35em" fill="currentColor">`)
		w.text(name)
		w.raw("</text>\n")
		x += 24 + 7*float64(len([]rune(name))) + 16
	}
	w.raw("</g>\n")
}

func dashOf(i int) string {
	if i == 1 {
		return ` stroke-dasharray="5 3"`
	}
	return ""
}

// marker draws series i's marker at x, y: a circle, or a square for the second.
func (w *writer) marker(i int, x, y float64) {
	if i == 1 {
		w.raw(`<rect class="dot s1" x="`, num(x-3.5), `" y="`, num(y-3.5), `" width="7" height="7" fill="currentColor">`)
		return
	}
	w.raw(`<circle class="dot s0" cx="`, num(x), `" cy="`, num(y), `" r="3.5" fill="currentColor">`)
}

func closeMarker(i int) string {
	if i == 1 {
		return "</rect>"
	}
	return "</circle>"
}

// xLabels writes the first and last points' labels under the plot, each
// cut to fit half its width.
func (w *writer) xLabels(labels []string, s scale) {
	y := num(s.box.bottom + float64(s.box.font) + 6)
	w.raw(`<g class="x" font-size="`, strconv.Itoa(s.box.font), `" fill="currentColor">`, "\n")
	// Each of the two labels gets half the plot's width.
	fit := fitRunes((s.box.right-s.box.left)/2-4, s.box.font)
	put := func(p int, anchor string) {
		w.raw(`<text x="`, num(s.x(p)), `" y="`, y, `" text-anchor="`, anchor, `">`)
		w.text(truncate(labels[p], fit))
		w.raw("</text>\n")
	}
	if s.n == 1 {
		put(0, "middle")
	} else {
		put(0, "start")
		put(s.n-1, "end")
	}
	w.raw("</g>\n")
}

// series draws one series: its line (broken where a value is missing), a
// marker per measured point with its value as a tooltip, and value labels.
func (w *writer) series(i int, s Series, other *Series, labels []string, sc scale, f func(float64) string) {
	cls := "s" + strconv.Itoa(i)
	var d strings.Builder
	pen := false
	for p := 0; p < sc.n; p++ {
		v := value(s, p)
		if !finite(v) {
			pen = false
			continue
		}
		cmd := "L"
		if !pen {
			cmd = "M"
		}
		d.WriteString(cmd + num(sc.x(p)) + " " + num(sc.y(v)))
		pen = true
	}
	w.raw(`<g class="series `, cls, `">`, "\n")
	if d.Len() > 0 {
		w.raw(`<path class="line `, cls, `" d="`, d.String(), `" fill="none" stroke="currentColor" stroke-width="2"`, dashOf(i), "/>\n")
	}
	show := labelled(s, sc.n, sc.box.labelAll)
	for p := 0; p < sc.n; p++ {
		v := value(s, p)
		if !finite(v) {
			continue
		}
		x, y := sc.x(p), sc.y(v)
		w.marker(i, x, y)
		w.raw("<title>")
		w.text(seriesName(s) + labels[p] + ": " + format(f, v))
		w.raw("</title>", closeMarker(i), "\n")
		if show[p] {
			w.valueLabel(p, x, y, below(i, v, other, p), format(f, v), sc)
		}
	}
	w.raw("</g>\n")
}

func seriesName(s Series) string {
	if s.Name == "" {
		return ""
	}
	return s.Name + ", "
}

// below reports whether series i's label at point p goes under the point:
// when the other series is higher there (or equal, for the second series).
func below(i int, v float64, other *Series, p int) bool {
	if other == nil {
		return false
	}
	o := value(*other, p)
	return finite(o) && (o > v || (o == v && i == 1))
}

// valueLabel writes a point's value above it, or below it when asked and
// there is room, kept inside the chart.
func (w *writer) valueLabel(p int, x, y float64, under bool, text string, sc scale) {
	ly := y - 7
	if under && y+float64(sc.box.font)+5 < sc.box.bottom {
		ly = y + float64(sc.box.font) + 5
	}
	ly = math.Max(float64(sc.box.font), math.Min(float64(sc.box.h)-2, ly))
	anchor := "middle"
	switch {
	case sc.n > 1 && p == 0:
		anchor = "start"
	case sc.n > 1 && p == sc.n-1:
		anchor = "end"
	}
	w.raw(`<text class="value" x="`, num(x), `" y="`, num(ly), `" text-anchor="`, anchor, `" font-size="`,
		strconv.Itoa(sc.box.font), `" fill="currentColor">`)
	w.text(text)
	w.raw("</text>\n")
}

// labelled says which points get a value label: all of them when there
// are at most labelAll, else the first, last, lowest and highest measured.
func labelled(s Series, n, labelAll int) []bool {
	show := make([]bool, n)
	for p := 0; p < n && n <= labelAll; p++ {
		show[p] = finite(value(s, p))
	}
	x := extremesOf(s, n)
	for _, p := range []int{x.first, x.last, x.lo, x.hi} {
		if p >= 0 {
			show[p] = true
		}
	}
	return show
}

// extremes are the points of a series' first, last, lowest and highest
// measured value (-1 when none was measured), and how many were not.
type extremes struct{ first, last, lo, hi, missing int }

func extremesOf(s Series, n int) extremes {
	x := extremes{-1, -1, -1, -1, 0}
	for p := 0; p < n; p++ {
		v := value(s, p)
		if !finite(v) {
			x.missing++
			continue
		}
		if x.first < 0 {
			x.first = p
		}
		x.last = p
		if x.lo < 0 || v < value(s, x.lo) {
			x.lo = p
		}
		if x.hi < 0 || v > value(s, x.hi) {
			x.hi = p
		}
	}
	return x
}

// summary is the text alternative's account of the data: how many points
// from which to which, and each series' first, last, lowest and highest.
func (l Line) summary(series []Series) string {
	n := len(l.Labels)
	var b strings.Builder
	if n == 1 {
		b.WriteString("1 point: " + l.Labels[0] + ".")
	} else {
		b.WriteString(strconv.Itoa(n) + " points, from " + l.Labels[0] + " to " + l.Labels[n-1] + ".")
	}
	for _, s := range series {
		b.WriteString(" ")
		if s.Name != "" {
			b.WriteString(s.Name + ": ")
		}
		b.WriteString(seriesSummary(s, l.Labels, l.Format))
	}
	return b.String()
}

func seriesSummary(s Series, labels []string, f func(float64) string) string {
	n := len(labels)
	x := extremesOf(s, n)
	first, last, lo, hi, missing := x.first, x.last, x.lo, x.hi, x.missing
	if first < 0 {
		return "not measured."
	}
	at := func(p int) string { return format(f, value(s, p)) + " (" + labels[p] + ")" }
	var b strings.Builder
	if first == last {
		b.WriteString(at(first))
	} else {
		b.WriteString(at(first) + " to " + at(last) + "; lowest " + format(f, value(s, lo)) + ", highest " + format(f, value(s, hi)))
	}
	if missing > 0 {
		b.WriteString("; not measured at " + strconv.Itoa(missing) + " of " + strconv.Itoa(n) + " points")
	}
	b.WriteString(".")
	return b.String()
}
