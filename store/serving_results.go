package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

const (
	sqlPutServingResult = `INSERT INTO serving_results (model_id, runtime_key, status, measured_at, result)
SELECT id, ?, ?, ?, ? FROM models WHERE id = ?
ON CONFLICT (model_id) DO UPDATE SET runtime_key = excluded.runtime_key, status = excluded.status,
	measured_at = excluded.measured_at, result = excluded.result`
	sqlServingResult = `SELECT measured_at, result FROM serving_results WHERE model_id = ?`
	// sqlLastServing is the status of the newest serving change (its
	// to_status: the newest judged verdict, since every judged verdict
	// that differs makes one), else the stored verdict's status (a verdict
	// measured before the serving changes were written).
	sqlLastServing = `SELECT coalesce(
	(SELECT to_status FROM events WHERE model_id = ?1 AND kind IN ('serving_new', 'serving_regression', 'serving_fix')
		ORDER BY at DESC, id DESC LIMIT 1),
	(SELECT status FROM serving_results WHERE model_id = ?1), '')`
	sqlServingResults = `SELECT model_id, measured_at, result FROM serving_results WHERE model_id IN (SELECT value FROM json_each(?))`
)

// PutServingResult keeps a model's newest measured serving verdict
// (migration 0016), in its own table under its own runtime key: the
// model's inference results are not touched. A change of the judged
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
	m.LogTail = "" // the probe's output is the CLI's to print, not the database's to keep
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
	res, err := tx.ExecContext(ctx, sqlPutServingResult, m.Runtime.Key(), m.Status, unixNano(m.MeasuredAt), string(data), modelID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrNotFound
	}
	if kind, changed := compat.ServingChange(last, compat.Status(m.Status)); changed {
		ev := compat.Event{ModelID: modelID, Target: compat.TargetTPU, Kind: kind, FromStatus: last, ToStatus: compat.Status(m.Status),
			Runtime: m.EventRuntime(), Signature: m.Signature, Message: m.Message, At: m.MeasuredAt.UTC()}
		if _, _, err := insertEvent(ctx, tx, ev, nil); err != nil {
			return err
		}
	}
	return nil
}

// ServingResult is a model's newest measured serving verdict; the error
// wraps ErrNotFound when none was measured.
func (s *SQLite) ServingResult(ctx context.Context, modelID string) (compat.ServingMeasured, error) {
	var at int64
	var data string
	err := s.r.QueryRowContext(ctx, sqlServingResult, modelID).Scan(&at, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return compat.ServingMeasured{}, fmt.Errorf("store: serving result %s: %w", modelID, ErrNotFound)
	}
	if err != nil {
		return compat.ServingMeasured{}, fmt.Errorf("store: serving result %s: %w", modelID, err)
	}
	m, err := decodeServing(at, data)
	if err != nil {
		return compat.ServingMeasured{}, fmt.Errorf("store: serving result %s: %w", modelID, err)
	}
	return m, nil
}

// ServingResults are the measured serving verdicts of the models ids (a
// page of a list), by model id; a model never measured is absent.
func (s *SQLite) ServingResults(ctx context.Context, ids []string) (map[string]compat.ServingMeasured, error) {
	out := map[string]compat.ServingMeasured{}
	if len(ids) == 0 {
		return out, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("store: serving results: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, sqlServingResults, string(list))
	if err != nil {
		return nil, fmt.Errorf("store: serving results: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, data string
		var at int64
		if err := rows.Scan(&id, &at, &data); err != nil {
			return nil, fmt.Errorf("store: serving results: %w", err)
		}
		if out[id], err = decodeServing(at, data); err != nil {
			return nil, fmt.Errorf("store: serving result %s: %w", id, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: serving results: %w", err)
	}
	return out, nil
}

// decodeServing reads a stored verdict back, its date the row's.
func decodeServing(at int64, data string) (compat.ServingMeasured, error) {
	var m compat.ServingMeasured
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		return compat.ServingMeasured{}, err
	}
	m.MeasuredAt = fromNano(at)
	return m, nil
}
