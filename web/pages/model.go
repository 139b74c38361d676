package pages

import (
	"errors"
	"fmt"
	"html"
	"html/template"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// metricRow is one measurement on the model page: a dash when not measured.
type metricRow struct {
	Name  string
	Value string
}

// resultView is one current result with its measurements laid out.
type resultView struct {
	compat.Result
	Metrics []metricRow
	// The verdict matrix (modes.go): its rows, the train loss chart and
	// the precision note.
	Matrix        []modeRow
	LossChart     template.HTML
	PrecisionNote string
	// Prediction is the TorchTPU prediction of a result off TPU (nil on
	// tpu, or without one); PredictionCheck, on a tpu result that failed
	// on an op TorchTPU lacks, whether the prediction had that op.
	Prediction      *predictionView
	PredictionCheck string
}

// badgeSnippet is what a model card needs to show the badge of one target.
type badgeSnippet struct {
	Target   compat.Target
	ImgURL   string
	PageURL  string
	Alt      string
	Markdown string
	HTML     string
}

// modelView is the data of templates/model.html.
type modelView struct {
	layout
	Model   compat.Model
	Current []resultView
	Events  []compat.Event
	History []compat.Result
	Badges  []badgeSnippet
	Charts  []modelCharts
	// Readiness is the model's readiness block; nil when not computed.
	Readiness *readinessView
	// Serving is the model's serving block (serving.go).
	Serving servingView
	// Without a result: the model's open test request, else the form to
	// ask for one (nil when requests are off).
	Request *store.TestRequest
	Form    *requestForm
}

// Model page history: the table shows the newest historyRows results, the
// charts the newest historyCharted.
const (
	historyRows    = 30
	historyCharted = 100
)

// Model serves GET /models/{id}: a model's current results, history,
// evidence, repro command and badge snippets. An alias redirects to the
// model's current id.
func (h *Handler) Model(c *fiber.Ctx) error {
	id, err := httpx.IDParam(c, "")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	m, err := h.Data.Store.GetModel(ctx, id, "")
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			if h.asks.Desk != nil && compat.ValidateModelID(id) == nil {
				return h.unknownModel(c, id)
			}
			return fmt.Errorf("%w: the scanner does not know model %s", httpx.ErrNotFound, httpx.QuoteShort(id))
		}
		return fmt.Errorf("web: model page: %w", err)
	}
	if m.ID != id {
		return c.Redirect(show.ModelPath(m.ID), fiber.StatusMovedPermanently)
	}
	current, err := h.Data.Store.CurrentResults(ctx, m.ID)
	if err != nil {
		return fmt.Errorf("web: model page results: %w", err)
	}
	events, err := h.Data.Store.ModelEvents(ctx, m.ID, 100)
	if err != nil {
		return fmt.Errorf("web: model page events: %w", err)
	}
	history, err := h.Data.Store.History(ctx, m.ID, "", historyCharted)
	if err != nil {
		return fmt.Errorf("web: model page history: %w", err)
	}

	reg, err := h.Data.ServingRegistry(ctx)
	if err != nil {
		return err
	}
	m.Serving = data.ServingCell(reg, m)
	if err := h.Data.WithMeasured(ctx, &m); err != nil {
		return err
	}
	v := modelView{Model: m, Serving: newServingView(reg, m), Events: events, History: history[:min(len(history), historyRows)], Charts: historyCharts(history),
		Readiness: newReadinessView(m.Readiness)}
	v.Canonical = show.ModelPath(m.ID)
	v.Feeds = show.ModelFeeds(m.ID)
	if len(current) == 0 {
		if v.Request, err = h.requestFor(ctx, m.ID); err != nil {
			return err
		}
		if v.Request == nil {
			v.Form = h.form(m.ID)
		}
	}
	targets := []compat.Target{}
	for _, r := range current {
		v.Current = append(v.Current, resultView{Result: r, Metrics: metricRows(r.Metrics), Matrix: modeRows(r),
			LossChart: lossChart(r), PrecisionNote: precisionNote(r), Prediction: newPredictionView(r),
			PredictionCheck: predictionCheck(r, current)})
		targets = append(targets, r.Target)
	}
	if !containsTarget(targets, compat.TargetTPU) {
		targets = append([]compat.Target{compat.TargetTPU}, targets...)
	}
	base := h.Clients.Base(c)
	for _, t := range targets {
		v.Badges = append(v.Badges, snippet(base, m.ID, t))
	}
	return h.render(c, "model", v)
}

