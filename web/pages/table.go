package pages

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/cached"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// legendEntry is one status word and its meaning.
type legendEntry struct {
	Status  compat.Status
	Meaning string
}

func legend() []legendEntry {
	out := make([]legendEntry, len(compat.Statuses))
	for i, st := range compat.Statuses {
		out[i] = legendEntry{st, show.WordOf(st).Meaning}
	}
	return out
}

// tableForm is the filter form as the user filled it in.
type tableForm struct {
	Q, Status, Task, Org, Target, Sort, Order, Hint string
	Train                                           string // the train verdict's status (issue 25's matrix)
	Serve                                           string // what vLLM-TorchTPU serves it as (serving.go)
}

// values encodes the form as a query string, without empty fields.
func (f tableForm) values() url.Values {
	v := url.Values{}
	for k, x := range map[string]string{"q": f.Q, "status": f.Status, "task": f.Task, "org": f.Org,
		"target": f.Target, "sort": f.Sort, "order": f.Order, "hint": f.Hint, "train": f.Train, "serve": f.Serve} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v
}

// sortHeader is a sortable column header: its link and ARIA state.
type sortHeader struct {
	URL   string
	Aria  string // ascending, descending or none
	Arrow string
}

// modelRow is one line of the table.
type modelRow struct {
	compat.Model
	Status compat.Status
	// Measured is its measured serving verdict laid out; nil when none.
	Measured *measuredView
}

// scanProgress describes a running scan for the page.
type scanProgress struct {
	ID      int64
	Planned int
	Done    int
}

// tableView is the data of templates/table.html.
type tableView struct {
	layout
	Form      tableForm
	Filtered  bool
	Models    []modelRow
	NextURL   string
	FirstURL  string
	Summary   store.Summary
	Headline  data.PassHeadline // the pass figures, tier by tier of evidence
	Coverage  data.CoverageBody // of the summary's task tallies
	Failures  []store.FailureGroup
	State     data.ScanState
	Progress  *scanProgress
	Empty     bool // the database knows no model at all
	FirstScan bool // no result recorded yet, and a scan is on its way
	Legend    []legendEntry
	Statuses  []compat.Status
	// TrainStatuses are the train filter's choices (no untested).
	TrainStatuses []compat.Status
	// ServeValues are the serve filter's choices (httpx.ServeValues).
	ServeValues []string
	Targets     []compat.Target
	Sorts       []string
	// DefaultSort is the sort of a form without one.
	DefaultSort string
	Headers     map[string]sortHeader
	Tasks       []string
	Target      compat.Target
	Hints       []string        // readiness hint codes, for the filter
	Fit         data.FitSummary // models that fit one device per TPU generation
	// Body is the rendered "table-body" template (cached by query and data version).
	Body template.HTML
	// Trend and FailureChart are the body's charts.
	Trend        template.HTML
	TrendTarget  compat.Target
	FailureChart template.HTML
}

// firstScanRefresh is how often the page reloads while the first scan runs.
const firstScanRefresh = 20

