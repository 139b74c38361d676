package store

import (
	"context"
	"database/sql"
	"fmt"
)

// StartScan opens a scan record with status running and returns its id.
// StartedAt defaults to now; Status, FinishedAt, Error and DeviceBusy are
// ignored.
func (s *SQLite) StartScan(ctx context.Context, sc Scan) (int64, error) {
	if sc.StartedAt.IsZero() {
		sc.StartedAt = s.now()
	}
	runtimeJSON, err := jsonText(sc.Runtime)
	if err != nil {
		return 0, fmt.Errorf("store: start scan: %w", err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: start scan: %w", err)
	}
	defer tx.Rollback()
	var id int64
	if err := tx.QueryRowContext(ctx, sqlStartScan, sc.Trigger, string(ScanRunning), string(sc.Target), sc.Params,
		unixNano(sc.StartedAt), sc.Planned, sc.Done, sc.Probed, sc.Unchanged, runtimeJSON).Scan(&id); err != nil {
		return 0, fmt.Errorf("store: start scan: %w", err)
	}
	if _, err := tx.ExecContext(ctx, sqlScanOwner, s.me.String(), unixNano(s.now()), id); err != nil {
		return 0, fmt.Errorf("store: start scan: %w", err)
	}
	if err := s.touch(ctx, tx); err != nil {
		return 0, fmt.Errorf("store: start scan: %w", err)
	}
	if err := s.commit(tx); err != nil {
		return 0, fmt.Errorf("store: start scan: %w", err)
	}
	return id, nil
}

// UpdateScanProgress sets a scan's counters. The error wraps ErrNotFound
// for an unknown scan.
func (s *SQLite) UpdateScanProgress(ctx context.Context, id int64, planned, done, probed, unchanged int) error {
	if err := s.updateScan(ctx, sqlScanProgress, planned, done, probed, unchanged, id); err != nil {
		return fmt.Errorf("store: update scan %d: %w", id, err)
	}
	return nil
}

// FinishScan closes a scan with f.Status (done, failed or interrupted; ""
// is done) and sets its finished_at to now. The error wraps ErrNotFound for
// an unknown scan, ErrInvalid for another status.
func (s *SQLite) FinishScan(ctx context.Context, id int64, f ScanFinish) error {
	switch f.Status {
	case "":
		f.Status = ScanDone
	case ScanDone, ScanFailed, ScanInterrupted:
	default:
		return fmt.Errorf("store: finish scan %d: %w: status %q", id, ErrInvalid, f.Status)
	}
	if err := s.updateScan(ctx, sqlFinishScan, string(f.Status), f.Error, nullFloat(f.DeviceBusy),
		unixNano(s.now()), id); err != nil {
		return fmt.Errorf("store: finish scan %d: %w", id, err)
	}
	return nil
}

// updateScan runs one UPDATE of one scan in a transaction; ErrNotFound if
// it matched no row.
func (s *SQLite) updateScan(ctx context.Context, query string, args ...any) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return ErrNotFound
	}
	if err := s.touch(ctx, tx); err != nil {
		return err
	}
	return s.commit(tx)
}

// GetScan returns one scan. The error wraps ErrNotFound for an unknown scan.
func (s *SQLite) GetScan(ctx context.Context, id int64) (Scan, error) {
	sc, err := scanScan(s.r.QueryRowContext(ctx, sqlGetScan, id))
	if err != nil {
		return Scan{}, fmt.Errorf("store: get scan: %w", notFound(err, fmt.Sprintf("scan %d", id)))
	}
	return sc, nil
}

// ListScans returns at most limit scans (0 = 50, capped at 1000), newest
// first; empty when none.
func (s *SQLite) ListScans(ctx context.Context, limit int) ([]Scan, error) {
	scans, err := listScans(ctx, s.r, clampLimit(limit, 50))
	if err != nil {
		return nil, fmt.Errorf("store: list scans: %w", err)
	}
	return scans, nil
}

