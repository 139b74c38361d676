package chart

import (
	"html/template"
	"strings"
	"testing"
)

// TestBarsZeroDrawsNoBar: a bar's length is its value's share of the
// largest (236 units, 360 less 124 for the value text, at the largest), at
// least 1.5 units; a value of 0, negative or not measured draws no bar, its
// value text starting 6 units in.
func TestBarsZeroDrawsNoBar(t *testing.T) {
	out := string(Bars{Meta: Meta{ID: "b", Title: "T"}, Bars: []Bar{
		{Label: "four", Value: 4}, {Label: "one", Value: 1}, {Label: "zero", Value: 0},
		{Label: "negative", Value: -2}, {Label: "tiny", Value: 0.001}, {Label: "nan", Value: nan},
	}}.Render())
	checkWellFormed(t, template.HTML(out))
	if got := strings.Count(out, `<rect class="bar-fill`); got != 3 {
		t.Errorf("%d bars drawn, want 3 (four, one, tiny):\n%s", got, out)
	}
	for _, want := range []string{
		`<rect class="bar-fill s0" x="0" y="21" width="236" height="10" rx="2"/>` + "\n" + `<text class="value" x="242" y="32">4</text>`,
		`<rect class="bar-fill s0" x="0" y="59" width="59" height="10" rx="2"/>` + "\n" + `<text class="value" x="65" y="70">1</text>`,
		`<text x="0" y="93">zero</text>` + "\n" + `<text class="value" x="6" y="108">0</text>`,
		`<text x="0" y="131">negative</text>` + "\n" + `<text class="value" x="6" y="146">-2</text>`,
		`<rect class="bar-fill s0" x="0" y="173" width="1.5" height="10" rx="2"/>`,
		`<text x="0" y="207">nan</text>` + "\n" + `<text class="value" x="6" y="222">—</text>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bars lack %q:\n%s", want, out)
		}
	}
}

// TestBarsSummary: the text alternative names the first five bars with
// their values (and notes), then how many more there are.
func TestBarsSummary(t *testing.T) {
	var bars []Bar
	for i, l := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		bars = append(bars, Bar{Label: l, Value: float64(i + 1)})
	}
	bars[1].Note = "two models"
	for _, tc := range []struct {
		n    int
		want string
	}{
		{1, "1 bar: a 1."},
		{5, "5 bars: a 1; b 2 (two models); c 3; d 4; e 5."},
		{6, "6 bars: a 1; b 2 (two models); c 3; d 4; e 5; and 1 more."},
		{7, "7 bars: a 1; b 2 (two models); c 3; d 4; e 5; and 2 more."},
	} {
		out := string(Bars{Meta: Meta{ID: "b", Title: "T"}, Bars: bars[:tc.n]}.Render())
		if !strings.Contains(out, `<desc id="b-d">`+tc.want+"</desc>") {
			t.Errorf("%d bars: want the desc %q:\n%s", tc.n, tc.want, out)
		}
	}
}
