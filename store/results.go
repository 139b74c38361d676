package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

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

// validResult checks what the schema relies on.
func validResult(r compat.Result) error {
	switch {
	case !slices.Contains(compat.Targets, r.Target):
		return fmt.Errorf("%w: result target %q (want tpu, cpu or cuda)", ErrInvalid, r.Target)
	case !r.Status.Valid() || r.Status == compat.StatusUntested:
		return fmt.Errorf("%w: result status %q", ErrInvalid, r.Status)
	case r.TestedAt.IsZero():
		return fmt.Errorf("%w: result without tested_at", ErrInvalid)
	}
	return nil
}

// RecordResult stores r as a result of the model modelID (an id or an
// alias; the error wraps ErrNotFound for an unknown model, ErrInvalid for a
// result without a concrete target, a recordable status or a tested_at).
//
// In one transaction it inserts the result, makes it the model's current
// result on its target (and on "any target") unless that one is newer, and,
// when that changes the status shown on the target or is the target's first
// result, writes an event classified by compat.ClassifyChange. A result
// older than the current one (recorded out of order) is kept as history only.
//
// Recording the same probe twice (same model, target, revision, runtime key
// and scan; or, outside a scan, the same tested_at) writes nothing and
// reports Duplicate with the first row's id.
func (s *SQLite) RecordResult(ctx context.Context, modelID string, r compat.Result) (RecordOutcome, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return RecordOutcome{}, fmt.Errorf("store: record result: %w", err)
	}
	defer tx.Rollback()
	out, err := recordResult(ctx, tx, modelID, r)
	if err != nil {
		return RecordOutcome{}, fmt.Errorf("store: record result: %w", err)
	}
	if out.Duplicate {
		return out, nil // nothing written
	}
	if err := s.touch(ctx, tx); err != nil {
		return RecordOutcome{}, fmt.Errorf("store: record result: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return RecordOutcome{}, fmt.Errorf("store: record result: %w", err)
	}
	return out, nil
}

// RecordResults records many results in one transaction, each as
// RecordResult would, in order: all or none are stored. It is for imports
// and for seeding tests and benchmarks; a scan records as it goes.
func (s *SQLite) RecordResults(ctx context.Context, recs []Record) ([]RecordOutcome, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: record results: %w", err)
	}
	defer tx.Rollback()
	outs := make([]RecordOutcome, 0, len(recs))
	for i, rec := range recs {
		out, err := recordResult(ctx, tx, rec.ModelID, rec.Result)
		if err != nil {
			return nil, fmt.Errorf("store: record results: #%d: %w", i, err)
		}
		outs = append(outs, out)
	}
	if err := s.touch(ctx, tx); err != nil {
		return nil, fmt.Errorf("store: record results: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: record results: %w", err)
	}
	return outs, nil
}

// recordResult is RecordResult inside tx.
func recordResult(ctx context.Context, tx *sql.Tx, modelID string, r compat.Result) (RecordOutcome, error) {
	if err := validResult(r); err != nil {
		return RecordOutcome{}, err
	}
	id, err := resolveModel(ctx, tx, modelID)
	if err != nil {
		return RecordOutcome{}, err
	}
	resultID, err := insertResult(ctx, tx, id, r)
	if errors.Is(err, errDuplicate) {
		return RecordOutcome{ResultID: resultID, Duplicate: true}, nil
	}
	if err != nil {
		return RecordOutcome{}, err
	}
	out := RecordOutcome{ResultID: resultID}

	prev, moved, err := advanceCurrent(ctx, tx, id, r.Target, resultID, r)
	if err != nil {
		return RecordOutcome{}, err
	}
	if _, _, err := advanceCurrent(ctx, tx, id, "", resultID, r); err != nil {
		return RecordOutcome{}, err
	}
	if !moved || (prev != "" && prev == r.Status) {
		return out, nil
	}
	ev := compat.Event{
		ModelID:    id,
		Target:     r.Target,
		Kind:       compat.ClassifyChange(prev, r.Status),
		FromStatus: prev,
		ToStatus:   r.Status,
		Revision:   r.Revision,
		Runtime:    r.Runtime,
		Signature:  r.Signature,
		Message:    r.Message,
		At:         r.TestedAt.UTC(),
	}
	if ev.ID, err = insertEvent(ctx, tx, ev, &resultID); err != nil {
		return RecordOutcome{}, err
	}
	out.Event = &ev
	return out, nil
}

