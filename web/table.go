package web

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
)

// legendEntry is one status word and its meaning.
type legendEntry struct {
	Status  compat.Status
	Meaning string
}

func legend() []legendEntry {
	out := make([]legendEntry, len(compat.Statuses))
	for i, st := range compat.Statuses {
		out[i] = legendEntry{st, wordOf(st).meaning}
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
	Headline  passHeadline // the pass figures, tier by tier of evidence
	Coverage  coverageBody // of the summary's task tallies
	Failures  []store.FailureGroup
	State     ScanState
	Progress  *scanProgress
	Empty     bool // the database knows no model at all
	FirstScan bool // no result recorded yet, and a scan is on its way
	Legend    []legendEntry
	Statuses  []compat.Status
	// TrainStatuses are the train filter's choices (no untested).
	TrainStatuses []compat.Status
	// ServeValues are the serve filter's choices (serveValues).
	ServeValues []string
	Targets     []compat.Target
	Sorts       []string
	// DefaultSort is the sort of a form without one.
	DefaultSort string
	Headers     map[string]sortHeader
	Tasks       []string
	Target      compat.Target
	Hints       []string   // readiness hint codes, for the filter
	Fit         fitSummary // models that fit one device per TPU generation
	// Body is the rendered "table-body" template (cached by query and data version).
	Body template.HTML
	// Trend and FailureChart are the body's charts.
	Trend        template.HTML
	TrendTarget  compat.Target
	FailureChart template.HTML
}

// firstScanRefresh is how often the page reloads while the first scan runs.
const firstScanRefresh = 20

// table serves GET /: the compatibility table.
func (s *Server) table(c *fiber.Ctx) error {
	q, err := parseModelQuery(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	form := newTableForm(&q, c.Query("order"))
	changed, err := s.store.Changed(ctx)
	if err != nil {
		return fmt.Errorf("web: table: %w", err)
	}
	// The whole page is cached until the data or the scheduler's state
	// changes (a running scan's progress is a write).
	state := s.scanState()
	pageKey := queryKey(q) + "|" + c.Query("order") + "|" + fmt.Sprintf("%+v", state)
	if page, ok := s.tablePages.get(pageKey, changed); ok {
		c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
		return page.send(c)
	}
	v, err := s.tableView(ctx, q, form, state, changed)
	if err != nil {
		return err
	}

	if err := s.tableBody(ctx, &v, queryKey(q), changed); err != nil {
		return err
	}
	s.firstScanView(ctx, &v)
	body, err := s.renderPage("table", v)
	if err != nil {
		return err
	}
	page := encodeBody(body)
	s.tablePages.put(pageKey, changed, page, page.size()+len(pageKey))
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return page.send(c)
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
func (s *Server) tableView(ctx context.Context, q store.ModelQuery, form tableForm, state ScanState, changed time.Time) (tableView, error) {
	models, next, err := s.cachedList(ctx, q, changed)
	if err != nil {
		return tableView{}, fmt.Errorf("web: table: %w", err)
	}
	sum, err := s.cachedSummary(ctx, q.Target, changed)
	if err != nil {
		return tableView{}, fmt.Errorf("web: table summary: %w", err)
	}
	fails, err := s.cachedFailures(ctx, q.Target, 8, changed)
	if err != nil {
		return tableView{}, fmt.Errorf("web: table failures: %w", err)
	}
	byTarget, err := s.targetSummaries(ctx, changed)
	if err != nil {
		return tableView{}, fmt.Errorf("web: table headline: %w", err)
	}
	pred, err := s.cachedPredicted(ctx, changed)
	if err != nil {
		return tableView{}, fmt.Errorf("web: table headline: %w", err)
	}

	v := tableView{
		Form: form, Summary: sum, Headline: newHeadline(byTarget, pred), Coverage: newCoverageBody(taskCoverage(sum.Tasks)), Failures: fails,
		State: state, Legend: legend(),
		Statuses: compat.Statuses, Targets: compat.Targets, Sorts: sortNames(), DefaultSort: store.DefaultSort, Target: q.Target,
		Filtered:      form.Q != "" || form.Status != "" || form.Task != "" || form.Org != "" || form.Hint != "" || form.Train != "" || form.Serve != "",
		TrainStatuses: trainStatuses(), ServeValues: serveValues(),
		Hints: readiness.Codes, Fit: newFitSummary(sum.Fit),
	}
	v.Canonical = "/"
	reg, err := s.servingRegistry(ctx)
	if err != nil {
		return tableView{}, err
	}
	tasks := map[string]bool{}
	for _, m := range models { // m is a copy: the cached list's models stay as they are
		m.Serving = servingCell(reg, m)
		v.Models = append(v.Models, modelRow{Model: m, Status: m.ModelStatus()})
		if m.Task != "" {
			tasks[m.Task] = true
		}
	}
	rows := make([]*compat.Model, len(v.Models))
	for i := range v.Models {
		rows[i] = &v.Models[i].Model
	}
	if err := s.withMeasured(ctx, rows...); err != nil {
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
		if q.Limit != defaultLimit {
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
func (s *Server) tableBody(ctx context.Context, v *tableView, key string, changed time.Time) error {
	if body, ok := s.tableBodies.get(key, changed); ok {
		v.Body = body
		return nil
	}
	if err := s.tableCharts(ctx, v, changed); err != nil {
		return fmt.Errorf("web: table charts: %w", err)
	}
	var buf bytes.Buffer
	if err := s.pages.t["table"].ExecuteTemplate(&buf, "table-body", *v); err != nil {
		return fmt.Errorf("web: render table: %w", err)
	}
	v.Body = template.HTML(buf.String()) // made by html/template: already escaped
	s.tableBodies.put(key, changed, v.Body, buf.Len()+len(key))
	return nil
}

// firstScanView marks the first scan: nothing recorded yet (the models it
// discovered are all untested) and a scan on its way; the table shows
// what is known and reloads. A running scan's progress comes with it.
func (s *Server) firstScanView(ctx context.Context, v *tableView) {
	if v.Summary.Counts[compat.StatusUntested] == v.Summary.Models && (v.State.Running || v.State.Queued) {
		v.FirstScan = true
		v.Refresh = firstScanRefresh
	}
	if v.State.Running && v.State.ScanID > 0 {
		if sc, err := s.store.GetScan(ctx, v.State.ScanID); err == nil {
			v.Progress = &scanProgress{ID: sc.ID, Planned: sc.Planned, Done: sc.Done}
		}
	}
}

// tableCharts draws the table's charts: the pass rate by runtime of its
// target (the default target when it shows any) and its top failures.
func (s *Server) tableCharts(ctx context.Context, v *tableView, changed time.Time) error {
	rts, err := s.cachedRuntimes(ctx, "", changed)
	if err != nil {
		return err
	}
	v.TrendTarget = v.Target
	if v.TrendTarget == "" {
		v.TrendTarget = defaultRuntimeTarget(rts)
	}
	if on := onTarget(rts, v.TrendTarget); len(on) > 0 {
		v.Trend = s.trendChart(v.TrendTarget, on, "trend")
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

// trainStatuses are the statuses a train verdict can have.
func trainStatuses() []compat.Status {
	var out []compat.Status
	for _, st := range compat.Statuses {
		if st != compat.StatusUntested {
			out = append(out, st)
		}
	}
	return out
}
