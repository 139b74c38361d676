package chart

import (
	"html/template"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var gridText = regexp.MustCompile(`<text x="46" y="([^"]+)" dy="0.35em" text-anchor="end" fill="currentColor">([^<]*)</text>`)

// gridLabels are the value axis's three rules of a regular line chart, as
// "y:label", low to high.
func gridLabels(t *testing.T, out string) []string {
	t.Helper()
	var got []string
	for _, m := range gridText.FindAllStringSubmatch(group(t, out, "grid"), -1) {
		got = append(got, m[1]+":"+m[2])
	}
	return got
}

// TestLineValueAxis: the value axis runs from 0, or from a round number
// below the lowest negative value, to a round number at or above the
// highest (1, 2, 2.5 or 5 × 10^k); only the points that have a label count.
// The plot runs from y=186 (low) to y=34 (high).
func TestLineValueAxis(t *testing.T) {
	for _, tc := range []struct {
		name     string
		values   []float64
		min, max *float64
		want     []string
	}{
		{"positive", []float64{3, 7}, nil, nil, []string{"186:0", "110:5", "34:10"}},
		{"a negative value", []float64{-3, 7}, nil, nil, []string{"186:-5", "110:2.5", "34:10"}},
		// The highest, -1, is already a round number (1 × 10^0, negated).
		{"negative only", []float64{-3, -1}, nil, nil, []string{"186:-5", "110:-3", "34:-1"}},
		{"the highest first", []float64{7, -3}, nil, nil, []string{"186:-5", "110:2.5", "34:10"}},
		// A value past the last label is not a point of the chart.
		{"a value without a label", []float64{1, 2, 100}, nil, nil, []string{"186:0", "110:1", "34:2"}},
		{"a negative value without a label", []float64{1, 2, -100}, nil, nil, []string{"186:0", "110:1", "34:2"}},
		// No span: the axis runs from the low end to the low end plus its
		// size, at least 1.
		{"all zero", []float64{0, 0}, nil, nil, []string{"186:0", "110:0.5", "34:1"}},
		{"a fixed range of no width", []float64{0, 0}, ptr(3), ptr(3), []string{"186:3", "110:4.5", "34:6"}},
		{"a fixed range upside down", []float64{1, 2}, ptr(1), ptr(0), []string{"186:1", "110:1.5", "34:2"}},
		{"a fixed range below zero", []float64{1, 2}, ptr(-4), ptr(-4), []string{"186:-4", "110:-2", "34:0"}},
		{"a fixed range", []float64{1, 2}, ptr(-1), ptr(3), []string{"186:-1", "110:1", "34:3"}},
		{"a fixed range not finite", []float64{1, 2}, ptr(nan), ptr(math.Inf(1)), []string{"186:0", "110:1", "34:2"}},
	} {
		out := string(Line{Meta: Meta{ID: "l", Title: "T"}, Labels: []string{"a", "b"},
			Series: []Series{{Name: "s", Values: tc.values}}, Min: tc.min, Max: tc.max}.Render())
		if got := gridLabels(t, out); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s %v: grid %q, want %q", tc.name, tc.values, got, tc.want)
		}
	}
}

// TestLineHugeRange: a span too wide for float64 (-MaxFloat64 to
// MaxFloat64) still draws each point where it is: the axis holds the lowest
// value, and the highest, above the axis, is drawn at the top edge.
func TestLineHugeRange(t *testing.T) {
	out := string(Line{Meta: Meta{ID: "l", Title: "T"}, Labels: []string{"a", "b"},
		Series: []Series{{Name: "s", Values: []float64{-math.MaxFloat64, math.MaxFloat64}}}}.Render())
	for _, want := range []string{`<circle class="dot s0" cx="60" cy="186"`, `<circle class="dot s0" cx="342" cy="34"`} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}

// TestLineRangePastFloat64: a fixed range of no width so high that the
// usual widening (to twice its value) overflows becomes the widest range
// that holds, -MaxFloat64/2 to MaxFloat64/2: small values are drawn at its
// middle, y = 110.
func TestLineRangePastFloat64(t *testing.T) {
	out := string(Line{Meta: Meta{ID: "l", Title: "T"}, Labels: []string{"a", "b"},
		Series: []Series{{Name: "s", Values: []float64{1, 2}}}, Min: ptr(1e308), Max: ptr(1e308)}.Render())
	for _, want := range []string{`<circle class="dot s0" cx="60" cy="110"`, `<circle class="dot s0" cx="342" cy="110"`} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	checkWellFormed(t, template.HTML(out))
}

