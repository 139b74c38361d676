package api

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// OpsBody is /api/v1/ops.
type OpsBody struct {
	// Table is the kernel table the predictions were judged against ("" when
	// there is none).
	Table  string            `json:"table"`
	Caveat string            `json:"caveat"`
	Ops    []store.MissingOp `json:"ops"`
}

// Ops serves GET /api/v1/ops: every op some model needs and the kernel
// table lacks, most downloads blocked first; ?format=csv for CSV.
func (h *Handler) Ops(c *fiber.Ctx) error {
	ops, table, err := h.Data.FixList(c.UserContext(), c.Query("table"), c.Query("op"))
	if err != nil {
		return err
	}
	switch c.Query("format") {
	case "", "json":
		return c.JSON(OpsBody{Table: table, Caveat: show.PredictionCaveat, Ops: ops})
	case "csv":
		return sendOpsCSV(c, table, ops)
	}
	return fmt.Errorf("%w: format %q (want json or csv)", httpx.ErrBadRequest, c.Query("format"))
}

// OpsCSV serves GET /ops.csv.
func (h *Handler) OpsCSV(c *fiber.Ctx) error {
	ops, table, err := h.Data.FixList(c.UserContext(), c.Query("table"), c.Query("op"))
	if err != nil {
		return err
	}
	return sendOpsCSV(c, table, ops)
}

func sendOpsCSV(c *fiber.Ctx, table string, ops []store.MissingOp) error {
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="torchtpu-missing-ops.csv"`)
	var buf bytes.Buffer
	WriteCSVRow(&buf, []string{"op", "models", "downloads", "inference_models", "inference_downloads", "train_models",
		"train_downloads", "table", "model_ids"}, nil)
	numeric := map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true}
	for _, o := range ops {
		WriteCSVRow(&buf, []string{o.Op, strconv.Itoa(o.Models), strconv.FormatInt(o.Downloads, 10),
			strconv.Itoa(o.Inference.Models), strconv.FormatInt(o.Inference.Downloads, 10), strconv.Itoa(o.Train.Models),
			strconv.FormatInt(o.Train.Downloads, 10), table, strings.Join(o.ModelIDs, " ")}, numeric)
	}
	return c.Send(buf.Bytes())
}