func listScans(ctx context.Context, q querier, limit int) ([]Scan, error) {
	rows, err := q.QueryContext(ctx, sqlListScans, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Scan{}
	for rows.Next() {
		sc, err := scanScan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, rows.Err()
}

// MarkInterrupted marks interrupted, with finished_at now, every running
// scan whose process is gone (see ownerGone), and returns how many it
// marked. A scan that another live process (a `scanner scan` next to
// `scanner serve`, another server on this database) runs and renews is
// left running, and so is a scan whose jobs are still queued for workers
// (see ResumeScans and CancelOrphanJobs). Call it at start-up, and now and
// then (an owner may fall silent any time).
func (s *SQLite) MarkInterrupted(ctx context.Context) (int, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: mark interrupted: %w", err)
	}
	defer tx.Rollback()
	orphans, err := s.orphanScans(ctx, tx)
	if err != nil {
		return 0, fmt.Errorf("store: mark interrupted: %w", err)
	}
	now := unixNano(s.now())
	marked := 0
	for _, o := range orphans {
		if o.openJobs > 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, sqlMarkInterrupted, now, o.id); err != nil {
			return 0, fmt.Errorf("store: mark interrupted: %w", err)
		}
		marked++
	}
	if marked > 0 {
		if err := s.touch(ctx, tx); err != nil {
			return 0, fmt.Errorf("store: mark interrupted: %w", err)
		}
	}
	if err := s.commit(tx); err != nil {
		return 0, fmt.Errorf("store: mark interrupted: %w", err)
	}
	return marked, nil
}

// orphan is a running scan whose process is gone.
type orphan struct {
	id       int64
	owner    string // as recorded
	openJobs int    // its jobs still queued or leased
	jobs     int    // its jobs, whatever their state
}

// orphanScans lists the running scans whose process is gone (ownerGone).
func (s *SQLite) orphanScans(ctx context.Context, tx *sql.Tx) ([]orphan, error) {
	rows, err := tx.QueryContext(ctx, sqlRunningScansJobs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	now := s.now()
	var out []orphan
	for rows.Next() {
		var o orphan
		var seen int64
		if err := rows.Scan(&o.id, &o.owner, &seen, &o.openJobs, &o.jobs); err != nil {
			return nil, err
		}
		if ownerGone(o.owner, fromNano(seen), now, s.me) {
			out = append(out, o)
		}
	}
	return out, rows.Err()
}

// ResumeScans takes over the running scans whose process is gone after
// they queued jobs for workers (a server of `--dispatch workers` restarted
// mid-scan, or replaced under another host name): it records this process
// as their owner and returns their ids, oldest first, for the caller to
// wait until their queues drain and finish their records. A scan whose
// jobs the workers all finished while it had no owner is taken over too:
// it ends done, not interrupted. Call it before MarkInterrupted.
func (s *SQLite) ResumeScans(ctx context.Context) ([]int64, error) {
	var ids []int64
	err := s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		orphans, err := s.orphanScans(ctx, tx)
		if err != nil {
			return false, err
		}
		for _, o := range orphans {
			if o.jobs == 0 {
				continue
			}
			// Only if nobody adopted it meanwhile (another server on this
			// database): the owner must still be the one found gone.
			res, err := tx.ExecContext(ctx, sqlAdoptScan, s.me.String(), unixNano(s.now()), o.id, o.owner)
			if err != nil {
				return false, err
			}
			if n, err := res.RowsAffected(); err != nil {
				return false, err
			} else if n == 1 {
				ids = append(ids, o.id)
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: resume scans: %w", err)
	}
	return ids, nil
}

// CancelOrphanJobs cancels the open jobs of the running scans whose
// process is gone (a server that queued them now runs without workers),
// and returns how many; MarkInterrupted then marks those scans. Call it at
// start-up, before MarkInterrupted.
func (s *SQLite) CancelOrphanJobs(ctx context.Context) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		orphans, err := s.orphanScans(ctx, tx)
		if err != nil {
			return false, err
		}
		now := s.now()
		for _, o := range orphans {
			if o.openJobs == 0 {
				continue
			}
			k, err := cancelScanJobs(ctx, tx, o.id, now)
			if err != nil {
				return false, err
			}
			n += k
		}
		return n > 0, nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: cancel orphan jobs: %w", err)
	}
	return n, nil
}
