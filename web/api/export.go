package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// CSVColumns is the header of /export.csv.
var CSVColumns = []string{"id", "task", "library", "downloads", "likes", "gated", "status", "target", "stage",
	"failure_class", "op", "reason", "signature", "mode", "tokens_per_s", "forward_ms", "peak_mem_bytes",
	"tested_at", "revision", "torch", "torch_tpu", "transformers", "url"}

// CSVAllColumns are CSVColumns and then readiness's (readinessCSVColumns), the
// matrix's (issue 25) and the known issue's, each added last, so that no
// earlier column moves.
var CSVAllColumns = slices.Concat(CSVColumns, readinessCSVColumns, ModesCSVColumns, KnownCSVColumns, EvidenceCSVColumns,
	ServingCSVColumns, TrainEvidenceCSVColumns)

// ServingCSVColumns are the serving cell (issue 40): its one verdict
// (compat.ServingCell.Verdict: serving_served true or false, on the
// evidence serving_evidence, measured or declared), what the pinned
// release declares (its kind, its version, the command), and the newest
// measured serving probe (its status, reason when not judged, signature,
// the vllm-torchtpu version and runtime key it ran with, tokens per
// second, time to first token, load time, tokens agreed with the CPU
// reference, date). Empty where the cell or the measurement has no such
// field.
var ServingCSVColumns = []string{"serving_evidence", "serving_served", "serving_kind", "serving_version",
	"serving_command", "serving_status", "serving_reason", "serving_signature", "serving_vllm_torchtpu",
	"serving_runtime", "serving_tokens_per_s", "serving_ttft_s", "serving_load_s", "serving_agreed_tokens",
	"serving_measured_at"}

// servingCSV is m's servingCSVColumns.
func servingCSV(m compat.Model) []string {
	out := make([]string, len(ServingCSVColumns))
	c := m.Serving
	if c == nil {
		return out
	}
	pass, ev := c.Verdict()
	out[0], out[1], out[3], out[4] = ev, strconv.FormatBool(pass), c.Version, show.Deref(c.Command)
	if c.Kind != nil {
		out[2] = string(*c.Kind)
	}
	r := c.Measured
	if r == nil {
		return out
	}
	num := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'f', -1, 64)
	}
	out[5], out[6], out[7], out[8], out[9] = r.Status, show.Deref(r.Reason), show.Deref(r.Signature), show.Deref(r.Runtime.VLLMTorchTPU), r.Runtime.Key()
	out[10], out[11], out[12] = num(r.Metrics.TokensPerS), num(r.Metrics.TTFTS), num(r.Metrics.LoadS)
	if a := r.Metrics.AgreedTokens; a != nil {
		out[13] = strconv.Itoa(*a)
	}
	if !r.MeasuredAt.IsZero() {
		out[14] = r.MeasuredAt.UTC().Format(time.RFC3339)
	}
	return out
}

// EvidenceCSVColumns are what the row's verdict rests on
// (compat.EvidenceOf, issue 37): its tier (measured, predicted or none),
// and where, on what and when it was measured, or from what predicted.
var EvidenceCSVColumns = []string{"evidence", "evidence_target", "evidence_device", "evidence_device_count",
	"evidence_runtime", "evidence_at", "evidence_from"}

// TrainEvidenceCSVColumns are what the train verdict (train_status) rests
// on (compat.EvidenceOfMode, issue 37): EvidenceCSVColumns' fields for the
// run that measured the train step, none when it was not run or skipped.
// They come last: columns are only ever appended.
var TrainEvidenceCSVColumns = func() []string {
	out := make([]string, len(EvidenceCSVColumns))
	for i, c := range EvidenceCSVColumns {
		out[i] = "train_" + c
	}
	return out
}()

// evidenceCSV is m's evidenceCSVColumns: empty where the tier has no such field.
func evidenceCSV(m compat.Model) []string { return evidenceFields(compat.EvidenceOf(m.Result)) }

// trainEvidenceCSV is m's TrainEvidenceCSVColumns.
func trainEvidenceCSV(m compat.Model) []string {
	return evidenceFields(compat.EvidenceOfMode(m.Result, compat.ModeTrain))
}

// evidenceFields is e as EvidenceCSVColumns: empty where the tier has no such field.
func evidenceFields(e compat.Evidence) []string {
	count, at := "", ""
	if e.DeviceCount > 0 {
		count = strconv.Itoa(e.DeviceCount)
	}
	if e.At != nil {
		at = e.At.UTC().Format(time.RFC3339)
	}
	return []string{string(e.Kind), string(e.Target), e.Device, count, e.Runtime, at, e.From}
}

// KnownCSVColumns are the known issue of the result's signature
// (--known-issues): empty where it has none.
var KnownCSVColumns = []string{"known_issue", "known_issue_url", "known_issue_state"}