// TestLineXLabels: the first and last points' labels go under the plot,
// each cut to half the plot's width less 4 units, at 0.62 em a rune: a
// regular plot is 302 units wide, (151−4)/7.44 = 19.8, so 19 runes; a small
// one 228, (114−4)/6.82 = 16.1, so 16.
func TestLineXLabels(t *testing.T) {
	r19, r20 := "abcdefghijklmnopqrs", "abcdefghijklmnopqrst"
	for _, tc := range []struct {
		name   string
		small  bool
		labels []string
		want   string
	}{
		{"regular", false, []string{r19, "x", r20},
			`<text x="60" y="204" text-anchor="start">` + r19 + "</text>\n" +
				`<text x="342" y="204" text-anchor="end">` + r19[:18] + "…</text>\n"},
		{"small", true, []string{r19[:16], r19[:17]},
			`<text x="14" y="79" text-anchor="start">` + r19[:16] + "</text>\n" +
				`<text x="226" y="79" text-anchor="end">` + r19[:15] + "…</text>\n"},
		{"one point", false, []string{r20}, `<text x="201" y="204" text-anchor="middle">` + r19[:18] + "…</text>\n"},
	} {
		values := make([]float64, len(tc.labels))
		out := string(Line{Meta: Meta{ID: "l", Title: "T"}, Labels: tc.labels, Small: tc.small,
			Series: []Series{{Name: "s", Values: values}}}.Render())
		if got := group(t, out, "x"); got != tc.want {
			t.Errorf("%s: x labels\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestLinePath: a series' line joins its measured points among the
// chart's, and starts again after a gap; a series never measured draws no
// line. Three points are at x = 60, 201 and 342; on an axis from 0 to 2,
// 1 is at y = 110 and 2 at y = 34.
func TestLinePath(t *testing.T) {
	out := string(Line{Meta: Meta{ID: "l", Title: "T"}, Labels: []string{"a", "b", "c"},
		Series: []Series{{Name: "s", Values: []float64{1, nan, 2, 100}}, {Name: "none", Values: []float64{nan, nan, nan}}}}.Render())
	if !strings.Contains(out, `<path class="line s0" d="M60 110M342 34" `) {
		t.Errorf("the line of 1, not measured, 2 (and a value past the last point):\n%s", out)
	}
	if strings.Contains(out, `<path class="line s1"`) {
		t.Errorf("a line for a series never measured:\n%s", out)
	}
	if got := strings.Count(out, `<circle class="dot s0"`); got != 2+1 { // 2 points and the legend's marker
		t.Errorf("%d markers of the first series, want 3:\n%s", got, out)
	}
}

// TestLineValueLabelPlacement: a point's value goes above it (7 units),
// or under it (font size + 5) when the other series is higher there (or
// equal, for the second series) and there is room above the plot's bottom
// (y = 186). On a fixed axis from 0 to 152, v is at y = 186 − v.
func TestLineValueLabelPlacement(t *testing.T) {
	out := string(Line{Meta: Meta{ID: "l", Title: "T"}, Labels: []string{"a", "b", "c"}, Min: ptr(0), Max: ptr(152),
		Series: []Series{{Name: "one", Values: []float64{50, 17, 50}}, {Name: "two", Values: []float64{50, 100, 100}}}}.Render())
	label := func(x, y, anchor, text string) string {
		return `<text class="value" x="` + x + `" y="` + y + `" text-anchor="` + anchor + `" font-size="12" fill="currentColor">` + text + "</text>"
	}
	for series, want := range map[string][]string{
		"one": {
			label("60", "129", "start", "50"),   // equal to two: above
			label("201", "162", "middle", "17"), // two is higher, but at y = 169 there is no room under: above
			label("342", "153", "end", "50"),    // two is higher: under
		},
		"two": {
			label("60", "153", "start", "50"), // equal to one: under
			label("201", "79", "middle", "100"),
			label("342", "79", "end", "100"),
		},
	} {
		body := group(t, out, "series s"+map[string]string{"one": "0", "two": "1"}[series])
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("series %s lacks %q:\n%s", series, w, body)
			}
		}
		if got := strings.Count(body, `<text class="value"`); got != 3 {
			t.Errorf("series %s: %d value labels, want 3", series, got)
		}
	}
}

// TestLineLabelsWhichPoints: a regular chart labels every measured point's
// value when it has at most 8 points, else only the first, last, lowest
// and highest; a small chart only those four.
func TestLineLabelsWhichPoints(t *testing.T) {
	values := []float64{5, 3, 9, 4, 6, 7, 2, 8, 1, 10}
	for _, tc := range []struct {
		n     int
		small bool
		want  int
	}{
		{8, false, 8},
		{9, false, 3},  // 5 first, 1 last and lowest, 9 highest
		{10, false, 3}, // 5 first, 10 last and highest, 1 lowest
		{4, true, 4},   // 5 first, 4 last, 3 lowest, 9 highest
		{7, true, 3},   // 5 first, 2 last and lowest, 9 highest
	} {
		labels := make([]string, tc.n)
		for i := range labels {
			labels[i] = "p" + strconv.Itoa(i)
		}
		out := string(Line{Meta: Meta{ID: "l", Title: "T"}, Labels: labels, Small: tc.small,
			Series: []Series{{Name: "s", Values: values[:tc.n]}}}.Render())
		if got := strings.Count(out, `<text class="value"`); got != tc.want {
			t.Errorf("%d points (small %v): %d value labels, want %d", tc.n, tc.small, got, tc.want)
		}
	}
}

// TestLineExtremesTies: of equal lowest (or highest) values, the first is
// the one labelled. Ten points are 31.3 units apart from x = 60.
func TestLineExtremesTies(t *testing.T) {
	labels := make([]string, 10)
	for i := range labels {
		labels[i] = "p" + strconv.Itoa(i)
	}
	out := string(Line{Meta: Meta{ID: "l", Title: "T"}, Labels: labels,
		Series: []Series{{Name: "s", Values: []float64{5, 1, 9, 1, 6, 9, 6, 7, 6, 8}}}}.Render())
	var got []string
	for _, m := range regexp.MustCompile(`<text class="value" x="([^"]+)"`).FindAllStringSubmatch(out, -1) {
		got = append(got, m[1])
	}
	// first (p0), lowest (p1, not p3), highest (p2, not p5), last (p9)
	if want := "60 91.3 122.7 342"; strings.Join(got, " ") != want {
		t.Errorf("value labels at x = %v, want %s", got, want)
	}
	if !strings.Contains(out, "5 (p0) to 8 (p9); lowest 1, highest 9.") {
		t.Errorf("summary:\n%s", out)
	}
}

// TestLineSeriesNeverMeasured: a series without a measured value among
// others draws nothing and says so, on a chart of one point too.
func TestLineSeriesNeverMeasured(t *testing.T) {
	out := string(Line{Meta: Meta{ID: "l", Title: "T"}, Labels: []string{"only"},
		Series: []Series{{Name: "s", Values: []float64{1}}, {Name: "none", Values: []float64{nan}}}}.Render())
	checkWellFormed(t, template.HTML(out))
	if !strings.Contains(out, "1 point: only. s: 1 (only). none: not measured.") {
		t.Errorf("summary:\n%s", out)
	}
	if body := group(t, out, "series s1"); body != "" {
		t.Errorf("the series never measured draws %q", body)
	}
}

// TestLineValueLabelAnchor: a value label is centred on its point, but the
// first's starts at it and the last's ends at it, inside the chart; the one
// point of a one-point chart is centred (x = 201, the plot's middle).
func TestLineValueLabelAnchor(t *testing.T) {
	anchors := func(labels ...string) []string {
		values := make([]float64, len(labels))
		for i := range values {
			values[i] = float64(i + 1)
		}
		out := string(Line{Meta: Meta{ID: "l", Title: "T"}, Labels: labels, Series: []Series{{Name: "s", Values: values}}}.Render())
		var got []string
		for _, m := range regexp.MustCompile(`<text class="value" x="([^"]+)" y="[^"]+" text-anchor="([a-z]+)"`).FindAllStringSubmatch(out, -1) {
			got = append(got, m[1]+":"+m[2])
		}
		return got
	}
	for _, tc := range []struct {
		labels []string
		want   string
	}{
		{[]string{"a"}, "201:middle"},
		{[]string{"a", "b"}, "60:start 342:end"},
		{[]string{"a", "b", "c"}, "60:start 201:middle 342:end"},
	} {
		if got := strings.Join(anchors(tc.labels...), " "); got != tc.want {
			t.Errorf("%d points: value labels %q, want %q", len(tc.labels), got, tc.want)
		}
	}
}
