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