// knownCSV is m's knownCSVColumns.
func (h *Handler) knownCSV(m compat.Model) []string {
	var k *compat.KnownIssue
	if m.Result != nil {
		k = h.Known.Table().MatchPtr(m.Result.Signature)
	}
	if k == nil {
		return make([]string, len(KnownCSVColumns))
	}
	return []string{k.Title, k.URL, k.State}
}

// ModesCSVColumns are the train verdict and the compile stage's graph breaks.
var ModesCSVColumns = []string{"train_status", "train_stage", "train_signature", "train_step_ms", "graph_breaks"}

// modesCSV is m's modesCSVColumns: empty where there is no such figure.
func modesCSV(m compat.Model) []string {
	out := make([]string, len(ModesCSVColumns))
	if m.Result == nil {
		return out
	}
	if tr := m.Result.Train(); tr != nil {
		out[0], out[1], out[2] = string(tr.Status), show.Deref(tr.Stage), show.Deref(tr.Signature)
		if tr.Metrics.StepMS != nil {
			out[3] = strconv.FormatFloat(*tr.Metrics.StepMS, 'f', -1, 64)
		}
	}
	if g := m.Result.Metrics.GraphBreaks; g != nil {
		out[4] = strconv.FormatInt(*g, 10)
	}
	return out
}

// MaxExportRows bounds one export (the table is the most popular models).
const MaxExportRows = 100000

// ExportPage is how many models an export reads from the store at a time:
// an export holds one page, whatever the size of the table.
const ExportPage = 250

