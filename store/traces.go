package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
)

// The traces of the TorchTPU prediction (issue 36, migration 0018): each
// result off tpu keeps the ops its run traced (op_traces, once per distinct
// trace), so that a prediction follows the newest kernel table instead of
// the one of the host that probed it. A result's tpu_ops is judged
// (harness.OpsTable.Judge, the one rule) against the newest kept table when
// the result arrives and again when a newer table arrives (rejudge); the
// fix list judges the traces against whichever kept table it is asked for.

const (
	sqlPutTrace   = `INSERT INTO op_traces (digest, trace) VALUES (?, ?) ON CONFLICT (digest) DO NOTHING`
	sqlTraceID    = `SELECT id FROM op_traces WHERE digest = ?`
	sqlNewestKern = `SELECT torch, torch_tpu, read_at, ops FROM kernel_tables ORDER BY read_at DESC, id DESC LIMIT 1`
	// sqlTracesInUse are the traces some result off tpu holds.
	sqlTracesInUse = `SELECT t.id, t.trace FROM op_traces t
WHERE t.id IN (SELECT ops_trace FROM results WHERE ops_trace IS NOT NULL AND target <> 'tpu')`
	sqlSetPrediction = `UPDATE results SET tpu_ops = ? WHERE ops_trace = ? AND target <> 'tpu'`
	// sqlCurrentTraces are the traces of the current results off tpu.
	sqlCurrentTraces = `SELECT t.id, t.trace FROM op_traces t WHERE t.id IN (
	SELECT r.ops_trace FROM current c JOIN results r ON r.id = c.result_id
	WHERE c.target <> 'tpu' AND r.ops_trace IS NOT NULL)`
)

// judge is the prediction of a trace against a kernel table.
func judge(kt compat.KernelTable, tr compat.OpsTrace) compat.TPUOps {
	return harness.TPUOpsTable.Judge(kt, tr)
}

// storedTrace is the trace as kept: its op lists sorted and without
// duplicates, without the notes (a note is about one run, not about the
// ops), so that runs that traced the same ops share one row.
func storedTrace(tr compat.OpsTrace) compat.OpsTrace {
	norm := func(ops []string) []string {
		out := slices.Clone(ops)
		slices.Sort(out)
		return slices.Compact(out)
	}
	forward := norm(tr.Forward)
	if forward == nil {
		forward = []string{}
	}
	return compat.OpsTrace{Forward: forward, Generate: norm(tr.Generate), Train: norm(tr.Train)}
}

// putTrace keeps tr (once per distinct trace) and returns its id.
func putTrace(ctx context.Context, tx *sql.Tx, tr compat.OpsTrace) (int64, error) {
	text, err := jsonText(storedTrace(tr))
	if err != nil {
		return 0, err
	}
	sum := sha256.Sum256([]byte(text))
	digest := hex.EncodeToString(sum[:])
	if _, err := tx.ExecContext(ctx, sqlPutTrace, digest, text); err != nil {
		return 0, fmt.Errorf("put trace: %w", err)
	}
	var id int64
	if err := tx.QueryRowContext(ctx, sqlTraceID, digest).Scan(&id); err != nil {
		return 0, fmt.Errorf("put trace: %w", err)
	}
	return id, nil
}

// newestKernelTable is the kept kernel table read last; nil when none is
// kept.
func newestKernelTable(ctx context.Context, q querier) (*compat.KernelTable, error) {
	kt, err := scanKernelTable(q.QueryRowContext(ctx, sqlNewestKern))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("newest kernel table: %w", err)
	}
	return &kt, nil
}

// readTraces reads the traces a query lists (id, trace).
func readTraces(ctx context.Context, q querier, query string) (map[int64]compat.OpsTrace, error) {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	defer rows.Close()
	out := map[int64]compat.OpsTrace{}
	for rows.Next() {
		var (
			id   int64
			text string
			tr   compat.OpsTrace
		)
		if err := rows.Scan(&id, &text); err != nil {
			return nil, fmt.Errorf("traces: %w", err)
		}
		if err := json.Unmarshal([]byte(text), &tr); err != nil {
			return nil, fmt.Errorf("trace %d: %w", id, err)
		}
		out[id] = tr
	}
	return out, rows.Err()
}

// rejudge judges every kept trace of a result off tpu against kt and
// writes the prediction into those results (results.tpu_ops): the
// predictions follow the newest table. It returns how many traces it
// judged.
func rejudge(ctx context.Context, tx *sql.Tx, kt compat.KernelTable) (int, error) {
	traces, err := readTraces(ctx, tx, sqlTracesInUse)
	if err != nil {
		return 0, fmt.Errorf("rejudge: %w", err)
	}
	for id, tr := range traces {
		p := judge(kt, tr)
		text, err := jsonText(&p)
		if err != nil {
			return 0, fmt.Errorf("rejudge: %w", err)
		}
		if _, err := tx.ExecContext(ctx, sqlSetPrediction, text, id); err != nil {
			return 0, fmt.Errorf("rejudge: %w", err)
		}
	}
	return len(traces), nil
}

// judgedAgainst is a stored prediction judged against another kernel
// table kt: the trace's, judged afresh, when the result kept one; else
// (a result stored before 0018) the ops it listed missing that kt does
// not implement, which is all that can be said of it.
func judgedAgainst(kt compat.KernelTable, p compat.TPUOps, tr *compat.OpsTrace) compat.TPUOps {
	if tr != nil {
		return judge(kt, *tr)
	}
	if p.Table == kt.Name() {
		return p
	}
	keep := func(ops []string) []string {
		out := []string{}
		for _, op := range ops {
			if !kt.Implements(op) {
				out = append(out, op)
			}
		}
		return out
	}
	p.Table, p.Missing, p.MissingTrain = kt.Name(), keep(p.Missing), keep(p.MissingTrain)
	return p
}
