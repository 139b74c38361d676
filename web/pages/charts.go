package pages

import (
	"html/template"
	"math"
	"slices"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/chart"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// The site's charts, built from store data with package chart. Pages that
// are cached (the table's body) cache their charts with them.

// rate formats a fraction as the site does ("41.0 %").
func rate(f float64) string { return show.Pct(&f) }

// orNaN is a measured value, or NaN (a gap in a chart) when it was not.
func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

var zero, one = 0.0, 1.0

// trendChart draws a target's pass rate and download-weighted pass rate,
// one point per runtime, oldest first; rts are newest first.
func (h *Handler) trendChart(t compat.Target, rts []store.RuntimeStats, id string) template.HTML {
	old := oldestFirst(rts)
	labels := show.RuntimeLabels(rts)
	slices.Reverse(labels)
	l := chart.Line{
		Meta: chart.Meta{ID: id, Title: "Pass rate by runtime on " + show.TargetName(t),
			Desc:  "Share of the tested models that pass on each runtime, plain and weighted by downloads.",
			Empty: "No runtime has results on " + show.TargetName(t) + " yet."},
		XName:  "Runtime",
		Labels: labels,
		Series: []chart.Series{{Name: "Pass rate"}, {Name: "Download-weighted"}},
		Format: rate, Min: &zero, Max: &one,
	}
	for _, st := range old {
		l.Series[0].Values = append(l.Series[0].Values, orNaN(st.PassRate))
		l.Series[1].Values = append(l.Series[1].Values, orNaN(st.WeightedPassRate))
	}
	return l.Render()
}

// failureChart draws the top failure signatures as bars of their share of
// downloads: fixing one unblocks its models.
func failureChart(groups []store.FailureGroup, t compat.Target) template.HTML {
	c := chart.Bars{
		Meta: chart.Meta{ID: "failure-chart", Title: "Top failure signatures by downloads on " + show.TargetName(t),
			Desc:  "Fixing a signature's root cause unblocks the models it blocks: each bar is their share of all downloads.",
			Empty: "No failures on record."},
		Format: rate, Tone: string(show.ToneFail),
		LabelName: "Signature", ValueName: "Share of downloads", NoteName: "Models blocked",
	}
	for _, g := range groups {
		c.Bars = append(c.Bars, chart.Bar{Label: g.Signature, Value: g.DownloadShare, Note: show.Models(g.Models)})
	}
	return c.Render()
}

// modelCharts are a model's charts on one target.
type modelCharts struct {
	Target  compat.Target
	Band    template.HTML
	Tokens  template.HTML
	Compile template.HTML
}

// historyCharts draws, per target of a model's history (newest first):
// its status band over time and its speed history (tokens/s, compile
// time). Targets come in the order of compat.Targets.
func historyCharts(history []compat.Result) []modelCharts {
	var out []modelCharts
	for _, t := range compat.Targets {
		var on []compat.Result
		for i := len(history) - 1; i >= 0; i-- {
			if history[i].Target == t {
				on = append(on, history[i])
			}
		}
		if len(on) == 0 {
			continue
		}
		out = append(out, targetCharts(t, on))
	}
	return out
}

// targetCharts draws one target's charts from its results, oldest first.
func targetCharts(t compat.Target, results []compat.Result) modelCharts {
	name := show.TargetName(t)
	band := chart.Band{Meta: chart.Meta{ID: "band-" + string(t), Title: "Status on " + name + " over time"}}
	labels := make([]string, len(results))
	tokens := chart.Series{Name: "Tokens/s"}
	compile := chart.Series{Name: "Compile (s)"}
	for i, r := range results {
		labels[i] = r.TestedAt.UTC().Format("2006-01-02 15:04") // short enough for a small chart's axis
		band.Cells = append(band.Cells, chart.Cell{Label: string(r.Status), Tone: string(show.ToneOf(r.Status)),
			When: show.When(r.TestedAt), Note: resultNote(r)})
		tokens.Values = append(tokens.Values, orNaN(r.Metrics.TokensPerS))
		compile.Values = append(compile.Values, orNaN(r.Metrics.CompileS))
	}
	speed := func(id, title string, s chart.Series, f func(float64) string) template.HTML {
		return chart.Line{
			Meta: chart.Meta{ID: id + "-" + string(t), Title: title + " on " + name, Caption: true,
				Desc: "One point per result, times in UTC", Empty: "Not measured on " + name + " yet."},
			XName: "Tested (UTC)", Labels: labels, Series: []chart.Series{s}, Format: f, Small: true,
		}.Render()
	}
	return modelCharts{
		Target:  t,
		Band:    band.Render(),
		Tokens:  speed("tokens", "Tokens per second", tokens, func(f float64) string { return show.Num(&f, 1) }),
		Compile: speed("compile", "Compile time (s)", compile, func(f float64) string { return show.Num(&f, 2) }),
	}
}

// resultNote says where and why a result ended, and on what: "forward,
// unsupported_op:aten::x · torch_tpu 0.2.0".
func resultNote(r compat.Result) string {
	var s string
	if r.Status != compat.StatusPass && r.Stage != nil {
		s = string(*r.Stage)
	}
	why := ""
	switch {
	case r.Signature != nil && *r.Signature != "":
		why = *r.Signature
	case r.FailureClass != nil:
		why = string(*r.FailureClass)
	case r.Reason != nil:
		why = string(*r.Reason)
	}
	if why != "" {
		if s != "" {
			s += ", "
		}
		s += why
	}
	rt := show.Versions(r.Runtime.Ref(r.Target))
	if rt == show.Dash {
		return s
	}
	if s != "" {
		s += " · "
	}
	return s + rt
}