// ExportCSV serves GET /export.csv: the current table (same filters and
// sort as / and /api/v1/models, every page), safe to open in a spreadsheet.
// It is streamed a page at a time, so that its memory stays one page
// however many models it has. The first page is read before the answer
// starts, so that a refused query or a failing store answers with its
// status; a store failure later cuts the answer short (its chunked body
// never ends), which clients see as an error, and is logged.
func (h *Handler) ExportCSV(c *fiber.Ctx) error {
	q, err := httpx.ParseModelQuery(c)
	if err != nil {
		return err
	}
	q.Limit = ExportPage
	// The page is written after the handler returns, when the request's
	// context is no more; the export stops when the client goes away.
	ctx := context.WithoutCancel(c.UserContext())
	models, next, err := h.Data.Store.ExportModels(ctx, q)
	if err != nil {
		return fmt.Errorf("web: export: %w", err)
	}
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="torchtpu-compat-`+time.Now().UTC().Format("2006-01-02")+`.csv"`)
	pr, pw := io.Pipe()
	out := pacedWriter{w: pw, conn: c.Context().Conn(), timeout: c.App().Config().WriteTimeout}
	go func() {
		pw.CloseWithError(h.writeExport(ctx, out, q, models, next))
	}()
	c.Context().SetBodyStream(pr, -1) // chunked; fasthttp closes pr when done or gone
	return nil
}

// pacedWriter gives each write to the connection the server's write
// timeout anew: an export of any length is bounded per page rather than
// whole, and a client that stops reading still times out.
type pacedWriter struct {
	w       io.Writer
	conn    net.Conn
	timeout time.Duration
}

func (p pacedWriter) Write(b []byte) (int, error) {
	if p.conn != nil && p.timeout > 0 {
		if err := p.conn.SetWriteDeadline(time.Now().Add(p.timeout)); err != nil {
			return 0, err
		}
	}
	return p.w.Write(b)
}

// writeExport writes the CSV of q's list to w, from its first page
// (models, next) on, at most maxExportRows rows.
func (h *Handler) writeExport(ctx context.Context, w io.Writer, q store.ModelQuery, models []compat.Model, next string) error {
	var buf bytes.Buffer
	WriteCSVRow(&buf, CSVAllColumns, nil)
	reg, err := h.Data.ServingRegistry(ctx)
	if err != nil {
		return err
	}
	for rows := 0; ; {
		models = models[:min(len(models), MaxExportRows-rows)]
		page := make([]*compat.Model, len(models))
		for i := range models {
			models[i].Serving = data.ServingCell(reg, models[i])
			page[i] = &models[i]
		}
		if err := h.Data.WithMeasured(ctx, page...); err != nil { // one query per page
			h.log.Error("export cut short", "rows", rows, "err", err)
			return err
		}
		for _, m := range models {
			WriteCSVRow(&buf, slices.Concat(h.csvRecord(m), readinessCSV(m), modesCSV(m), h.knownCSV(m), evidenceCSV(m),
				servingCSV(m), trainEvidenceCSV(m)), csvNumeric)
		}
		rows += len(models)
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err // the client went away
		}
		buf.Reset()
		if next == "" || len(models) == 0 || rows >= MaxExportRows {
			return nil
		}
		q.Cursor = next
		if models, next, err = h.Data.Store.ExportModels(ctx, q); err != nil {
			h.log.Error("export cut short", "rows", rows, "err", err)
			return err
		}
	}
}

// csvNumeric marks the columns that hold numbers we formatted ourselves;
// only they may start with '-'.
var csvNumeric = func() map[int]bool {
	m := map[int]bool{}
	for i, c := range CSVAllColumns {
		switch c {
		case "downloads", "likes", "tokens_per_s", "forward_ms", "peak_mem_bytes", "params", "weights_bytes_bf16",
			"kv_bytes_per_token", "min_devices_v5e", "min_devices_v5p", "min_devices_v6e", "min_devices_v7x", "mfu", "mbu",
			"train_step_ms", "graph_breaks", "evidence_device_count", "train_evidence_device_count",
			"serving_tokens_per_s", "serving_ttft_s", "serving_load_s", "serving_agreed_tokens":
			m[i] = true
		}
	}
	return m
}()

// csvRecord is one model as a row of csvColumns.
func (h *Handler) csvRecord(m compat.Model) []string {
	r := m.Result
	if r == nil {
		r = &compat.Result{Status: compat.StatusUntested}
	}
	f := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'f', -1, 64)
	}
	mem := ""
	if r.Metrics.PeakMemBytes != nil {
		mem = strconv.FormatInt(*r.Metrics.PeakMemBytes, 10)
	}
	tested := ""
	if !r.TestedAt.IsZero() {
		tested = r.TestedAt.UTC().Format(time.RFC3339)
	}
	return []string{m.ID, m.Task, m.Library, strconv.FormatInt(m.Downloads, 10), strconv.FormatInt(m.Likes, 10),
		strconv.FormatBool(m.Gated), string(r.Status), string(r.Target), show.Deref(r.Stage), show.Deref(r.FailureClass),
		show.Deref(r.Op), show.Deref(r.Reason), show.Deref(r.Signature), show.Deref(r.Mode), f(r.Metrics.TokensPerS),
		f(r.Metrics.ForwardMS), mem, tested, r.Revision, r.Runtime.Torch, r.Runtime.TorchTPU,
		r.Runtime.Transformers, h.Hub.Model(m.ID)}
}

// WriteCSVRow writes one RFC 4180 row. A text cell that a spreadsheet
// would run as a formula (starting with =, +, -, @, tab or CR) is
// prefixed with ' and quoted (OWASP's CSV injection advice).
func WriteCSVRow(buf *bytes.Buffer, fields []string, numeric map[int]bool) {
	for i, f := range fields {
		if i > 0 {
			buf.WriteByte(',')
		}
		quote := false
		if f != "" && !numeric[i] && strings.ContainsRune("=+-@\t\r", rune(f[0])) {
			f = "'" + f
			quote = true
		}
		if strings.ContainsAny(f, "\",\r\n") || strings.HasPrefix(f, " ") || strings.HasSuffix(f, " ") {
			quote = true
		}
		if quote {
			buf.WriteByte('"')
			buf.WriteString(strings.ReplaceAll(f, `"`, `""`))
			buf.WriteByte('"')
		} else {
			buf.WriteString(f)
		}
	}
	buf.WriteString("\r\n")
}

// readinessCSVColumns are the CSV's readiness and efficiency columns, after
// the others.
var readinessCSVColumns = []string{"params", "params_source", "weights_bytes_bf16", "kv_bytes_per_token",
	"min_devices_v5e", "min_devices_v5p", "min_devices_v6e", "min_devices_v7x", "hints", "mfu", "mbu"}

// readinessCSV is a model's readiness and its result's MFU/MBU as cells of
// readinessCSVColumns; empty cells where not computed.
func readinessCSV(m compat.Model) []string {
	num := func(p *int64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatInt(*p, 10)
	}
	share := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'f', -1, 64)
	}
	out := make([]string, len(readinessCSVColumns))
	if r := m.Readiness; r != nil {
		out[0], out[2], out[3] = num(r.Params), num(r.WeightsBytesBF16), num(r.KVBytesPerToken)
		if r.ParamsSource != nil {
			out[1] = *r.ParamsSource
		}
		if r.MinDevices != nil {
			for i, g := range readiness.Generations {
				out[4+i] = strconv.Itoa(r.MinDevices[g.Name])
			}
		}
		var codes []string
		for _, h := range r.Hints {
			codes = append(codes, h.Code)
		}
		out[8] = strings.Join(codes, " ")
	}
	if m.Result != nil {
		out[9], out[10] = share(m.Result.Metrics.MFU), share(m.Result.Metrics.MBU)
	}
	return out
}