func containsTarget(ts []compat.Target, t compat.Target) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// snippet builds the Markdown and HTML that show a model's badge on target.
func snippet(base, id string, t compat.Target) badgeSnippet {
	img := base + "/badge/" + show.EscapeID(id) + ".svg"
	if t != compat.TargetTPU {
		img += "?target=" + string(t)
	}
	page := base + show.ModelPath(id)
	alt := t.BadgeLabel() + " compatibility of " + id
	return badgeSnippet{
		Target:   t,
		ImgURL:   img,
		PageURL:  page,
		Alt:      alt,
		Markdown: "[![" + markdownEscape(alt) + "](" + img + ")](" + page + ")",
		HTML:     `<a href="` + html.EscapeString(page) + `"><img src="` + html.EscapeString(img) + `" alt="` + html.EscapeString(alt) + `"></a>`,
	}
}

// markdownEscape escapes the characters that end or nest a link text.
func markdownEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\', '[', ']', '(', ')', '*', '_', '`', '<', '>':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// metricRows lays out a result's measurements; unmeasured ones are dashes.
func metricRows(m compat.Metrics) []metricRow {
	sec := func(p *float64) string { return withUnit(show.Num(p, 2), " s") }
	ms := func(p *float64) string { return withUnit(show.Num(p, 1), " ms") }
	g := func(p *float64) string {
		if p == nil {
			return show.Dash
		}
		return strconv.FormatFloat(*p, 'g', 4, 64)
	}
	eff := efficiencyRows(m) // MFU and MBU, next to the speed
	rows := []metricRow{
		{"Load", sec(m.LoadS)},
		{"First forward", sec(m.FirstForwardS)},
		{"Forward", ms(m.ForwardMS)},
		{"Compile", sec(m.CompileS)},
		{"Tokens per second", withUnit(show.Num(m.TokensPerS, 1), " tok/s")},
		eff[0], eff[1],
		{"Peak memory", show.Bytes(m.PeakMemBytes)},
		{"Max abs diff vs CPU", g(m.MaxAbsDiff)},
		{"Top-1 agreement vs CPU", show.Pct(m.Top1Agreement)},
	}
	// Extensions, shown only when measured.
	for _, x := range []struct {
		name string
		v    string
		set  bool
	}{
		{"Tolerance", g(m.Tolerance), m.Tolerance != nil},
		{"Compiled step", ms(m.CompiledStepMS), m.CompiledStepMS != nil},
		{"Time to first token", ms(m.TTFTMS), m.TTFTMS != nil},
		{"Perplexity", g(m.Perplexity), m.Perplexity != nil},
		{"Relative error vs CPU", g(m.RelError), m.RelError != nil},
		{"Cosine similarity vs CPU", cosine(m.CosineSimilarity), m.CosineSimilarity != nil},
		{"Parameters", paramCount(m.ParamCount), m.ParamCount != nil},
		{"Collectives in a step", ms(m.CollectiveMS), m.CollectiveMS != nil},
		{"Graph breaks (compile)", count64(m.GraphBreaks), m.GraphBreaks != nil},
		{"Float32 matmul precision", show.Deref(m.Precision), m.Precision != nil},
	} {
		if x.set {
			rows = append(rows, metricRow{x.name, x.v})
		}
	}
	return rows
}

func withUnit(v, unit string) string {
	if v == show.Dash {
		return v
	}
	return v + unit
}

func paramCount(p *int64) string {
	if p == nil {
		return show.Dash
	}
	return show.Count(*p)
}

// cosine shows a cosine similarity with the digits that tell 0.9999 from 0.99.
func cosine(p *float64) string {
	if p == nil {
		return show.Dash
	}
	return strconv.FormatFloat(*p, 'f', 6, 64)
}

// count64 writes a count, or the dash.
func count64(p *int64) string {
	if p == nil {
		return show.Dash
	}
	return strconv.FormatInt(*p, 10)
}
