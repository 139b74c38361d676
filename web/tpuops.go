package web

import (
	"bytes"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
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

// apiOps serves GET /api/v1/ops: every op some model needs and the kernel
// table lacks, most downloads blocked first; ?format=csv for CSV.
func (s *Server) apiOps(c *fiber.Ctx) error {
	ops, table, err := s.data.FixList(c.UserContext(), c.Query("table"), c.Query("op"))
	if err != nil {
		return err
	}
	switch c.Query("format") {
	case "", "json":
		return c.JSON(opsBody{Table: table, Caveat: predictionCaveat, Ops: ops})
	case "csv":
		return sendOpsCSV(c, table, ops)
	}
	return fmt.Errorf("%w: format %q (want json or csv)", httpx.ErrBadRequest, c.Query("format"))
}

// opsCSV serves GET /ops.csv.
func (s *Server) opsCSV(c *fiber.Ctx) error {
	ops, table, err := s.data.FixList(c.UserContext(), c.Query("table"), c.Query("op"))
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
	ops, table, err := s.data.FixList(c.UserContext(), c.Query("table"), c.Query("op"))
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
