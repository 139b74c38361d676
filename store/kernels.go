package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

const (
	sqlPutKernelTable = `INSERT INTO kernel_tables (torch, torch_tpu, read_at, native, default_ops, fallback, ops)
VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (torch, torch_tpu) DO NOTHING`
	sqlKernelTables = `SELECT torch, torch_tpu, read_at, ops FROM kernel_tables ORDER BY read_at, id`
	// sqlPredictions are the current predictions off tpu (judged, or only
	// traced while no kernel table is kept), each model's newest first (a
	// model may have one on cpu and on cuda).
	sqlPredictions = `SELECT c.model_id, c.downloads, r.tpu_ops, r.ops_trace FROM current c JOIN results r ON r.id = c.result_id
WHERE c.target <> 'tpu' AND (r.tpu_ops IS NOT NULL OR r.ops_trace IS NOT NULL)
ORDER BY c.model_id, c.tested_at DESC, r.id DESC`
)

// PutKernelTable keeps a runtime's TorchTPU kernel table, once per torch
// and torch_tpu versions: it reports whether this call stored it (false
// when the table of those versions was kept already). A table it stores
// moves the predictions: every kept trace is judged again against the
// newest table (results.tpu_ops; traces.go). The error wraps ErrInvalid
// for a table compat.KernelTable.Validate refuses.
func (s *SQLite) PutKernelTable(ctx context.Context, kt compat.KernelTable) (bool, error) {
	if err := kt.Validate(); err != nil {
		return false, fmt.Errorf("store: put kernel table: %w: %w", ErrInvalid, err)
	}
	ops, err := jsonText(kt.Ops)
	if err != nil {
		return false, fmt.Errorf("store: put kernel table: %w", err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("store: put kernel table: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, sqlPutKernelTable, kt.Torch, kt.TorchTPU, unixNano(kt.ReadAt),
		kt.Count(compat.OpNative), kt.Count(compat.OpDefault), kt.Count(compat.OpFallback), ops)
	if err != nil {
		return false, fmt.Errorf("store: put kernel table: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: put kernel table: %w", err)
	}
	if n == 0 {
		return false, nil
	}
	// The predictions follow the newest table: every kept trace is judged
	// against it (traces.go).
	newest, err := newestKernelTable(ctx, tx)
	if err != nil {
		return false, fmt.Errorf("store: put kernel table: %w", err)
	}
	if _, err := rejudge(ctx, tx, *newest); err != nil {
		return false, fmt.Errorf("store: put kernel table: %w", err)
	}
	if err := s.touch(ctx, tx); err != nil {
		return false, fmt.Errorf("store: put kernel table: %w", err)
	}
	if err := s.commit(tx); err != nil {
		return false, fmt.Errorf("store: put kernel table: %w", err)
	}
	return true, nil
}

// sqlKernelTableOf is the kept table of one torch and torch_tpu versions.
const sqlKernelTableOf = `SELECT torch, torch_tpu, read_at, ops FROM kernel_tables WHERE torch = ? AND torch_tpu = ?`

// KernelTableOf is the kept kernel table of the torch and torch_tpu
// versions, and false when none is kept: a runner of those versions need
// not read it again.
func (s *SQLite) KernelTableOf(ctx context.Context, torch, torchTPU string) (compat.KernelTable, bool, error) {
	kt, err := scanKernelTable(s.r.QueryRowContext(ctx, sqlKernelTableOf, torch, torchTPU))
	if errors.Is(err, sql.ErrNoRows) {
		return kt, false, nil
	}
	if err != nil {
		return kt, false, fmt.Errorf("store: kernel table of %s/%s: %w", torch, torchTPU, err)
	}
	return kt, true, nil
}

// scanKernelTable reads a row of torch, torch_tpu, read_at, ops.
func scanKernelTable(row interface{ Scan(dest ...any) error }) (compat.KernelTable, error) {
	var (
		kt   compat.KernelTable
		at   int64
		text string
	)
	if err := row.Scan(&kt.Torch, &kt.TorchTPU, &at, &text); err != nil {
		return kt, err
	}
	kt.ReadAt = fromNano(at)
	if err := json.Unmarshal([]byte(text), &kt.Ops); err != nil {
		return kt, fmt.Errorf("%s: %w", kt.Name(), err)
	}
	return kt, nil
}

// KernelTables lists the kept kernel tables, oldest read first; empty when
// none.
func (s *SQLite) KernelTables(ctx context.Context) ([]compat.KernelTable, error) {
	rows, err := s.r.QueryContext(ctx, sqlKernelTables)
	if err != nil {
		return nil, fmt.Errorf("store: kernel tables: %w", err)
	}
	defer rows.Close()
	out := []compat.KernelTable{}
	for rows.Next() {
		kt, err := scanKernelTable(rows)
		if err != nil {
			return nil, fmt.Errorf("store: kernel tables: %w", err)
		}
		out = append(out, kt)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: kernel tables: %w", err)
	}
	return out, nil
}

// OpNeed is how much of the Hub one op blocks: the models whose inference
// (forward, generate) or train step needs it.
type OpNeed struct {
	Models    int   `json:"models"`
	Downloads int64 `json:"downloads"`
}

// MissingOp is one op some models need and a kernel table lacks.
type MissingOp struct {
	Op string `json:"op"`
	// Models and Downloads count every model that needs it (inference or
	// train), each once; Inference and Train apart.
	Models    int    `json:"models"`
	Downloads int64  `json:"downloads"`
	Inference OpNeed `json:"inference"`
	Train     OpNeed `json:"train"`
	// ModelIDs are the models, most downloaded first.
	ModelIDs []string `json:"model_ids"`
}

// MissingOps is the fix list of the predictions judged against table ("" =
// the newest kept kernel table; without one, the table most predictions
// name): every op the models' current predictions (off tpu, each model's
// newest) say TorchTPU lacks, most downloads blocked first (then by op). A
// kept table judges every kept trace afresh (judgedPredictions), so that
// any kept table has its list. It returns the table it used ("" when there
// is no prediction at all).
func (s *SQLite) MissingOps(ctx context.Context, table string) ([]MissingOp, string, error) {
	preds, table, err := s.judgedPredictions(ctx, table)
	if err != nil {
		return nil, "", fmt.Errorf("store: missing ops: %w", err)
	}
	type acc struct {
		MissingOp
		downloads map[string]int64
	}
	byOp := map[string]*acc{}
	get := func(op string) *acc {
		a := byOp[op]
		if a == nil {
			a = &acc{MissingOp: MissingOp{Op: op}, downloads: map[string]int64{}}
			byOp[op] = a
		}
		return a
	}
	for _, pr := range preds {
		if pr.p.Table != table {
			continue
		}
		for _, op := range pr.p.Missing {
			a := get(op)
			a.Inference.Models++
			a.Inference.Downloads += pr.downloads
			a.downloads[pr.id] = pr.downloads
		}
		for _, op := range pr.p.MissingTrain {
			a := get(op)
			a.Train.Models++
			a.Train.Downloads += pr.downloads
			a.downloads[pr.id] = pr.downloads
		}
	}
	out := make([]MissingOp, 0, len(byOp))
	for _, a := range byOp {
		m := a.MissingOp
		for id, d := range a.downloads {
			m.Models++
			m.Downloads += d
			m.ModelIDs = append(m.ModelIDs, id)
		}
		sort.Slice(m.ModelIDs, func(i, j int) bool {
			di, dj := a.downloads[m.ModelIDs[i]], a.downloads[m.ModelIDs[j]]
			if di != dj {
				return di > dj
			}
			return m.ModelIDs[i] < m.ModelIDs[j]
		})
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Downloads != out[j].Downloads {
			return out[i].Downloads > out[j].Downloads
		}
		return out[i].Op < out[j].Op
	})
	return out, table, nil
}

// prediction is one model's newest prediction off tpu.
type prediction struct {
	id        string
	downloads int64
	p         compat.TPUOps
	judged    bool          // p was stored (a table was kept when it was)
	trace     sql.NullInt64 // its kept trace (op_traces)
}

// judgedPredictions are the current predictions judged against table (a
// kept table's name; "" = the newest kept one): a prediction with a kept
// trace is judged afresh, one without (stored before 0018) keeps what it
// listed less what the table implements (judgedAgainst). Without a kept
// table of that name, the stored predictions stand, and "" names the table
// most of them name. It returns the table used.
func (s *SQLite) judgedPredictions(ctx context.Context, table string) ([]prediction, string, error) {
	kts, err := s.KernelTables(ctx)
	if err != nil {
		return nil, "", err
	}
	var kt *compat.KernelTable
	for i := range kts {
		if table == "" && i == len(kts)-1 || kts[i].Name() == table {
			kt = &kts[i]
		}
	}
	preds, err := s.currentPredictions(ctx)
	if err != nil {
		return nil, "", err
	}
	if kt == nil {
		judged := preds[:0]
		for _, pr := range preds {
			if pr.judged {
				judged = append(judged, pr)
			}
		}
		if table == "" {
			table = predictionsTable(judged)
		}
		return judged, table, nil
	}
	traces, err := readTraces(ctx, s.r, sqlCurrentTraces)
	if err != nil {
		return nil, "", err
	}
	byTrace := map[int64]compat.TPUOps{}
	for i, pr := range preds {
		if tr, ok := traces[pr.trace.Int64]; ok && pr.trace.Valid {
			p, done := byTrace[pr.trace.Int64]
			if !done {
				p = judgedAgainst(*kt, pr.p, &tr)
				byTrace[pr.trace.Int64] = p
			}
			preds[i].p, preds[i].judged = p, true
		} else if pr.judged {
			preds[i].p = judgedAgainst(*kt, pr.p, nil)
		}
	}
	return preds, kt.Name(), nil
}

// currentPredictions reads each model's newest prediction off tpu, in
// model order.
func (s *SQLite) currentPredictions(ctx context.Context) ([]prediction, error) {
	rows, err := s.r.QueryContext(ctx, sqlPredictions)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var preds []prediction
	last := ""
	for rows.Next() {
		var (
			pr   prediction
			text sql.NullString
		)
		if err := rows.Scan(&pr.id, &pr.downloads, &text, &pr.trace); err != nil {
			return nil, err
		}
		if pr.id == last {
			continue // an older prediction of the same model (another target)
		}
		last = pr.id
		if pr.judged = text.Valid; pr.judged {
			if err := json.Unmarshal([]byte(text.String), &pr.p); err != nil {
				return nil, fmt.Errorf("%s: %w", pr.id, err)
			}
		}
		preds = append(preds, pr)
	}
	return preds, rows.Err()
}

// predictionsTable is the table most of preds name (commonTable).
func predictionsTable(preds []prediction) string {
	return commonTable(func(yield func(string) bool) {
		for _, p := range preds {
			if !yield(p.p.Table) {
				return
			}
		}
	})
}

// commonTable is the table most predictions name (the first in name order
// on a tie), "" for none.
func commonTable(tables func(yield func(string) bool)) string {
	n := map[string]int{}
	for t := range tables {
		n[t]++
	}
	best := ""
	for t, c := range n {
		if best == "" || c > n[best] || (c == n[best] && t < best) {
			best = t
		}
	}
	return best
}

// sqlPredictionPairs are, per model, its current tpu result's verdict
// beside its current predictions off tpu (newest first).
const sqlPredictionPairs = `SELECT t.model_id, t.status, rt.failure_class, rt.op, r.tpu_ops
FROM current t JOIN results rt ON rt.id = t.result_id
JOIN current o ON o.model_id = t.model_id AND o.target <> 'tpu'
JOIN results r ON r.id = o.result_id
WHERE t.target = 'tpu' AND r.tpu_ops IS NOT NULL
ORDER BY t.model_id, o.tested_at DESC, r.id DESC`

// PredictionScore is how the predictions (Result.TPUOps) held against the
// tpu results of the same models (compat.TPUOps.Agrees): Compared models
// with a tpu result a prediction can speak of, Agreed of them where it held;
// OpFailures the tpu failures on a missing op, Predicted of them the
// prediction listed.
type PredictionScore struct {
	Compared   int `json:"compared"`
	Agreed     int `json:"agreed"`
	OpFailures int `json:"op_failures"`
	Predicted  int `json:"predicted"`
}

// PredictionHits scores each model's newest prediction off tpu against its
// current tpu result.
func (s *SQLite) PredictionHits(ctx context.Context) (PredictionScore, error) {
	var sc PredictionScore
	rows, err := s.r.QueryContext(ctx, sqlPredictionPairs)
	if err != nil {
		return sc, fmt.Errorf("store: prediction hits: %w", err)
	}
	defer rows.Close()
	last := ""
	for rows.Next() {
		var (
			id, status string
			class, op  sql.NullString
			text       string
		)
		if err := rows.Scan(&id, &status, &class, &op, &text); err != nil {
			return sc, fmt.Errorf("store: prediction hits: %w", err)
		}
		if id == last {
			continue
		}
		last = id
		var p compat.TPUOps
		if err := json.Unmarshal([]byte(text), &p); err != nil {
			return sc, fmt.Errorf("store: prediction hits: %s: %w", id, err)
		}
		tpu := compat.Result{Target: compat.TargetTPU, Status: compat.Status(status),
			FailureClass: fromNullStr[compat.FailureClass](class), Op: fromNullStr[string](op)}
		counted, agreed := p.Agrees(tpu)
		if !counted {
			continue
		}
		sc.Compared++
		if agreed {
			sc.Agreed++
		}
		if tpu.Status == compat.StatusFail {
			sc.OpFailures++
			if agreed {
				sc.Predicted++
			}
		}
	}
	if err := rows.Err(); err != nil {
		return sc, fmt.Errorf("store: prediction hits: %w", err)
	}
	return sc, nil
}

// Predicted is what the current TorchTPU predictions say in sum (the
// headline's predicted figures): of the Models whose newest prediction off
// tpu is judged against Table, Covered need no operator the table lacks
// for inference (forward, generate); Downloads and CoveredDownloads the
// same weighted by downloads. Table is "" when no model has a prediction.
type Predicted struct {
	Table            string `json:"table"`
	Models           int    `json:"models"`
	Covered          int    `json:"covered"`
	Downloads        int64  `json:"downloads"`
	CoveredDownloads int64  `json:"covered_downloads"`
}

// PredictedTally sums each model's newest prediction off tpu, judged
// against the newest kept kernel table (without one, the table most
// predictions name), as MissingOps judges them.
func (s *SQLite) PredictedTally(ctx context.Context) (Predicted, error) {
	preds, table, err := s.judgedPredictions(ctx, "")
	if err != nil {
		return Predicted{}, fmt.Errorf("store: predicted tally: %w", err)
	}
	out := Predicted{Table: table}
	for _, pr := range preds {
		if !pr.judged || pr.p.Table != out.Table {
			continue
		}
		out.Models++
		out.Downloads += pr.downloads
		if len(pr.p.Missing) == 0 {
			out.Covered++
			out.CoveredDownloads += pr.downloads
		}
	}
	return out, nil
}
