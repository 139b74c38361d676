package pages

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/internal/sweep"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// methodologyView is the data of templates/methodology.html.
type methodologyView struct {
	layout
	Stages      []compat.Stage
	Legend      []legendEntry
	Evidence    []show.EvidenceEntry
	Classes     []compat.FailureClass
	Reasons     []compat.Reason
	Ready       readinessMethodology
	Dtypes      []dtypeRow
	Kinds       []kindRow
	Families    []familyRow
	Unsupported []unsupportedRow
	Sweep       sweepView
	// Hits is how the TorchTPU predictions held against tpu results.
	Hits *store.PredictionScore
}

// sweepView is the scanner's coverage of Google's sweep, as /methodology shows it.
type sweepView struct {
	Source sweep.Source
	Body   data.SweepBody
	Share  string // the share of models with a verdict, "—" when none
	Tasks  []sweepTaskRow
}

// sweepTaskRow is one task's coverage, its share written out.
type sweepTaskRow struct {
	data.SweepTask
	ShareText string
}

func newSweepView(b data.SweepBody) sweepView {
	pct := func(p *float64) string {
		if p == nil {
			return "—"
		}
		return strconv.FormatFloat(100**p, 'f', 0, 64) + "%"
	}
	v := sweepView{Source: b.Source, Body: b, Share: pct(b.Share)}
	for _, t := range b.Tasks {
		v.Tasks = append(v.Tasks, sweepTaskRow{t, pct(t.Share)})
	}
	return v
}

// dtypeRow is one device dtype's numerics bounds (numerics.json).
type dtypeRow struct {
	Dtype, MaxAbs, Top1, RelError, Cosine, TrainLoss string
}

// kindRow is one kind of output and the checks it gets.
type kindRow struct {
	Kind, About string
	Checks      []string
}

// familyRow is one family of tasks (tasks.json): its pipeline tags, inputs,
// compared outputs and whether it generates.
type familyRow struct {
	Name     string
	Tags     []string
	Inputs   string
	Outputs  []string // "name (kind)"
	Generate bool
}

// unsupportedRow is a pipeline tag the harness does not test, and why.
type unsupportedRow struct{ Tag, Why string }

// Methodology serves GET /methodology: exactly what a pass means, and the
// scanner's coverage of Google's sweep on any target (recomputed when the data
// changes, so the page is revalidated by the data's version).
func (h *Handler) Methodology(c *fiber.Ctx) error {
	ctx := c.UserContext()
	changed, fresh, err := cached.Check(c, h.Data, c.OriginalURL())
	if err != nil {
		return fmt.Errorf("web: methodology: %w", err)
	}
	c.Set(fiber.HeaderCacheControl, "no-cache")
	if fresh {
		return cached.Unchanged(c)
	}
	cov, err := h.Data.Sweep(ctx, "", changed)
	if err != nil {
		return fmt.Errorf("web: methodology: %w", err)
	}
	v := methodologyView{Stages: compat.Stages, Legend: legend(), Evidence: show.EvidenceLegend(), Classes: compat.FailureClasses, Reasons: compat.Reasons,
		Ready: newReadinessMethodology(), Sweep: newSweepView(data.NewSweepBody("", h.Data.SweepList.Source, cov))}
	v.Dtypes, v.Kinds = numericsRows(harness.Numerics)
	v.Families, v.Unsupported = taskRows(harness.Tasks)
	v.Canonical = "/methodology"
	hits, err := h.Data.Store.PredictionHits(ctx)
	if err != nil {
		return fmt.Errorf("web: methodology: %w", err)
	}
	v.Hits = &hits
	return h.render(c, "methodology", v)
}

// numericsRows lays out the numerics table: bounds per dtype, checks per kind.
func numericsRows(t harness.NumericsTable) ([]dtypeRow, []kindRow) {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	var dtypes []dtypeRow
	for _, d := range harness.NumericsDtypes {
		b := t.Dtypes[d]
		dtypes = append(dtypes, dtypeRow{Dtype: d, MaxAbs: g(b.Atol) + " + " + g(b.Rtol) + " · max |reference|",
			Top1: g(b.Top1), RelError: g(b.RelError), Cosine: g(b.Cosine),
			TrainLoss: g(b.TrainLossAtol) + " + " + g(b.TrainLossRtol) + " · |reference loss|"})
	}
	var kinds []kindRow
	for name, k := range t.Kinds {
		kinds = append(kinds, kindRow{Kind: name, About: k.About, Checks: k.Checks})
	}
	slices.SortFunc(kinds, func(a, b kindRow) int { return strings.Compare(a.Kind, b.Kind) })
	return dtypes, kinds
}

// taskRows lays out the task table: families with their tags (families
// without a tag of their own, such as speech-seq2seq, which a tag's config
// resolves to, are listed too), and the unsupported tags.
func taskRows(t harness.TaskTable) ([]familyRow, []unsupportedRow) {
	tags := map[string][]string{}
	for tag, spec := range t.Tasks {
		tags[spec.Family] = append(tags[spec.Family], tag)
	}
	var fams []familyRow
	for name, f := range t.Families {
		row := familyRow{Name: name, Tags: tags[name], Inputs: f.Inputs, Generate: f.Generate}
		slices.Sort(row.Tags)
		for _, o := range f.Outputs {
			row.Outputs = append(row.Outputs, o[0]+" ("+o[1]+")")
		}
		fams = append(fams, row)
	}
	slices.SortFunc(fams, func(a, b familyRow) int { return strings.Compare(a.Name, b.Name) })
	var un []unsupportedRow
	for tag, why := range t.Unsupported {
		un = append(un, unsupportedRow{tag, why})
	}
	slices.SortFunc(un, func(a, b unsupportedRow) int { return strings.Compare(a.Tag, b.Tag) })
	return fams, un
}
