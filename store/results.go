package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// querier is what *sql.DB, *sql.Conn and *sql.Tx have in common, for
// helpers that read either inside or outside a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// resolveModel returns the id of the model known as id (its id, an alias,
// or its id in another case); the error wraps ErrNotFound if none.
func resolveModel(ctx context.Context, q querier, id string) (string, error) {
	var got string
	err := q.QueryRowContext(ctx, sqlResolveModel, id).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("model %q: %w", id, ErrNotFound)
	}
	return got, err
}

// validResult checks a result as compat.Result.Validate does (the one
// rule; its errors name the field), as ErrInvalid.
func validResult(r compat.Result) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("%w: result %w", ErrInvalid, err)
	}
	return nil
}

// RecordResult stores r as a result of the model modelID (an id or an
// alias; the error wraps ErrNotFound for an unknown model, ErrInvalid for a
// result without a concrete target, a recordable status or a tested_at).
//
// In one transaction it inserts the result, makes it the model's current
// result on its target (and on "any target") unless that one is newer, and,
// when that changes what is known of the model on the target
// (compat.VerdictChange: an error, the scanner's own, never does, and a
// result after one is compared with the status before it), writes an event.
// A result older than the current one (recorded out of order) is kept as
// history only.
//
// Recording the same probe twice (same model, target, revision, runtime key
// and scan; or, outside a scan, the same tested_at) writes nothing and
// reports Duplicate with the first row's id.
func (s *SQLite) RecordResult(ctx context.Context, modelID string, r compat.Result) (RecordOutcome, error) {
	outs, err := s.recordResults(ctx, []Record{{ModelID: modelID, Result: r}})
	if err != nil {
		return RecordOutcome{}, fmt.Errorf("store: record result: %w", err)
	}
	return outs[0], nil
}

// RecordResults records many results in one transaction, each as
// RecordResult would, in order: all or none are stored. It is for imports
// and for seeding tests and benchmarks (a scan records as it goes); it
// writes each model's current row once, however many results it has.
func (s *SQLite) RecordResults(ctx context.Context, recs []Record) ([]RecordOutcome, error) {
	outs, err := s.recordResults(ctx, recs)
	if err != nil {
		return nil, fmt.Errorf("store: record results: %w", err)
	}
	return outs, nil
}

func (s *SQLite) recordResults(ctx context.Context, recs []Record) ([]RecordOutcome, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	rc := newRecorder(tx)
	outs := make([]RecordOutcome, 0, len(recs))
	wrote := false
	for i, rec := range recs {
		out, err := rc.record(ctx, rec.ModelID, rec.Result)
		if err != nil {
			if len(recs) > 1 {
				return nil, fmt.Errorf("#%d: %w", i, err)
			}
			return nil, err
		}
		wrote = wrote || !out.Duplicate
		outs = append(outs, out)
	}
	if !wrote {
		return outs, nil // duplicates only: nothing changed
	}
	if err := rc.flush(ctx); err != nil {
		return nil, err
	}
	if err := s.touch(ctx, tx); err != nil {
		return nil, err
	}
	if err := s.commit(tx); err != nil {
		return nil, err
	}
	return outs, nil
}

// recorder records results inside one transaction. It holds the current
// rows it reads and moves in memory and writes each once, in flush.
type recorder struct {
	tx      *sql.Tx
	ids     map[string]string // id as asked → the model's id
	current map[curKey]*curRow
	order   []curKey // first-touched order, for flush
	tallies *tallier // the touched models' states before, for the tallies
	// kernels is the newest kept kernel table, read at the first result
	// with a trace (kernelsRead); nil when none is kept.
	kernels     *compat.KernelTable
	kernelsRead bool
}

type curKey struct {
	model  string
	target compat.Target
}

// curRow is a model's current result on a target; id 0 is untested.
type curRow struct {
	shown
	dirty bool
}

// shown is what a current row copies from its result.
type shown struct {
	id        int64
	status    compat.Status
	tested    int64
	tokens    *float64
	signature *string
	class     *compat.FailureClass
	op        *string
}