// Table serves GET /: the compatibility table.
func (h *Handler) Table(c *fiber.Ctx) error {
	q, err := httpx.ParseModelQuery(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	form := newTableForm(&q, c.Query("order"))
	changed, err := h.Data.Changed(ctx)
	if err != nil {
		return fmt.Errorf("web: table: %w", err)
	}
	// The whole page is cached until the data or the scheduler's state
	// changes (a running scan's progress is a write).
	state := data.StateOf(h.scans)
	pageKey := data.QueryKey(q) + "|" + c.Query("order") + "|" + fmt.Sprintf("%+v", state)
	page, err := cached.Rendered(&h.tablePages, pageKey, changed, func() ([]byte, error) {
		v, err := h.tableView(ctx, q, form, state, changed)
		if err != nil {
			return nil, err
		}
		if err := h.tableBody(ctx, &v, data.QueryKey(q), changed); err != nil {
			return nil, err
		}
		h.firstScanView(ctx, &v)
		return h.renderPage("table", v)
	})
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return page.Send(c)
}

// newTableForm is the table's form for q; the form selects one status
// and one train status (the API takes several), so q keeps the first.
func newTableForm(q *store.ModelQuery, order string) tableForm {
	form := tableForm{Q: q.Q, Task: q.Task, Org: q.Org, Target: string(q.Target), Sort: q.Sort, Order: order, Hint: q.Hint, Serve: q.Serve}
	if len(q.Status) > 0 {
		form.Status = string(q.Status[0])
		q.Status = q.Status[:1]
	}
	if len(q.Train) > 0 {
		form.Train = string(q.Train[0])
		q.Train = q.Train[:1]
	}
	return form
}

// tableView reads what the table shows of q (its page of models, the
// summary, the top failures) and its links, all but the rendered body.
func (h *Handler) tableView(ctx context.Context, q store.ModelQuery, form tableForm, state data.ScanState, changed time.Time) (tableView, error) {
	models, next, err := h.Data.List(ctx, q, changed)
	if err != nil {
		return tableView{}, fmt.Errorf("web: table: %w", err)
	}
	sum, err := h.Data.Summary(ctx, q.Target, changed)
	if err != nil {
		return tableView{}, fmt.Errorf("web: table summary: %w", err)
	}
	fails, err := h.Data.Failures(ctx, q.Target, 8, changed)
	if err != nil {
		return tableView{}, fmt.Errorf("web: table failures: %w", err)
	}
	byTarget, err := h.Data.TargetSummaries(ctx, changed)
	if err != nil {
		return tableView{}, fmt.Errorf("web: table headline: %w", err)
	}
	pred, err := h.Data.Predicted(ctx, changed)
	if err != nil {
		return tableView{}, fmt.Errorf("web: table headline: %w", err)
	}

	v := tableView{
		Form: form, Summary: sum, Headline: data.NewHeadline(byTarget, pred), Coverage: data.NewCoverageBody(data.TaskCoverage(sum.Tasks)), Failures: fails,
		State: state, Legend: legend(),
		Statuses: compat.Statuses, Targets: compat.Targets, Sorts: httpx.SortNames(), DefaultSort: store.DefaultSort, Target: q.Target,
		Filtered:      form.Q != "" || form.Status != "" || form.Task != "" || form.Org != "" || form.Hint != "" || form.Train != "" || form.Serve != "",
		TrainStatuses: httpx.TrainStatuses(), ServeValues: httpx.ServeValues(),
		Hints: readiness.Codes, Fit: data.NewFitSummary(sum.Fit),
	}
	v.Canonical = "/"
	reg, err := h.Data.ServingRegistry(ctx)
	if err != nil {
		return tableView{}, err
	}
	tasks := map[string]bool{}
	for _, m := range models { // m is a copy: the cached list's models stay as they are
		m.Serving = data.ServingCell(reg, m)
		v.Models = append(v.Models, modelRow{Model: m, Status: m.ModelStatus()})
		if m.Task != "" {
			tasks[m.Task] = true
		}
	}
	rows := make([]*compat.Model, len(v.Models))
	for i := range v.Models {
		rows[i] = &v.Models[i].Model
	}
	if err := h.Data.WithMeasured(ctx, rows...); err != nil {
		return tableView{}, err
	}
	for i := range v.Models {
		if c := v.Models[i].Serving; c != nil && c.Measured != nil && c.Measured.Judged() {
			// a probe that judged nothing leaves the declared cell (as ?serve= does)
			v.Models[i].Measured = newMeasuredView(c.Measured)
		}
	}
	for _, t := range commonTasks {
		tasks[t] = true
	}
	for t := range tasks {
		v.Tasks = append(v.Tasks, t)
	}
	sort.Strings(v.Tasks)

	base := form.values()
	if next != "" {
		nv := cloneValues(base)
		nv.Set("cursor", next)
		if q.Limit != httpx.DefaultLimit {
			nv.Set("limit", strconv.Itoa(q.Limit))
		}
		v.NextURL = "/?" + nv.Encode()
	}
	if q.Cursor != "" {
		v.FirstURL = "/?" + base.Encode()
	}
	v.Headers = sortHeaders(form)
	v.Empty = sum.Models == 0
	return v, nil
}

// tableBody renders v's body (its charts and rows), cached by the query's
// key until the data changes.
func (h *Handler) tableBody(ctx context.Context, v *tableView, key string, changed time.Time) error {
	body, err := h.tableBodies.Do(key, changed, func() (template.HTML, int, error) {
		if err := h.tableCharts(ctx, v, changed); err != nil {
			return "", 0, fmt.Errorf("web: table charts: %w", err)
		}
		var buf bytes.Buffer
		if err := h.pages.t["table"].ExecuteTemplate(&buf, "table-body", *v); err != nil {
			return "", 0, fmt.Errorf("web: render table: %w", err)
		}
		return template.HTML(buf.String()), buf.Len() + len(key), nil // made by html/template: already escaped
	})
	v.Body = body
	return err
}

// firstScanView marks the first scan: nothing recorded yet (the models it
// discovered are all untested) and a scan on its way; the table shows
// what is known and reloads. A running scan's progress comes with it.
func (h *Handler) firstScanView(ctx context.Context, v *tableView) {
	if v.Summary.Counts[compat.StatusUntested] == v.Summary.Models && (v.State.Running || v.State.Queued) {
		v.FirstScan = true
		v.Refresh = firstScanRefresh
	}
	if v.State.Running && v.State.ScanID > 0 {
		if sc, err := h.Data.Store.GetScan(ctx, v.State.ScanID); err == nil {
			v.Progress = &scanProgress{ID: sc.ID, Planned: sc.Planned, Done: sc.Done}
		}
	}
}

// tableCharts draws the table's charts: the pass rate by runtime of its
// target (the default target when it shows any) and its top failures.
func (h *Handler) tableCharts(ctx context.Context, v *tableView, changed time.Time) error {
	rts, err := h.Data.Runtimes(ctx, "", changed)
	if err != nil {
		return err
	}
	v.TrendTarget = v.Target
	if v.TrendTarget == "" {
		v.TrendTarget = data.DefaultRuntimeTarget(rts)
	}
	if on := data.OnTarget(rts, v.TrendTarget); len(on) > 0 {
		v.Trend = h.trendChart(v.TrendTarget, on, "trend")
	}
	if len(v.Failures) > 0 {
		v.FailureChart = failureChart(v.Failures, v.Target)
	}
	return nil
}

// sortHeaders builds the links of the sortable column headers, one per
// store order (store.Sorts; the table shows those it has a column for): a
// click sorts by the column, a second click reverses it.
func sortHeaders(f tableForm) map[string]sortHeader {
	cur := f.Sort
	if cur == "" {
		cur = store.DefaultSort
	}
	out := map[string]sortHeader{}
	for _, o := range store.Sorts() {
		key := o.Name
		h := sortHeader{Aria: "none"}
		order := ""
		if key == cur {
			desc := o.Desc
			if f.Order != "" {
				desc = f.Order == "desc"
			}
			if desc {
				h.Aria, h.Arrow, order = "descending", "↓", "asc"
			} else {
				h.Aria, h.Arrow, order = "ascending", "↑", "desc"
			}
		}
		v := f.values()
		v.Set("sort", key)
		if order != "" {
			v.Set("order", order)
		} else {
			v.Del("order")
		}
		h.URL = "/?" + v.Encode()
		out[key] = h
	}
	return out
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, x := range v {
		out[k] = append([]string(nil), x...)
	}
	return out
}

// commonTasks seed the task filter's suggestions (Hub pipeline tags).
var commonTasks = []string{"text-generation", "text-classification", "token-classification", "fill-mask",
	"feature-extraction", "sentence-similarity", "text2text-generation", "translation", "summarization",
	"question-answering", "image-classification", "object-detection", "image-segmentation",
	"automatic-speech-recognition", "audio-classification", "zero-shot-classification", "image-text-to-text"}