// errDuplicate says insertResult found the probe already recorded.
var errDuplicate = errors.New("duplicate result")

// insertResult inserts r and returns its id, or the earlier row's id and
// errDuplicate.
func insertResult(ctx context.Context, tx *sql.Tx, modelID string, r compat.Result) (int64, error) {
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
	var scanID sql.NullInt64
	if r.ScanID != nil {
		scanID = sql.NullInt64{Int64: *r.ScanID, Valid: true}
	}
	key := r.Runtime.Key()
	var id int64
	err = tx.QueryRowContext(ctx, sqlInsertResult,
		modelID, scanID, string(r.Target), string(r.Status), nullStr(r.Stage), nullStr(r.FailureClass),
		nullStr(r.Op), nullStr(r.Reason), nullStr(r.Signature), nullStr(r.Message), nullStr(r.Mode),
		r.Revision, unixNano(r.TestedAt), r.DurationS, runtimeJSON, key,
		r.Runtime.Torch, r.Runtime.TorchTPU, r.Runtime.Transformers, r.Runtime.Harness,
		metricsJSON, nullFloat(r.Metrics.TokensPerS), stages, r.LogTail, r.Task, r.Repro,
	).Scan(&id)
	if err == nil {
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

// advanceCurrent makes result resultID (r) the current one of the model on
// target unless the current one is newer (by tested_at, then id). It
// returns the status shown before ("" if none) and whether it moved.
func advanceCurrent(ctx context.Context, tx *sql.Tx, modelID string, target compat.Target, resultID int64, r compat.Result) (compat.Status, bool, error) {
	var (
		curID     int64
		curStatus compat.Status
		curTested int64
	)
	err := tx.QueryRowContext(ctx, sqlGetCurrent, modelID, string(target)).Scan(&curID, &curStatus, &curTested)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		curStatus = ""
	case err != nil:
		return "", false, fmt.Errorf("current: %w", err)
	default:
		tested := unixNano(r.TestedAt)
		if tested < curTested || (tested == curTested && resultID < curID) {
			return curStatus, false, nil
		}
	}
	if _, err := tx.ExecContext(ctx, sqlSetCurrent, modelID, string(target), resultID, string(r.Status),
		unixNano(r.TestedAt), nullFloat(r.Metrics.TokensPerS)); err != nil {
		return "", false, fmt.Errorf("set current: %w", err)
	}
	return curStatus, true, nil
}

// insertEvent writes ev and returns its id.
func insertEvent(ctx context.Context, tx *sql.Tx, ev compat.Event, resultID *int64) (int64, error) {
	runtimeJSON, err := jsonText(ev.Runtime)
	if err != nil {
		return 0, err
	}
	var rid sql.NullInt64
	if resultID != nil {
		rid = sql.NullInt64{Int64: *resultID, Valid: true}
	}
	var id int64
	if err := tx.QueryRowContext(ctx, sqlInsertEvent, ev.ModelID, rid, string(ev.Target), string(ev.Kind),
		string(ev.FromStatus), string(ev.ToStatus), ev.Revision, runtimeJSON,
		nullStr(ev.Signature), nullStr(ev.Message), unixNano(ev.At)).Scan(&id); err != nil {
		return 0, fmt.Errorf("insert event: %w", err)
	}
	return id, nil
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
	id, err := resolveModel(ctx, tx, modelID)
	if err != nil {
		return fmt.Errorf("store: record flaky: %w", err)
	}
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
	if _, err := insertEvent(ctx, tx, ev, nil); err != nil {
		return fmt.Errorf("store: record flaky: %w", err)
	}
	if err := s.touch(ctx, tx); err != nil {
		return fmt.Errorf("store: record flaky: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: record flaky: %w", err)
	}
	return nil
}
