package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
)

// ReadinessUpdate is a model's readiness as a scan computed it.
type ReadinessUpdate struct {
	ModelID string
	SHA     string // the revision it was computed for
	Version int    // readiness.Version of the rules
	// Full says it read config.json itself, not only the Hub listing's
	// summary of it.
	Full      bool
	Readiness readiness.Readiness
}

const (
	// sqlSetReadiness writes a readiness unless it is the listing-summary
	// kind and the row holds one from config.json for the same revision
	// and rules, or the row holds this very readiness already.
	sqlSetReadiness = `UPDATE models SET readiness = ?1, readiness_sha = ?2, readiness_version = ?3, readiness_full = ?4
WHERE id = ?5
	AND NOT (readiness_full = 1 AND ?4 = 0 AND readiness_sha = ?2 AND readiness_version = ?3)
	AND NOT (readiness IS ?1 AND readiness_sha = ?2 AND readiness_version = ?3 AND readiness_full = ?4)`
	sqlModelExistsExact = `SELECT count(*) FROM models WHERE id = ?`
	// listWhereHint keeps models with a readiness hint of that code.
	listWhereHint = `EXISTS (SELECT 1 FROM json_each(m.readiness, '$.hints') h WHERE h.value ->> 'code' = ?)`
)

// SetReadiness stores a model's readiness. One computed from the listing's
// summary does not replace one computed from config.json for the same
// revision and rules; an unchanged readiness is not written (the data's
// change time stays). The error wraps ErrNotFound for an unknown model.
func (s *SQLite) SetReadiness(ctx context.Context, u ReadinessUpdate) error {
	body, err := jsonText(u.Readiness)
	if err != nil {
		return fmt.Errorf("store: set readiness: %w", err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: set readiness: %w", err)
	}
	defer tx.Rollback()
	if err := addFit(ctx, tx, u.ModelID, -1); err != nil {
		return fmt.Errorf("store: set readiness: %w", err)
	}
	res, err := tx.ExecContext(ctx, sqlSetReadiness, body, u.SHA, u.Version, u.Full, u.ModelID)
	if err != nil {
		return fmt.Errorf("store: set readiness: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: set readiness: %w", err)
	}
	if n == 0 {
		var exists int
		if err := tx.QueryRowContext(ctx, sqlModelExistsExact, u.ModelID).Scan(&exists); err != nil {
			return fmt.Errorf("store: set readiness: %w", err)
		}
		if exists == 0 {
			return fmt.Errorf("store: set readiness: model %s: %w", u.ModelID, ErrNotFound)
		}
		return nil // kept: nothing changed
	}
	if err := addFit(ctx, tx, u.ModelID, +1); err != nil {
		return fmt.Errorf("store: set readiness: %w", err)
	}
	if err := s.touch(ctx, tx); err != nil {
		return fmt.Errorf("store: set readiness: %w", err)
	}
	if err := s.commit(tx); err != nil {
		return fmt.Errorf("store: set readiness: %w", err)
	}
	return nil
}

// decodeReadiness reads the models.readiness column (nil for NULL).
func decodeReadiness(id string, col sql.NullString) (*readiness.Readiness, error) {
	if !col.Valid {
		return nil, nil
	}
	var r readiness.Readiness
	if err := json.Unmarshal([]byte(col.String), &r); err != nil {
		return nil, fmt.Errorf("model %s readiness: %w", id, err)
	}
	if r.Hints == nil {
		r.Hints = []readiness.Hint{}
	}
	return &r, nil
}

// validHint accepts "" (no filter) and the readiness hint codes.
func validHint(code string) error {
	if code == "" || readiness.ValidCode(code) {
		return nil
	}
	return fmt.Errorf("%w: hint %q (want one of %s)", ErrInvalid, code, strings.Join(readiness.Codes, ", "))
}

// Fit is how many models fit one device of each TPU generation, among
// those whose min_devices is known.
type Fit struct {
	Known int            // models with min_devices
	One   map[string]int // generation → models that need one device
}

// fit reads the Fit counts (the fit tallies).
func fit(ctx context.Context, tx *sql.Tx) (Fit, error) {
	f := Fit{One: make(map[string]int, len(readiness.Generations))}
	for _, g := range readiness.Generations {
		f.One[g.Name] = 0
	}
	rows, err := tx.QueryContext(ctx, sqlFitTallies)
	if err != nil {
		return f, fmt.Errorf("fit: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			gen string
			n   int
		)
		if err := rows.Scan(&gen, &n); err != nil {
			return f, fmt.Errorf("fit: %w", err)
		}
		if gen == "" {
			f.Known = n
		} else if _, ok := f.One[gen]; ok {
			f.One[gen] = n
		}
	}
	return f, rows.Err()
}

// addFit adds model id's readiness to the fit tallies (sign +1) or takes
// it away (-1): one to ” when its min_devices are known, and one to each
// generation it needs a single device of.
func addFit(ctx context.Context, tx *sql.Tx, id string, sign int) error {
	rows, err := tx.QueryContext(ctx, sqlFitOf, id)
	if err != nil {
		return fmt.Errorf("fit: %w", err)
	}
	var gens []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			rows.Close()
			return fmt.Errorf("fit: %w", err)
		}
		gens = append(gens, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("fit: %w", err)
	}
	for _, g := range gens {
		if _, err := tx.ExecContext(ctx, sqlAddFit, g, sign); err != nil {
			return fmt.Errorf("fit: %w", err)
		}
	}
	return nil
}

const (
	sqlFitTallies = `SELECT generation, models FROM fit_tallies`
	// sqlFitOf is what a model's readiness adds to the fit tallies: ''
	// when its min_devices are known, and each generation it needs one
	// device of (as the migration's backfill counts them).
	sqlFitOf = `SELECT '' FROM models WHERE id = ?1 AND readiness ->> '$.min_devices' IS NOT NULL
UNION ALL
SELECT d.key FROM models m, json_each(m.readiness, '$.min_devices') d
WHERE m.id = ?1 AND m.readiness ->> '$.min_devices' IS NOT NULL AND d.value = 1`
	sqlAddFit = `INSERT INTO fit_tallies (generation, models) VALUES (?, ?)
ON CONFLICT DO UPDATE SET models = models + excluded.models`
)