func shownOf(id int64, r compat.Result) shown {
	return shown{id: id, status: r.Status, tested: unixNano(r.TestedAt), tokens: r.Metrics.TokensPerS,
		signature: r.Signature, class: r.FailureClass, op: r.Op}
}

// failKey groups a result held against its model by root cause: its
// signature, else its failure class, else the class its status implies.
// It is NULL for other statuses.
func (sh shown) failKey() sql.NullString {
	switch {
	case !sh.status.HeldAgainstModel():
		return sql.NullString{}
	case sh.signature != nil:
		return sql.NullString{String: *sh.signature, Valid: true}
	case sh.class != nil:
		return sql.NullString{String: string(*sh.class), Valid: true}
	}
	return sql.NullString{String: string(classOfStatus(sh.status)), Valid: true}
}

func newRecorder(tx *sql.Tx) *recorder {
	return &recorder{tx: tx, ids: map[string]string{}, current: map[curKey]*curRow{}, tallies: newTallier()}
}

// record is RecordResult inside the recorder's transaction. The result's
// free text is cleaned here, where it enters the store (compat.Result.Clean:
// no terminal escapes, control characters or oversized text reach a page,
// the feed or the CSV), and the result is validated.
func (rc *recorder) record(ctx context.Context, modelID string, r compat.Result) (RecordOutcome, error) {
	r = r.Clean()
	if err := validResult(r); err != nil {
		return RecordOutcome{}, err
	}
	id, ok := rc.ids[modelID]
	if !ok {
		var err error
		if id, err = resolveModel(ctx, rc.tx, modelID); err != nil {
			return RecordOutcome{}, err
		}
		rc.ids[modelID] = id
	}
	if err := rc.tallies.begin(ctx, rc.tx, id, nil); err != nil {
		return RecordOutcome{}, err
	}
	traceID, err := rc.trace(ctx, &r)
	if err != nil {
		return RecordOutcome{}, err
	}
	resultID, err := insertResult(ctx, rc.tx, id, r, traceID)
	if errors.Is(err, errDuplicate) {
		return RecordOutcome{ResultID: resultID, Duplicate: true}, nil
	}
	if err != nil {
		return RecordOutcome{}, err
	}
	out := RecordOutcome{ResultID: resultID}
	if err := recordRuntime(ctx, rc.tx, id, resultID, r); err != nil {
		return RecordOutcome{}, err
	}
	rc.tallies.newRuns = true

	prev, moved, err := rc.advance(ctx, id, r.Target, resultID, r)
	if err != nil {
		return RecordOutcome{}, err
	}
	if _, _, err := rc.advance(ctx, id, "", resultID, r); err != nil {
		return RecordOutcome{}, err
	}
	if !moved {
		return out, nil
	}
	if out.TrainEvent, err = trainEvent(ctx, rc.tx, id, resultID, r); err != nil {
		return RecordOutcome{}, err
	}
	last := prev
	if prev == compat.StatusError && r.Status != compat.StatusError {
		// an error says nothing of the model: compare with the status before it
		if last, err = lastVerdict(ctx, rc.tx, id, r.Target, resultID, r.TestedAt); err != nil {
			return RecordOutcome{}, err
		}
	}
	kind, changed := compat.VerdictChange(last, r.Status)
	if !changed {
		return out, nil
	}
	ev := compat.Event{
		ModelID:    id,
		Target:     r.Target,
		Kind:       kind,
		FromStatus: last,
		ToStatus:   r.Status,
		Revision:   r.Revision,
		Runtime:    r.Runtime,
		Signature:  r.Signature,
		Message:    r.Message,
		At:         r.TestedAt.UTC(),
	}
	if ev.ID, ev.Epoch, err = insertEvent(ctx, rc.tx, ev, &resultID); err != nil {
		return RecordOutcome{}, err
	}
	out.Event = &ev
	return out, nil
}

