package pages

import (
	"fmt"
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// The TorchTPU prediction (issue 36): a result that did not run on a TPU
// carries tpu_ops, the ops its run traced judged against the runtime's
// kernel table. It is shown as a prediction, never as a TPU result; /ops
// ranks the ops it says TorchTPU lacks by the downloads they block.

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
		Missing: p.Missing, MissingTrain: p.MissingTrain, Unknown: p.Unknown, Caveat: show.PredictionCaveat}
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

// Ops serves GET /ops: the fix list, each op linking to its models.
func (h *Handler) Ops(c *fiber.Ctx) error {
	ops, table, err := h.Data.FixList(c.UserContext(), c.Query("table"), c.Query("op"))
	if err != nil {
		return err
	}
	v := opsView{Table: table, Caveat: show.PredictionCaveat, Op: c.Query("op")}
	v.Canonical = "/ops"
	for _, o := range ops {
		row := opRow{MissingOp: o, URL: "/ops?op=" + url.QueryEscape(o.Op), Models: o.ModelIDs}
		if v.Op == "" && len(row.Models) > opsExamples {
			row.More = len(row.Models) - opsExamples
			row.Models = row.Models[:opsExamples]
		}
		v.Ops = append(v.Ops, row)
	}
	return h.render(c, "ops", v)
}
