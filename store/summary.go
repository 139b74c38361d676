package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// Summary is the headline for target ("" = each model's newest result on
// any target). Counts has every status word, zeros included; models without
// a result count as untested. Tested counts the verdicts (pass, fail, oom,
// timeout, crash); PassRate is pass ÷ Tested and WeightedPassRate the same
// weighted by downloads, each nil when its denominator is 0. LastScan is the
// newest scan (it may still be running), Runtime that of the newest result
// on target; both nil when none. The error wraps ErrInvalid for an unknown
// target.
func (s *SQLite) Summary(ctx context.Context, target compat.Target) (Summary, error) {
	if err := validTarget(target, true); err != nil {
		return Summary{}, fmt.Errorf("store: summary: %w", err)
	}
	tx, err := s.r.BeginTx(ctx, nil) // one snapshot
	if err != nil {
		return Summary{}, fmt.Errorf("store: summary: %w", err)
	}
	defer tx.Rollback()
	sum, err := summary(ctx, tx, target)
	if err != nil {
		return Summary{}, fmt.Errorf("store: summary: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Summary{}, fmt.Errorf("store: summary: %w", err)
	}
	return sum, nil
}

func summary(ctx context.Context, tx *sql.Tx, target compat.Target) (Summary, error) {
	sum := Summary{Counts: make(map[compat.Status]int, len(compat.Statuses))}
	for _, st := range compat.Statuses {
		sum.Counts[st] = 0
	}
	rows, err := tx.QueryContext(ctx, sqlStatusCounts, string(target))
	if err != nil {
		return sum, err
	}
	defer rows.Close()
	var passDL, verdictDL int64
	for rows.Next() {
		var (
			rank      int
			n         int
			downloads int64
		)
		if err := rows.Scan(&rank, &n, &downloads); err != nil {
			return sum, err
		}
		st := compat.StatusUntested
		if rank >= 0 && rank < len(compat.Statuses) {
			st = compat.Statuses[rank]
		}
		sum.Counts[st] += n
		sum.Models += n
		if st.HeldAgainstModel() || st == compat.StatusPass {
			sum.Tested += n
			verdictDL += downloads
		}
		if st == compat.StatusPass {
			passDL = downloads
		}
	}
	if err := rows.Err(); err != nil {
		return sum, err
	}
	if sum.Tested > 0 {
		r := float64(sum.Counts[compat.StatusPass]) / float64(sum.Tested)
		sum.PassRate = &r
	}
	if verdictDL > 0 {
		r := float64(passDL) / float64(verdictDL)
		sum.WeightedPassRate = &r
	}

	if sum.Fit, err = fit(ctx, tx); err != nil {
		return sum, err
	}
	scans, err := listScans(ctx, tx, 1)
	if err != nil {
		return sum, err
	}
	if len(scans) > 0 {
		sum.LastScan = &scans[0]
	}

	if sum.Tasks, err = taskTallies(ctx, tx); err != nil {
		return sum, err
	}

	var rt string
	err = tx.QueryRowContext(ctx, sqlLatestRuntime, string(target)).Scan(&rt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return sum, err
	default:
		sum.Runtime = new(compat.Runtime)
		if err := json.Unmarshal([]byte(rt), sum.Runtime); err != nil {
			return sum, fmt.Errorf("runtime: %w", err)
		}
	}
	return sum, nil
}

// taskTallies counts the known models by task and library (any target).
func taskTallies(ctx context.Context, tx *sql.Tx) ([]TaskTally, error) {
	rows, err := tx.QueryContext(ctx, sqlTaskTallies)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []TaskTally{}
	for rows.Next() {
		var t TaskTally
		if err := rows.Scan(&t.Task, &t.Library, &t.Tested, &t.LibraryRejected, &t.Models, &t.Downloads); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// maxFailureExamples is how many model ids a FailureGroup lists.
const maxFailureExamples = 5

// Failures groups the current results on target ("" = each model's newest
// on any target) that are held against their models (fail, oom, timeout,
// crash) by signature; a result without one is grouped by its failure
// class, or failing that by the class its status implies (timeout, oom,
// crash, other). Groups come most downloads first (then signature), at most
// limit (0 = 50, capped at 1000); empty when none.
// Examples are the most downloaded models of the group. FailureClass and Op
// are those of the group's most downloaded model. The error wraps
// ErrInvalid for an unknown target.
func (s *SQLite) Failures(ctx context.Context, target compat.Target, limit int) ([]FailureGroup, error) {
	if err := validTarget(target, true); err != nil {
		return nil, fmt.Errorf("store: failures: %w", err)
	}
	tx, err := s.r.BeginTx(ctx, nil) // one snapshot
	if err != nil {
		return nil, fmt.Errorf("store: failures: %w", err)
	}
	defer tx.Rollback()
	groups, err := failures(ctx, tx, target, clampLimit(limit, 50))
	if err != nil {
		return nil, fmt.Errorf("store: failures: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: failures: %w", err)
	}
	return groups, nil
}

func failures(ctx context.Context, tx *sql.Tx, target compat.Target, limit int) ([]FailureGroup, error) {
	var total int64
	if err := tx.QueryRowContext(ctx, sqlTotalDownloads, string(target)).Scan(&total); err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, sqlFailureGroups, string(target), limit)
	if err != nil {
		return nil, err
	}
	groups := []FailureGroup{}
	for rows.Next() {
		var g FailureGroup
		if err := rows.Scan(&g.Signature, &g.Models, &g.Downloads); err != nil {
			rows.Close()
			return nil, err
		}
		if total > 0 {
			g.DownloadShare = float64(g.Downloads) / float64(total)
		}
		groups = append(groups, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range groups {
		if err := failureExamples(ctx, tx, target, &groups[i]); err != nil {
			return nil, err
		}
	}
	return groups, nil
}

// failureExamples fills g's examples, and its class and op from the most
// downloaded of them.
func failureExamples(ctx context.Context, tx *sql.Tx, target compat.Target, g *FailureGroup) error {
	rows, err := tx.QueryContext(ctx, sqlFailureExamples, string(target), g.Signature, maxFailureExamples)
	if err != nil {
		return err
	}
	defer rows.Close()
	g.Examples = []string{}
	for rows.Next() {
		var (
			id        string
			class, op sql.NullString
			status    compat.Status
		)
		if err := rows.Scan(&id, &class, &op, &status); err != nil {
			return err
		}
		if len(g.Examples) == 0 {
			g.FailureClass = compat.FailureClass(class.String)
			if !class.Valid {
				g.FailureClass = classOfStatus(status)
			}
			g.Op = fromNullStr[string](op)
		}
		g.Examples = append(g.Examples, id)
	}
	return rows.Err()
}

// classOfStatus is the failure class a status implies when a result has none.
func classOfStatus(s compat.Status) compat.FailureClass {
	switch s {
	case compat.StatusOOM:
		return compat.ClassOOM
	case compat.StatusTimeout:
		return compat.ClassTimeout
	case compat.StatusCrash:
		return compat.ClassCrash
	}
	return compat.ClassOther
}

// Events returns at most limit status changes (0 = 50, capped at 1000),
// newest first; empty when none.
func (s *SQLite) Events(ctx context.Context, limit int) ([]compat.Event, error) {
	evs, err := scanEvents(s.r.QueryContext(ctx, sqlEvents, clampLimit(limit, 50)))
	if err != nil {
		return nil, fmt.Errorf("store: events: %w", err)
	}
	return evs, nil
}

// ModelEvents returns at most limit status changes (0 = 50, capped at 1000)
// of the model known as id, newest first; empty when none. The error wraps
// ErrNotFound for an unknown model.
func (s *SQLite) ModelEvents(ctx context.Context, id string, limit int) ([]compat.Event, error) {
	canon, err := resolveModel(ctx, s.r, id)
	if err != nil {
		return nil, fmt.Errorf("store: model events: %w", err)
	}
	evs, err := scanEvents(s.r.QueryContext(ctx, sqlModelEvents, canon, clampLimit(limit, 50)))
	if err != nil {
		return nil, fmt.Errorf("store: model events: %w", err)
	}
	return evs, nil
}

// Backup writes a consistent, compacted copy of the database to path (its
// folder is created) while the store is in use: VACUUM INTO a temporary
// file next to path, then a rename, so path is either the old file or a
// complete copy.
func (s *SQLite) Backup(ctx context.Context, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store: backup: %w", err)
	}
	// The readers are query-only, which VACUUM INTO refuses; the writer
	// would hold up writes for the copy's duration. A connection of its own:
	dsn := s.path + "?" + backupParams
	if s.roDSN != "" {
		dsn = s.roDSN
	}
	db := openPool(dsn)
	defer db.Close()
	if _, err := db.ExecContext(ctx, sqlBackup, tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store: backup: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store: backup: %w", err)
	}
	return nil
}

// IntegrityCheck runs PRAGMA integrity_check and returns its first line:
// "ok" for a sound database.
func (s *SQLite) IntegrityCheck(ctx context.Context) (string, error) {
	var line string
	if err := s.r.QueryRowContext(ctx, sqlIntegrity).Scan(&line); err != nil {
		return "", fmt.Errorf("store: integrity check: %w", err)
	}
	return line, nil
}