// trainEvent writes the train verdict's regression or fix of result
// resultID, the model's newest on its target, against the newest earlier
// train verdict (compat.TrainChange); nil when there is none.
func trainEvent(ctx context.Context, tx *sql.Tx, modelID string, resultID int64, r compat.Result) (*compat.Event, error) {
	tr := r.Train()
	if tr == nil || tr.Status == compat.StatusError {
		return nil, nil
	}
	var last string
	err := tx.QueryRowContext(ctx, sqlLastTrain, modelID, string(r.Target), unixNano(r.TestedAt), resultID).Scan(&last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("last train verdict: %w", err)
	}
	kind, changed := compat.TrainChange(compat.Status(last), tr.Status)
	if !changed {
		return nil, nil
	}
	ev := compat.Event{ModelID: modelID, Target: r.Target, Kind: kind, FromStatus: compat.Status(last), ToStatus: tr.Status,
		Revision: r.Revision, Runtime: r.Runtime, Signature: tr.Signature, Message: tr.Message, At: r.TestedAt.UTC()}
	if tr.Stage != nil && tr.Status != compat.StatusPass {
		ev.Stage = compat.Ptr(compat.Stage(*tr.Stage))
	}
	if ev.ID, ev.Epoch, err = insertEvent(ctx, tx, ev, &resultID); err != nil {
		return nil, err
	}
	return &ev, nil
}

// lastVerdict is the status of the model's newest result on target before
// result resultID (tested at `at`) that is not an error; "" if none.
func lastVerdict(ctx context.Context, tx *sql.Tx, modelID string, target compat.Target, resultID int64, at time.Time) (compat.Status, error) {
	var st string
	err := tx.QueryRowContext(ctx, sqlLastVerdict, modelID, string(target), unixNano(at), resultID).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("last verdict: %w", err)
	}
	return compat.Status(st), nil
}

// advance makes result resultID (r) the model's current one on target
// unless the current one is newer (by tested_at, then id). It returns the
// status shown before ("" if untested) and whether it moved.
func (rc *recorder) advance(ctx context.Context, modelID string, target compat.Target, resultID int64, r compat.Result) (compat.Status, bool, error) {
	k := curKey{modelID, target}
	cur, ok := rc.current[k]
	if !ok {
		cur = &curRow{}
		var (
			id     sql.NullInt64
			status sql.NullString
		)
		err := rc.tx.QueryRowContext(ctx, sqlGetCurrent, string(target), modelID).Scan(&id, &status, &cur.tested)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return "", false, fmt.Errorf("current: %w", err)
		}
		cur.id, cur.status = id.Int64, compat.Status(status.String)
		rc.current[k] = cur
		rc.order = append(rc.order, k)
	}
	prev := cur.status
	tested := unixNano(r.TestedAt)
	if cur.id != 0 && (tested < cur.tested || (tested == cur.tested && resultID < cur.id)) {
		return prev, false, nil
	}
	*cur = curRow{shown: shownOf(resultID, r), dirty: true}
	return prev, true, nil
}

// flush writes the current rows that moved, and the tallies' change.
func (rc *recorder) flush(ctx context.Context) error {
	for _, k := range rc.order {
		cur := rc.current[k]
		if !cur.dirty {
			continue
		}
		if err := setCurrent(ctx, rc.tx, k.model, k.target, cur.shown); err != nil {
			return err
		}
		cur.dirty = false
	}
	if err := rc.tallies.endAll(ctx, rc.tx); err != nil {
		return err
	}
	return rc.tallies.flush(ctx, rc.tx)
}

// trace keeps the ops a result off tpu traced (traces.go) and judges them
// against the newest kept kernel table into r.TPUOps (the runner's
// judgement, against its own host's table, stands when none is kept). It
// returns the trace's id, NULL without one.
func (rc *recorder) trace(ctx context.Context, r *compat.Result) (sql.NullInt64, error) {
	if r.OpsTraced == nil || r.Target == compat.TargetTPU {
		return sql.NullInt64{}, nil
	}
	if !rc.kernelsRead {
		kt, err := newestKernelTable(ctx, rc.tx)
		if err != nil {
			return sql.NullInt64{}, err
		}
		rc.kernels, rc.kernelsRead = kt, true
	}
	if rc.kernels != nil {
		p := judge(*rc.kernels, *r.OpsTraced)
		r.TPUOps = &p
	}
	id, err := putTrace(ctx, rc.tx, *r.OpsTraced)
	if err != nil {
		return sql.NullInt64{}, err
	}
	return sql.NullInt64{Int64: id, Valid: true}, nil
}

