package chart

import (
	"regexp"
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
		name   string
		values []float64
		want   []string
	}{
		{"positive", []float64{3, 7}, []string{"186:0", "110:5", "34:10"}},
		{"a negative value", []float64{-3, 7}, []string{"186:-5", "110:2.5", "34:10"}},
		// The highest, -1, is already a round number (1 × 10^0, negated).
		{"negative only", []float64{-3, -1}, []string{"186:-5", "110:-3", "34:-1"}},
		{"the highest first", []float64{7, -3}, []string{"186:-5", "110:2.5", "34:10"}},
		// A value past the last label is not a point of the chart.
		{"a value without a label", []float64{1, 2, 100}, []string{"186:0", "110:1", "34:2"}},
		{"a negative value without a label", []float64{1, 2, -100}, []string{"186:0", "110:1", "34:2"}},
	} {
		out := string(Line{Meta: Meta{ID: "l", Title: "T"}, Labels: []string{"a", "b"},
			Series: []Series{{Name: "s", Values: tc.values}}}.Render())
		if got := gridLabels(t, out); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s %v: grid %q, want %q", tc.name, tc.values, got, tc.want)
		}
	}
}
