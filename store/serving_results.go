package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

const (
	// A model keeps two rows (migration 0019): its newest judged verdict
	// (judged 1) and its newest probe that judged nothing (judged 0); a
	// probe replaces only the row of its own kind.
	sqlPutServingResult = `INSERT INTO serving_results (model_id, judged, runtime_key, status, measured_at, result)
SELECT id, ?, ?, ?, ?, ? FROM models WHERE id = ?
ON CONFLICT (model_id, judged) DO UPDATE SET runtime_key = excluded.runtime_key, status = excluded.status,
	measured_at = excluded.measured_at, result = excluded.result`
	sqlServingResult = `SELECT model_id, judged, measured_at, result FROM serving_results WHERE model_id = ?`
	// sqlLastServing is the status of the newest serving change (its
	// to_status: the newest judged verdict, since every judged verdict
	// that differs makes one), else the stored judged verdict's status (a
	// verdict measured before the serving changes were written).
	sqlLastServing = `SELECT coalesce(
	(SELECT to_status FROM events WHERE model_id = ?1 AND kind IN ('serving_new', 'serving_regression', 'serving_fix')
		ORDER BY at DESC, id DESC LIMIT 1),
	(SELECT status FROM serving_results WHERE model_id = ?1 AND judged = 1), '')`
	sqlServingResults = `SELECT model_id, judged, measured_at, result FROM serving_results WHERE model_id IN (SELECT value FROM json_each(?))`
)

// PutServingResult keeps a model's newest measured serving verdict
// (migration 0016), in its own table under its own runtime key: the
// model's inference results are not touched. A probe that judged nothing
// (compat.ServingMeasured.Judged: the scanner's error, skipped for want of
// a CPU reference) is kept beside the newest judged verdict, never in its
// place (migration 0019; ServingResult reads both). A change of the judged
// verdict (compat.ServingChange: first measured, stops serving, starts
// serving) is an event of its own kind on target tpu, for the feeds and
// the webhooks. MeasuredAt zero is the store's clock. The error wraps
// ErrNotFound for an unknown model.
func (s *SQLite) PutServingResult(ctx context.Context, modelID string, m compat.ServingMeasured) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: put serving result %s: %w", modelID, err)
	}
	defer tx.Rollback()
	if err := s.putServingResult(ctx, tx, modelID, m); err != nil {
		return fmt.Errorf("store: put serving result %s: %w", modelID, err)
	}
	if err := s.touch(ctx, tx); err != nil {
		return fmt.Errorf("store: put serving result %s: %w", modelID, err)
	}
	if err := s.commit(tx); err != nil {
		return fmt.Errorf("store: put serving result %s: %w", modelID, err)
	}
	return nil
}

// putServingResult is PutServingResult inside tx (a fleet worker's
// verdict is stored with its job's result: CompleteJob); it does not touch
// the data's version.
func (s *SQLite) putServingResult(ctx context.Context, tx *sql.Tx, modelID string, m compat.ServingMeasured) error {
	if m.Evidence != compat.ServingEvidenceMeasured || m.Status == "" {
		return fmt.Errorf("%w: not a measured verdict", ErrInvalid)
	}
	m = m.Clean()
	if m.MeasuredAt.IsZero() {
		m.MeasuredAt = s.now().UTC()
	}
	m.LogTail = ""        // the probe's output is the CLI's to print, not the database's to keep
	m.LatestAttempt = nil // the read's, never stored
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var last compat.Status
	if err := tx.QueryRowContext(ctx, sqlLastServing, modelID).Scan(&last); err != nil {
		return err
	}
	if !last.IsVerdict() { // a verdict stored before the changes were written, or none
		last = ""
	}
	res, err := tx.ExecContext(ctx, sqlPutServingResult, m.Judged(), m.Runtime.Key(), m.Status, unixNano(m.MeasuredAt), string(data), modelID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrNotFound
	}
	if kind, changed := compat.ServingChange(last, compat.Status(m.Status)); changed {
		ev := compat.Event{ModelID: modelID, Target: compat.TargetTPU, Kind: kind, FromStatus: last, ToStatus: compat.Status(m.Status),
			Revision: m.Revision, Runtime: m.EventRuntime(), Stage: m.EventStage(), Signature: m.Signature, Message: m.Message,
			At: m.MeasuredAt.UTC()}
		if _, _, err := insertEvent(ctx, tx, ev, nil); err != nil {
			return err
		}
	}
	return nil
}

// ServingResult is a model's measured serving verdict (servingRows'
// rule: the newest judged one, and a newer probe that judged nothing as
// its LatestAttempt); the error wraps ErrNotFound when none was measured.
func (s *SQLite) ServingResult(ctx context.Context, modelID string) (compat.ServingMeasured, error) {
	got, err := servingRows(s.r.QueryContext(ctx, sqlServingResult, modelID))
	if err != nil {
		return compat.ServingMeasured{}, fmt.Errorf("store: serving result %s: %w", modelID, err)
	}
	m, ok := got[modelID]
	if !ok {
		return compat.ServingMeasured{}, fmt.Errorf("store: serving result %s: %w", modelID, ErrNotFound)
	}
	return m, nil
}

// ServingResults are the measured serving verdicts of the models ids (a
// page of a list), by model id, as ServingResult reads them; a model never
// measured is absent.
func (s *SQLite) ServingResults(ctx context.Context, ids []string) (map[string]compat.ServingMeasured, error) {
	if len(ids) == 0 {
		return map[string]compat.ServingMeasured{}, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("store: serving results: %w", err)
	}
	out, err := servingRows(s.r.QueryContext(ctx, sqlServingResults, string(list)))
	if err != nil {
		return nil, fmt.Errorf("store: serving results: %w", err)
	}
	return out, nil
}

// servingRows reads rows of (model_id, judged, measured_at, result) into
// each model's one verdict, the rule of what a reader is shown: the newest
// judged verdict (its date and runtime its own) when there is one, with
// the newest probe that judged nothing as its LatestAttempt when that one
// came later (the page says why it judged nothing); else the newest probe,
// which judged nothing.
func servingRows(rows *sql.Rows, err error) (map[string]compat.ServingMeasured, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	judged, unjudged := map[string]compat.ServingMeasured{}, map[string]compat.ServingMeasured{}
	for rows.Next() {
		var id, data string
		var isJudged bool
		var at int64
		if err := rows.Scan(&id, &isJudged, &at, &data); err != nil {
			return nil, err
		}
		m, err := decodeServing(at, data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		if isJudged {
			judged[id] = m
		} else {
			unjudged[id] = m
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for id, u := range unjudged {
		j, ok := judged[id]
		switch {
		case !ok:
			judged[id] = u
		case u.MeasuredAt.After(j.MeasuredAt):
			j.LatestAttempt = &u
			judged[id] = j
		}
	}
	return judged, nil
}

// decodeServing reads a stored verdict back, its date the row's.
func decodeServing(at int64, data string) (compat.ServingMeasured, error) {
	var m compat.ServingMeasured
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		return compat.ServingMeasured{}, err
	}
	m.MeasuredAt = fromNano(at)
	m.LatestAttempt = nil
	return m, nil
}