// errDuplicate says insertResult found the probe already recorded.
var errDuplicate = errors.New("duplicate result")

// insertResult inserts r and returns its id, or the earlier row's id and
// errDuplicate.
func insertResult(ctx context.Context, tx *sql.Tx, modelID string, r compat.Result, traceID sql.NullInt64) (int64, error) {
	runtimeJSON, err := jsonText(r.Runtime)
	if err != nil {
		return 0, err
	}
	metricsJSON, err := jsonText(r.Metrics)
	if err != nil {
		return 0, err
	}
	var stages sql.NullString
	if len(r.Stages) > 0 {
		if stages.String, err = jsonText(r.Stages); err != nil {
			return 0, err
		}
		stages.Valid = true
	}
	var continuation sql.NullString
	if r.Continuation != nil {
		if continuation.String, err = jsonText(r.Continuation); err != nil {
			return 0, err
		}
		continuation.Valid = true
	}
	var modes, trainStatus sql.NullString
	if len(r.Modes) > 0 {
		if modes.String, err = jsonText(r.Modes); err != nil {
			return 0, err
		}
		modes.Valid = true
	}
	if tr := r.Train(); tr != nil {
		trainStatus = sql.NullString{String: string(tr.Status), Valid: true}
	}
	var tpuOps sql.NullString
	if r.TPUOps != nil {
		stored := *r.TPUOps
		stored.Evidence = nil // the web layer's, never kept
		if tpuOps.String, err = jsonText(&stored); err != nil {
			return 0, err
		}
		tpuOps.Valid = true
	}
	var scanID sql.NullInt64
	if r.ScanID != nil {
		scanID = sql.NullInt64{Int64: *r.ScanID, Valid: true}
	}
	key := r.Runtime.RetestKey()
	var id int64
	err = tx.QueryRowContext(ctx, sqlInsertResult,
		modelID, scanID, string(r.Target), string(r.Status), nullStr(r.Stage), nullStr(r.FailureClass),
		nullStr(r.Op), nullStr(r.Reason), nullStr(r.Signature), nullStr(r.Message), nullStr(r.Mode),
		r.Revision, unixNano(r.TestedAt), r.DurationS, runtimeJSON, key,
		r.Runtime.Torch, r.Runtime.TorchTPU, r.Runtime.Transformers, r.Runtime.Harness,
		metricsJSON, nullFloat(r.Metrics.TokensPerS), stages, r.Task, r.Repro, continuation, r.Worker,
		nullTimePtr(r.WorkerTestedAt),
		max(r.DevicesUsed, 1), nullStr(r.Sharding),
		modes, trainStatus, r.PrecisionSensitive, tpuOps, traceID,
	).Scan(&id)
	if err == nil {
		if r.LogTail != "" {
			if _, err := tx.ExecContext(ctx, sqlInsertLog, id, r.LogTail); err != nil {
				return 0, fmt.Errorf("insert log tail: %w", err)
			}
		}
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("insert result: %w", err)
	}
	// ON CONFLICT DO NOTHING returned no row: find the earlier one.
	if scanID.Valid {
		err = tx.QueryRowContext(ctx, sqlDuplicateInScan, modelID, string(r.Target), r.Revision, key, scanID).Scan(&id)
	} else {
		err = tx.QueryRowContext(ctx, sqlDuplicateUnscanned, modelID, string(r.Target), r.Revision, key, unixNano(r.TestedAt)).Scan(&id)
	}
	if err != nil {
		return 0, fmt.Errorf("find duplicate result: %w", err)
	}
	return id, errDuplicate
}

