package web

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/watch"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// The TorchTPU prediction (issue 36): a result that did not run on a TPU
// carries tpu_ops, the ops its run traced judged against the runtime's
// kernel table. It is shown as a prediction, never as a TPU result; /ops
// ranks the ops it says TorchTPU lacks by the downloads they block.

// predictionCaveat is what every prediction is not.
const predictionCaveat = "A prediction from torch_tpu's kernel registrations and the ops this run traced on its own " +
	"device, not a TPU result: a registered kernel says nothing of dtypes (complex, float64, int8)."

// predictionView is a result's prediction on the model page.
type predictionView struct {
	Summary      string
	Table        string
	Traced       int
	Native       int
	Default      int
	Missing      []string
	MissingTrain []string
	Unknown      []string
	Caveat       string
}

func newPredictionView(r compat.Result) *predictionView {
	p := r.TPUOps
	if p == nil || r.Target == compat.TargetTPU {
		return nil
	}
	return &predictionView{Summary: p.Summary(), Table: p.Table, Traced: p.Traced, Native: p.Native, Default: p.Default,
		Missing: p.Missing, MissingTrain: p.MissingTrain, Unknown: p.Unknown, Caveat: predictionCaveat}
}

// predictionCheck says, for a tpu result that failed on an op TorchTPU
// does not implement, whether the model's prediction (of its current
// results elsewhere) had the op; "" when there is nothing to say.
func predictionCheck(r compat.Result, current []compat.Result) string {
	if r.Target != compat.TargetTPU || r.FailureClass == nil || *r.FailureClass != compat.ClassUnsupportedOp || r.Op == nil {
		return ""
	}
	for _, o := range current {
		if o.Target == compat.TargetTPU || o.TPUOps == nil {
			continue
		}
		p := o.TPUOps
		var where string
		switch {
		case contains(p.Missing, *r.Op):
			where = "among the inference's missing ops"
		case contains(p.MissingTrain, *r.Op):
			where = "among the train step's missing ops"
		}
		if where != "" {
			return fmt.Sprintf("The prediction (%s, from the %s run) had %s, %s.", p.Table, o.Target, *r.Op, where)
		}
		return fmt.Sprintf("The prediction (%s, from the %s run) did not have %s: %s.", p.Table, o.Target, *r.Op, p.Summary())
	}
	return "No prediction to compare with: the model has no result off TPU with a traced op list."
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// opsBody is /api/v1/ops.
type opsBody struct {
	// Table is the kernel table the predictions were judged against ("" when
	// there is none).
	Table  string            `json:"table"`
	Caveat string            `json:"caveat"`
	Ops    []store.MissingOp `json:"ops"`
}

// opsView is templates/ops.html.
type opsView struct {
	layout
	Table  string
	Caveat string
	Ops    []opRow
	// Op is the one op asked for (?op=), with every model that needs it.
	Op string
}

type opRow struct {
	store.MissingOp
	URL    string // the op's own list: /ops?op=
	Models []string
	More   int // models not listed
}

// opsExamples is how many models a row of /ops names.
const opsExamples = 5

// missingOpsRead is one cached read of Store.MissingOps. Read only.
type missingOpsRead struct {
	ops   []store.MissingOp
	table string
}

// cachedMissingOps is Store.MissingOps through the cache (it reads every
// current prediction): until the data changes.
func (s *Server) cachedMissingOps(ctx context.Context, table string) ([]store.MissingOp, string, error) {
	changed, err := s.store.Changed(ctx)
	if err != nil {
		return nil, "", err
	}
	if v, ok := s.opsLists.get(table, changed); ok {
		return v.ops, v.table, nil
	}
	ops, used, err := s.store.MissingOps(ctx, table)
	if err != nil {
		return nil, "", err
	}
	size := len(table) + len(used)
	for _, o := range ops {
		size += 96 + len(o.Op)
		for _, id := range o.ModelIDs {
			size += 16 + len(id)
		}
	}
	s.opsLists.put(strings.Clone(table), changed, missingOpsRead{ops, used}, size)
	return ops, used, nil
}

// maxOpsParam is the most characters ?table= and ?op= may have (the
// OpenAPI document's maxLength).
const maxOpsParam = 200

// missingOps reads the fix list (?table=, ?op= to keep one op).
func (s *Server) missingOps(ctx context.Context, c *fiber.Ctx) ([]store.MissingOp, string, error) {
	for _, k := range []string{"table", "op"} {
		if n := utf8.RuneCountInString(c.Query(k)); n > maxOpsParam {
			return nil, "", fmt.Errorf("%w: %s of %d characters (at most %d)", ErrBadRequest, k, n, maxOpsParam)
		}
	}
	ops, table, err := s.cachedMissingOps(ctx, c.Query("table"))
	if err != nil {
		return nil, "", fmt.Errorf("web: ops: %w", err)
	}
	if op := c.Query("op"); op != "" {
		keep := []store.MissingOp{}
		for _, o := range ops {
			if o.Op == op {
				keep = append(keep, o)
			}
		}
		ops = keep
	}
	return ops, table, nil
}

// apiOps serves GET /api/v1/ops: every op some model needs and the kernel
// table lacks, most downloads blocked first; ?format=csv for CSV.
func (s *Server) apiOps(c *fiber.Ctx) error {
	ops, table, err := s.missingOps(c.UserContext(), c)
	if err != nil {
		return err
	}
	switch c.Query("format") {
	case "", "json":
		return c.JSON(opsBody{Table: table, Caveat: predictionCaveat, Ops: ops})
	case "csv":
		return sendOpsCSV(c, table, ops)
	}
	return fmt.Errorf("%w: format %q (want json or csv)", ErrBadRequest, c.Query("format"))
}

// opsCSV serves GET /ops.csv.
func (s *Server) opsCSV(c *fiber.Ctx) error {
	ops, table, err := s.missingOps(c.UserContext(), c)
	if err != nil {
		return err
	}
	return sendOpsCSV(c, table, ops)
}

func sendOpsCSV(c *fiber.Ctx, table string, ops []store.MissingOp) error {
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="torchtpu-missing-ops.csv"`)
	var buf bytes.Buffer
	writeCSVRow(&buf, []string{"op", "models", "downloads", "inference_models", "inference_downloads", "train_models",
		"train_downloads", "table", "model_ids"}, nil)
	numeric := map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true}
	for _, o := range ops {
		writeCSVRow(&buf, []string{o.Op, strconv.Itoa(o.Models), strconv.FormatInt(o.Downloads, 10),
			strconv.Itoa(o.Inference.Models), strconv.FormatInt(o.Inference.Downloads, 10), strconv.Itoa(o.Train.Models),
			strconv.FormatInt(o.Train.Downloads, 10), table, strings.Join(o.ModelIDs, " ")}, numeric)
	}
	return c.Send(buf.Bytes())
}

// opsPage serves GET /ops: the fix list, each op linking to its models.
func (s *Server) opsPage(c *fiber.Ctx) error {
	ops, table, err := s.missingOps(c.UserContext(), c)
	if err != nil {
		return err
	}
	v := opsView{Table: table, Caveat: predictionCaveat, Op: c.Query("op")}
	v.Canonical = "/ops"
	for _, o := range ops {
		row := opRow{MissingOp: o, URL: "/ops?op=" + url.QueryEscape(o.Op), Models: o.ModelIDs}
		if v.Op == "" && len(row.Models) > opsExamples {
			row.More = len(row.Models) - opsExamples
			row.Models = row.Models[:opsExamples]
		}
		v.Ops = append(v.Ops, row)
	}
	return s.render(c, "ops", v)
}

// kernelTableJSON is one kept kernel table on /runtimes and in
// /api/v1/runtimes: its counts, and what it implements that the table read
// before it did not (Added) and the reverse (Dropped); both empty for the
// first.
type kernelTableJSON struct {
	Table    string    `json:"table"`
	Torch    string    `json:"torch"`
	TorchTPU string    `json:"torch_tpu"`
	ReadAt   time.Time `json:"read_at"`
	Native   int       `json:"native"`
	Default  int       `json:"default"`
	Fallback int       `json:"fallback"`
	// Previous is the table compared with ("" for the first).
	Previous string   `json:"previous"`
	Added    []string `json:"added"`
	Dropped  []string `json:"dropped"`
	// Unblocks are the models that lack an op (inference or train) by their
	// predictions judged against the previous table and none judged against
	// this one, in the previous fix list's order: predicted to run on it (of
	// registrations only). Each kept trace is judged against both tables;
	// a prediction stored without one (before migration 0018) by the ops
	// it listed.
	Unblocks []string `json:"unblocks"`
}

// kernelTables are the kept kernel tables, newest first, each against the
// one read before it, with the models it unblocks.
func (s *Server) kernelTables(ctx context.Context) ([]kernelTableJSON, error) {
	kts, err := s.store.KernelTables(ctx)
	if err != nil {
		return nil, err
	}
	rows := kernelRows(kts)
	for i := range rows {
		if rows[i].Previous == "" || len(rows[i].Added) == 0 {
			continue
		}
		before, _, err := s.cachedMissingOps(ctx, rows[i].Previous)
		if err != nil {
			return nil, err
		}
		after, _, err := s.cachedMissingOps(ctx, rows[i].Table)
		if err != nil {
			return nil, err
		}
		rows[i].Unblocks = unblocked(before, after)
	}
	return rows, nil
}

// unblocked are the models of the fix list before that the fix list after
// does not name, in before's order (its ops by downloads blocked, each
// op's models most downloaded first).
func unblocked(before, after []store.MissingOp) []string {
	still := map[string]bool{}
	for _, o := range after {
		for _, id := range o.ModelIDs {
			still[id] = true
		}
	}
	out := []string{}
	for _, o := range before {
		for _, id := range o.ModelIDs {
			if !still[id] {
				still[id] = true // listed once
				out = append(out, id)
			}
		}
	}
	return out
}

// kernelRows are the kept kernel tables, newest first, each against the one
// read before it.
func kernelRows(oldestFirst []compat.KernelTable) []kernelTableJSON {
	out := make([]kernelTableJSON, 0, len(oldestFirst))
	for i := len(oldestFirst) - 1; i >= 0; i-- {
		kt := oldestFirst[i]
		row := kernelTableJSON{Table: kt.Name(), Torch: kt.Torch, TorchTPU: kt.TorchTPU, ReadAt: kt.ReadAt,
			Native: kt.Count(compat.OpNative), Default: kt.Count(compat.OpDefault), Fallback: kt.Count(compat.OpFallback),
			Added: []string{}, Dropped: []string{}, Unblocks: []string{}}
		if i > 0 {
			d := compat.DiffKernels(oldestFirst[i-1], kt)
			row.Previous, row.Added, row.Dropped = oldestFirst[i-1].Name(), d.Added, d.Dropped
		}
		out = append(out, row)
	}
	return out
}

// predictionSummary is the table's line for a result's prediction: its
// Summary off TPU, "" on tpu or without one.
func predictionSummary(r *compat.Result) string {
	if r == nil || r.TPUOps == nil || r.Target == compat.TargetTPU {
		return ""
	}
	return r.TPUOps.Summary()
}

// kernelHTML is the HTML body of a new kernel table's feed item;
// html/template escapes every op and model id.
var kernelHTML = template.Must(template.New("kernels").Parse(
	`<p><strong>{{.Row.Table}}</strong>: {{len .Row.Added}} operators added, {{len .Row.Dropped}} dropped since {{.Row.Previous}}.</p>` +
		`{{if .Row.Unblocks}}<p>Predicted to unblock {{len .Row.Unblocks}} models (every operator their predictions lacked is now implemented; a prediction, not a TPU result):</p>` +
		`<ul>{{range .Models}}<li><a href="{{.URL}}">{{.ID}}</a></li>{{end}}</ul>{{if .More}}<p>and {{.More}} more.</p>{{end}}{{end}}` +
		`<p><a href="{{.URL}}">The kernel tables</a></p>`))

// kernelFeedItems are the feed's items for new TorchTPU kernel tables: one
// per table read after another, with what it added and dropped and the
// models it is predicted to unblock (kind runtime, target tpu).
func (s *Server) kernelFeedItems(ctx context.Context, base string) ([]feedItem, error) {
	rows, err := s.kernelTables(ctx)
	if err != nil {
		return nil, err
	}
	page := base + "/runtimes#rt-kernels"
	var items []feedItem
	for _, row := range rows {
		if row.Previous == "" {
			continue
		}
		type model struct{ ID, URL string }
		data := struct {
			Row    kernelTableJSON
			Models []model
			More   int
			URL    string
		}{Row: row, URL: page}
		title := fmt.Sprintf("New TorchTPU kernel table %s: %d operators added, %d dropped", row.Table, len(row.Added), len(row.Dropped))
		if n := len(row.Unblocks); n > 0 {
			title += fmt.Sprintf("; predicted to unblock %d models", n)
		}
		var text strings.Builder
		text.WriteString(title + ".")
		for i, id := range row.Unblocks {
			if i == feedListed {
				data.More = len(row.Unblocks) - feedListed
				fmt.Fprintf(&text, "\nand %d more.", data.More)
				break
			}
			data.Models = append(data.Models, model{ID: id, URL: base + modelPath(id)})
			text.WriteString("\n" + id)
		}
		fmt.Fprintf(&text, "\n\n%s", page)
		var h bytes.Buffer
		if err := kernelHTML.Execute(&h, data); err != nil {
			return nil, err
		}
		at := row.ReadAt.UTC().Format(time.RFC3339)
		items = append(items, feedItem{
			ID: base + "/runtimes#kernels-" + url.QueryEscape(row.Table), URL: page, Title: title,
			ContentText: text.String(), ContentHTML: h.String(), DatePublished: at,
			Tags:  []string{"runtime", "kernels", string(compat.TargetTPU)},
			about: watch.Item{Target: compat.TargetTPU, Kind: watch.KindRuntime},
		})
	}
	return items, nil
}
