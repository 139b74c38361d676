package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
)

// This file is what the queue does when the fleet or a scan changes under
// it: a scan that ends early withdraws its queued jobs (its leased ones may
// finish); the next scan adopts a probe still in flight rather than
// queueing it twice; a rollout's stall is recorded on the scan and its
// queued jobs re-planned for the runtime the fleet runs now; a worker says
// it is leaving.

// WithdrawJobs ends the queued jobs of scan scanID without results, and
// returns how many. Its leased jobs may still finish; one whose lease is
// lost or given back after the scan ended is cancelled then (fleet.Settle).
func (s *SQLite) WithdrawJobs(ctx context.Context, scanID int64) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		queued, err := queryJobs(ctx, tx, sqlQueuedScanJobs, scanID)
		if err != nil {
			return false, err
		}
		now := s.now()
		for _, j := range queued {
			// The rule for a queued job whose scan no longer runs.
			j.st = fleet.Settle(j.st, false)
			if err := j.save(ctx, tx, now); err != nil {
				return false, err
			}
		}
		n = len(queued)
		return n > 0, nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: withdraw jobs: %w", err)
	}
	return n, nil
}

// scanRunning reports whether scan id is still running.
func scanRunning(ctx context.Context, tx *sql.Tx, id int64) (bool, error) {
	var status string
	if err := tx.QueryRowContext(ctx, sqlScanStatus, id).Scan(&status); err != nil {
		return false, fmt.Errorf("scan %d status: %w", id, err)
	}
	return ScanStatus(status) == ScanRunning, nil
}

// settle is fleet.Settle for job j inside tx.
func settle(ctx context.Context, tx *sql.Tx, j *jobRow) error {
	if j.st.State != fleet.Queued {
		return nil
	}
	running, err := scanRunning(ctx, tx, j.scanID)
	if err != nil {
		return err
	}
	j.st = fleet.Settle(j.st, running)
	return nil
}

// adopt takes over, for scan scanID at rank, a job of an ended scan that
// still runs the probe nj would queue (fleet.Adopts); it reports whether
// it did.
func adopt(ctx context.Context, tx *sql.Tx, scanID int64, modelID string, nj NewJob) (bool, error) {
	olds, err := queryJobs(ctx, tx, sqlInFlightElsewhere, modelID, scanID)
	if err != nil {
		return false, err
	}
	for _, old := range olds {
		if !fleet.Adopts(old.spec, old.runtimeKey, nj.Job, nj.RuntimeKey) {
			continue
		}
		if _, err := tx.ExecContext(ctx, sqlAdoptJob, scanID, nj.Rank, old.id); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// ScanQueueKeys lists the queue keys of scan scanID's queued jobs.
func (s *SQLite) ScanQueueKeys(ctx context.Context, scanID int64) ([]fleet.QueueKey, error) {
	rows, err := s.r.QueryContext(ctx, sqlScanQueueKeys, scanID)
	if err != nil {
		return nil, fmt.Errorf("store: scan queue keys: %w", err)
	}
	defer rows.Close()
	var out []fleet.QueueKey
	for rows.Next() {
		var k fleet.QueueKey
		if err := rows.Scan(&k.Target, &k.RuntimeKey, &k.Chips); err != nil {
			return nil, fmt.Errorf("store: scan queue keys: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: scan queue keys: %w", err)
	}
	return out, nil
}

// SetScanStall records on scan id since when its queued jobs match no live
// worker (nil: they match again) and what the fleet does about it. The
// error wraps ErrNotFound for an unknown scan.
func (s *SQLite) SetScanStall(ctx context.Context, id int64, since *time.Time, note string) error {
	var at sql.NullInt64
	if since != nil {
		at = nullTime(*since)
	}
	if err := s.updateScan(ctx, sqlScanStall, at, note, id); err != nil {
		return fmt.Errorf("store: scan %d stall: %w", id, err)
	}
	return nil
}

// ReplanJobs moves the queued jobs of scan scanID on target that no worker
// can take to the runtime rt (the one the fleet runs now), each with the
// memory budget budgetOf gives for its devices on the fleet's hosts (the
// plan's rule), makes rt the scan's runtime, clears its stall and records
// note. Leased jobs keep their runtime (they finish on it). It returns how
// many jobs it moved.
func (s *SQLite) ReplanJobs(ctx context.Context, scanID int64, target compat.Target, rt compat.Runtime, budgetOf func(devices int) int64, note string) (int, error) {
	rtJSON, err := jsonText(rt)
	if err != nil {
		return 0, fmt.Errorf("store: replan: %w", err)
	}
	var n int
	err = s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		jobs, err := queryJobs(ctx, tx, sqlReplannedJobs, scanID, string(target), rt.RetestKey())
		if err != nil {
			return false, err
		}
		now := unixNano(s.now())
		for _, j := range jobs {
			j.spec.MemoryBudgetBytes = budgetOf(j.spec.Chips())
			spec, err := jsonText(j.spec)
			if err != nil {
				return false, err
			}
			if _, err := tx.ExecContext(ctx, sqlReplanJob, rt.RetestKey(), spec, now, j.id); err != nil {
				return false, err
			}
		}
		n = len(jobs)
		res, err := tx.ExecContext(ctx, sqlReplanScan, rtJSON, note, scanID)
		if err != nil {
			return false, err
		}
		if m, err := res.RowsAffected(); err != nil {
			return false, err
		} else if m == 0 {
			return false, ErrNotFound
		}
		return true, nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: replan scan %d: %w", scanID, err)
	}
	return n, nil
}

// ForgetWorkers drops the records of the workers last seen before
// seenBefore that hold no lease (fleet.ForgetAfter says when), and returns
// how many.
func (s *SQLite) ForgetWorkers(ctx context.Context, seenBefore time.Time) (int, error) {
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		res, err := tx.ExecContext(ctx, sqlForgetWorkers, unixNano(seenBefore))
		if err != nil {
			return false, err
		}
		n, err = res.RowsAffected()
		return n > 0, err
	})
	if err != nil {
		return 0, fmt.Errorf("store: forget workers: %w", err)
	}
	return int(n), nil
}

// LeaveWorker records that worker id is leaving (SIGTERM): it is not live
// from now on (fleet.Seen.LiveAt), so that a rollout's new runtime is
// planned for at once; its next lease or register brings it back. The
// error wraps ErrNotFound for an unknown worker.
func (s *SQLite) LeaveWorker(ctx context.Context, id string, now time.Time) error {
	res, err := s.w.ExecContext(ctx, sqlLeaveWorker, unixNano(now), id)
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n == 0 {
			err = fmt.Errorf("worker %q: %w", id, ErrNotFound)
		}
	}
	if err != nil {
		return fmt.Errorf("store: leave worker: %w", err)
	}
	return nil
}

// jobRuntime is the runtime a job was planned for: the scan's, unless the
// scan was re-planned since (then the job's own key names it).
func jobRuntime(scanRuntime compat.Runtime, jobKey string) compat.Runtime {
	if scanRuntime.RetestKey() == jobKey {
		return scanRuntime
	}
	if rt, ok := compat.RuntimeOfKey(jobKey); ok {
		return rt
	}
	return scanRuntime
}