// setCurrent points the model's row on target at a result.
func setCurrent(ctx context.Context, tx *sql.Tx, modelID string, target compat.Target, sh shown) error {
	noTokens, tps := 1, 0.0
	if sh.tokens != nil {
		noTokens, tps = 0, *sh.tokens
	}
	if _, err := tx.ExecContext(ctx, sqlSetCurrent, string(target), modelID, sh.id, string(sh.status),
		statusRank(sh.status), sh.tested, noTokens, tps, sh.failKey(), nullStr(sh.class), nullStr(sh.op)); err != nil {
		return fmt.Errorf("set current: %w", err)
	}
	return nil
}

// statusRank is a status's place in compat.Statuses, the site's order;
// current.status_rank holds it. The schema's default (a row without a
// result) is untested's rank; TestUntestedRankIsTheSchemaDefault holds the
// two in step.
func statusRank(s compat.Status) int {
	if i := slices.Index(compat.Statuses, s); i >= 0 {
		return i
	}
	return len(compat.Statuses)
}

// insertEvent writes ev and returns its id and the epoch it was written in.
func insertEvent(ctx context.Context, tx *sql.Tx, ev compat.Event, resultID *int64) (id int64, epoch string, err error) {
	runtimeJSON, err := jsonText(ev.Runtime)
	if err != nil {
		return 0, "", err
	}
	var rid sql.NullInt64
	if resultID != nil {
		rid = sql.NullInt64{Int64: *resultID, Valid: true}
	}
	if err := tx.QueryRowContext(ctx, sqlInsertEvent, ev.ModelID, rid, string(ev.Target), string(ev.Kind),
		string(ev.FromStatus), string(ev.ToStatus), ev.Revision, runtimeJSON,
		nullStr(ev.Signature), nullStr(ev.Message), unixNano(ev.At), nullStr(ev.Stage)).Scan(&id, &epoch); err != nil {
		return 0, "", fmt.Errorf("insert event: %w", err)
	}
	return id, epoch, nil
}

// RecordFlaky writes an event of kind flaky: the model showed seen.Status
// once, a rerun did not confirm it and kept stays the status shown. The
// current result is not changed and seen is not stored as a result. The
// error wraps ErrNotFound for an unknown model.
func (s *SQLite) RecordFlaky(ctx context.Context, modelID string, seen compat.Result, kept compat.Status) error {
	if !slices.Contains(compat.Targets, seen.Target) || !seen.Status.Valid() {
		return fmt.Errorf("store: record flaky: %w: target %q, status %q", ErrInvalid, seen.Target, seen.Status)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: record flaky: %w", err)
	}
	defer tx.Rollback()
	if err := s.recordFlaky(ctx, tx, modelID, seen, kept); err != nil {
		return fmt.Errorf("store: record flaky: %w", err)
	}
	if err := s.touch(ctx, tx); err != nil {
		return fmt.Errorf("store: record flaky: %w", err)
	}
	if err := s.commit(tx); err != nil {
		return fmt.Errorf("store: record flaky: %w", err)
	}
	return nil
}

// recordFlaky writes RecordFlaky's event inside tx.
func (s *SQLite) recordFlaky(ctx context.Context, tx *sql.Tx, modelID string, seen compat.Result, kept compat.Status) error {
	id, err := resolveModel(ctx, tx, modelID)
	if err != nil {
		return err
	}
	seen = seen.Clean()
	at := seen.TestedAt
	if at.IsZero() {
		at = s.now()
	}
	ev := compat.Event{
		ModelID:    id,
		Target:     seen.Target,
		Kind:       compat.EventFlaky,
		FromStatus: kept,
		ToStatus:   seen.Status,
		Revision:   seen.Revision,
		Runtime:    seen.Runtime,
		Signature:  seen.Signature,
		Message:    seen.Message,
		At:         at,
	}
	_, _, err = insertEvent(ctx, tx, ev, nil)
	return err
}
