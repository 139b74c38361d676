package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
)

// This file is the work queue of `serve --dispatch workers`: the workers,
// and the jobs of each scan with their leases. Every change of a job is
// decided by internal/fleet's pure functions (Grant, Renew, Complete,
// Release, Expire) and written in one transaction, together with what it
// entails (the result, the worker's count), so that a job is recorded once.

// WorkerRecord is a worker as the server last heard from it.
type WorkerRecord struct {
	fleet.Worker
	FirstSeen time.Time
	LastSeen  time.Time
	Left      time.Time // when it said it was leaving; zero while it works
	JobsDone  int       // results accepted from it
	Busy      int       // leases it holds now
}

// NewJob is one probe a scan queues.
type NewJob struct {
	Rank       int    // the model's place in the scan's popularity order
	RuntimeKey string // of the runtime the scan planned against
	Job        fleet.Job
}

// JobCounts is where the jobs of one scan stand.
type JobCounts struct {
	Total, Queued, Leased, Done, Failed, Cancelled int
}

// Open is how many jobs still wait for a result.
func (c JobCounts) Open() int { return c.Queued + c.Leased }

// QueueDepth is the open jobs of one target and runtime.
type QueueDepth struct {
	Target     compat.Target
	RuntimeKey string
	Queued     int
	Leased     int
}

// QueueStats is the queue as /metrics shows it.
type QueueStats struct {
	Open       []QueueDepth
	LostLeases int64 // leases that expired unrenewed, over the queue's life
}

// JobOutcome is what an accepted result did.
type JobOutcome struct {
	ScanID  int64
	ModelID string
	Result  compat.Result // as recorded: scan id and worker host (the lease holder's) filled in
	Flaky   bool          // recorded as a flaky event; the old status stays
	Record  RecordOutcome // for a result that was not flaky
	// Serving is the serving probe's verdict stored with the result
	// (fleet.ResultRequest.Serving, its date the server's); nil for none.
	Serving *compat.ServingMeasured
}

// Expired is what ExpireLeases did.
type Expired struct {
	Requeued int
	// Keys are the targets and runtimes of the jobs queued again (each
	// once): the long polls that could take them are woken.
	Keys   []fleet.QueueKey
	Failed []JobOutcome // jobs that lost their last lease: error results
}

// jobRow is a jobs row as scanned.
type jobRow struct {
	id         int64
	scanID     int64
	modelID    string
	runtimeKey string
	spec       fleet.Job
	st         fleet.JobState
	lastWorker string
}

func scanJob(row interface{ Scan(...any) error }) (jobRow, error) {
	var j jobRow
	var spec, state string
	var lease, worker sql.NullString
	var expires sql.NullInt64
	err := row.Scan(&j.id, &j.scanID, &j.modelID, &j.runtimeKey, &spec, &state, &lease, &worker, &expires,
		&j.st.Attempts, &j.st.Lost, &j.lastWorker)
	if err != nil {
		return j, err
	}
	if err := json.Unmarshal([]byte(spec), &j.spec); err != nil {
		return j, fmt.Errorf("job %d spec: %w", j.id, err)
	}
	j.st.State, j.st.LeaseID, j.st.WorkerID = fleet.State(state), lease.String, worker.String
	if expires.Valid {
		j.st.ExpiresAt = fromNano(expires.Int64)
	}
	return j, nil
}

// key is what the job asks of the worker that takes it.
func (j jobRow) key() fleet.QueueKey { return j.spec.Key(j.runtimeKey) }

// save writes the job's state back.
func (j jobRow) save(ctx context.Context, tx *sql.Tx, now time.Time) error {
	var lease, worker sql.NullString
	var expires sql.NullInt64
	if j.st.State == fleet.Leased {
		lease = sql.NullString{String: j.st.LeaseID, Valid: true}
		worker = sql.NullString{String: j.st.WorkerID, Valid: true}
		expires = sql.NullInt64{Int64: unixNano(j.st.ExpiresAt), Valid: true}
	}
	_, err := tx.ExecContext(ctx, sqlSetJob, string(j.st.State), lease, worker, expires, j.st.Attempts, j.st.Lost,
		j.lastWorker, unixNano(now), j.id)
	return err
}

// SeeWorker records w as heard from at now (register, lease).
func (s *SQLite) SeeWorker(ctx context.Context, w fleet.Worker, now time.Time) error {
	if w.ID == "" || w.Host == "" {
		return fmt.Errorf("store: see worker: %w: a worker needs an id and a host", ErrInvalid)
	}
	if _, err := compat.ParseResultTarget(string(w.Target)); err != nil {
		return fmt.Errorf("store: see worker: %w: %v", ErrInvalid, err)
	}
	rt, err := jsonText(w.Runtime)
	if err != nil {
		return fmt.Errorf("store: see worker: %w", err)
	}
	var serving sql.NullString // the worker's serving probe (migration 0019); NULL: it runs none
	if w.Serving != nil {
		text, err := jsonText(w.Serving)
		if err != nil {
			return fmt.Errorf("store: see worker: %w", err)
		}
		serving = sql.NullString{String: text, Valid: true}
	}
	if _, err := s.w.ExecContext(ctx, sqlSeeWorker, w.ID, w.Host, w.Version, string(w.Target), w.Runtime.RetestKey(), rt,
		w.Devices, int64(min(w.MemoryBytes, 1<<62)), unixNano(now), serving); err != nil {
		return fmt.Errorf("store: see worker: %w", err)
	}
	return nil
}

// Workers lists at most limit workers (0 = 200), the most recently seen
// first.
func (s *SQLite) Workers(ctx context.Context, limit int) ([]WorkerRecord, error) {
	rows, err := s.r.QueryContext(ctx, sqlListWorkers, clampLimit(limit, 200))
	if err != nil {
		return nil, fmt.Errorf("store: workers: %w", err)
	}
	defer rows.Close()
	out := []WorkerRecord{}
	for rows.Next() {
		var w WorkerRecord
		var target, rt string
		var mem, first, last int64
		var left sql.NullInt64
		var serving sql.NullString
		if err := rows.Scan(&w.ID, &w.Host, &w.Version, &target, &rt, &w.Devices, &mem, &first, &last, &left,
			&w.JobsDone, &serving, &w.Busy); err != nil {
			return nil, fmt.Errorf("store: workers: %w", err)
		}
		if serving.Valid {
			w.Serving = &fleet.WorkerServing{}
			if err := json.Unmarshal([]byte(serving.String), w.Serving); err != nil {
				return nil, fmt.Errorf("store: workers: %s serving: %w", w.ID, err)
			}
		}
		if err := json.Unmarshal([]byte(rt), &w.Runtime); err != nil {
			return nil, fmt.Errorf("store: workers: %s runtime: %w", w.ID, err)
		}
		w.Target, w.MemoryBytes = compat.Target(target), uint64(max(mem, 0))
		w.FirstSeen, w.LastSeen, w.Left = fromNano(first), fromNano(last), fromNullTime(left)
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: workers: %w", err)
	}
	return out, nil
}

// EnqueueJobs queues jobs of scan scanID (each model once per scan). A job
// whose probe a worker still runs for an ended scan (a deadline withdrew
// the rest) is not queued again: the scan adopts that job (fleet.Adopts),
// so the probe's result is recorded once, for it. The error wraps
// ErrInvalid for a job without a concrete target or a model.
func (s *SQLite) EnqueueJobs(ctx context.Context, scanID int64, jobs []NewJob) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: enqueue: %w", err)
	}
	defer tx.Rollback()
	now := unixNano(s.now())
	for _, j := range jobs {
		if _, err := compat.ParseResultTarget(string(j.Job.Target)); err != nil || j.Job.ModelID == "" {
			return fmt.Errorf("store: enqueue: %w: job %+v", ErrInvalid, j.Job)
		}
		id, err := resolveModel(ctx, tx, j.Job.ModelID)
		if err != nil {
			return fmt.Errorf("store: enqueue: %w", err)
		}
		if adopted, err := adopt(ctx, tx, scanID, id, j); err != nil {
			return fmt.Errorf("store: enqueue %s: %w", j.Job.ModelID, err)
		} else if adopted {
			continue
		}
		spec, err := jsonText(j.Job)
		if err != nil {
			return fmt.Errorf("store: enqueue: %w", err)
		}
		if _, err := tx.ExecContext(ctx, sqlInsertJob, scanID, j.Rank, id, string(j.Job.Target), j.RuntimeKey, spec, now, j.Job.Chips()); err != nil {
			return fmt.Errorf("store: enqueue %s: %w", j.Job.ModelID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: enqueue: %w", err)
	}
	return nil
}

// LeaseJobs grants w queued jobs it can hold (fleet.Holds) for free of its
// devices, in popularity order, as fleet.Pick chooses, until now+ttl.
// Leases past their expiry are taken back first, in the same transaction;
// requeued are the queue keys of the jobs that went back to the queue
// (other pollers may take them).
func (s *SQLite) LeaseJobs(ctx context.Context, w fleet.Worker, free int, now time.Time, ttl time.Duration) (leases []fleet.Lease, requeued []fleet.QueueKey, err error) {
	if err := s.SeeWorker(ctx, w, now); err != nil {
		return nil, nil, err
	}
	err = s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		leases = nil
		exp, err := s.expire(ctx, tx, now)
		if err != nil {
			return false, err
		}
		requeued = exp.Keys
		// Each job needs a device at least: free of them, and the one
		// that may wait for its devices, are the most Pick takes.
		jobs, err := queryJobs(ctx, tx, sqlNextJobs, string(w.Target), w.Runtime.RetestKey(), max(w.Devices, 1), free+1)
		if err != nil {
			return false, err
		}
		need := make([]int, len(jobs))
		for i, j := range jobs {
			need[i] = j.spec.Chips()
		}
		for _, i := range fleet.Pick(need, free) {
			j := jobs[i]
			if !fleet.Holds(j.key(), w) {
				return false, fmt.Errorf("job %d (%s, %s, %d devices) does not match worker %s", j.id, j.spec.Target, j.runtimeKey, j.spec.Chips(), w.ID)
			}
			if j.st, err = fleet.Grant(j.st, newLeaseID(), w.ID, now, ttl); err != nil {
				return false, err
			}
			j.lastWorker = w.Host
			if err := j.save(ctx, tx, now); err != nil {
				return false, err
			}
			leases = append(leases, fleet.Lease{ID: j.st.LeaseID, JobID: j.id, Attempt: j.st.Attempts,
				ExpiresAt: j.st.ExpiresAt, Job: j.spec})
		}
		return exp.any() || len(leases) > 0, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: lease: %w", err)
	}
	return leases, requeued, nil
}

// RenewLeases extends the leases of workerID named in ids to now+ttl; the
// others (expired, given back, another worker's) are lost. Leases past
// their expiry are taken back first; requeued are the queue keys of the
// jobs that went back to the queue.
func (s *SQLite) RenewLeases(ctx context.Context, workerID string, ids []string, now time.Time, ttl time.Duration) (renewed, lost []string, requeued []fleet.QueueKey, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		renewed, lost = nil, nil
		exp, err := s.expire(ctx, tx, now)
		if err != nil {
			return false, err
		}
		requeued = exp.Keys
		if _, err := tx.ExecContext(ctx, sqlTouchWorker, unixNano(now), workerID); err != nil {
			return false, err
		}
		for _, id := range ids {
			j, err := scanJob(tx.QueryRowContext(ctx, sqlJobByLease, id))
			if errors.Is(err, sql.ErrNoRows) {
				lost = append(lost, id)
				continue
			} else if err != nil {
				return false, err
			}
			if j.st.WorkerID != workerID {
				lost = append(lost, id)
				continue
			}
			if j.st, err = fleet.Renew(j.st, id, now, ttl); err != nil {
				lost = append(lost, id)
				continue
			}
			if err := j.save(ctx, tx, now); err != nil {
				return false, err
			}
			renewed = append(renewed, id)
		}
		return exp.any(), nil
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("store: renew leases: %w", err)
	}
	return renewed, lost, requeued, nil
}

// CompleteJob accepts the result of a current lease, once: in one
// transaction it checks the result against the job (fleet.CheckResult: an
// error wrapping fleet.ErrBadResult, and nothing changes), completes the
// job (fleet.Complete: an error wrapping fleet.ErrLeaseNotCurrent for any
// lease but the one holding the job now), and records the result (or, for
// a flaky one, the flaky event) with the scan and the worker's host. The
// result's tested_at is now, the server's time of receipt; the worker's
// own becomes its worker_tested_at.
func (s *SQLite) CompleteJob(ctx context.Context, req fleet.ResultRequest, now time.Time) (JobOutcome, error) {
	var out JobOutcome
	err := s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		// A lease that expired is no longer current; it is taken back by
		// the next lease, heartbeat or sweep, not by this refusal.
		j, err := scanJob(tx.QueryRowContext(ctx, sqlJobByLease, req.LeaseID))
		if errors.Is(err, sql.ErrNoRows) || (err == nil && j.st.WorkerID != req.WorkerID) {
			return false, fmt.Errorf("lease %q: %w", req.LeaseID, fleet.ErrLeaseNotCurrent)
		} else if err != nil {
			return false, err
		}
		if err := fleet.CheckResult(j.spec, j.runtimeKey, req, now); err != nil {
			return false, err
		}
		if j.st, err = fleet.Complete(j.st, req.LeaseID, now); err != nil {
			return false, err
		}
		// The server's clock orders results (fleet.MaxClockSkew): tested_at
		// is when it received this one; the worker's own time is kept.
		res := req.Result
		res.WorkerTestedAt, res.TestedAt = compat.Ptr(res.TestedAt.UTC()), now.UTC()
		res.ScanID, res.Worker = compat.Ptr(j.scanID), j.lastWorker
		out = JobOutcome{ScanID: j.scanID, ModelID: j.modelID, Result: res, Flaky: req.Flaky}
		if err := s.recordJobResult(ctx, tx, j, &out); err != nil {
			return false, err
		}
		if m := req.Serving; m != nil { // the serving probe's verdict (Job.Serve), stored as a local scan's
			sm := *m
			sm.MeasuredAt = now.UTC()  // the server's clock orders verdicts, as results'
			sm.Revision = res.Revision // the revision the job's probe ran at, which the serving probe ran on too
			if err := s.putServingResult(ctx, tx, j.modelID, sm); err != nil {
				return false, fmt.Errorf("serving result: %w", err)
			}
			out.Serving = &sm
		}
		if err := j.save(ctx, tx, now); err != nil {
			return false, err
		}
		_, err = tx.ExecContext(ctx, sqlWorkerDone, unixNano(now), req.WorkerID)
		return true, err
	})
	if err != nil {
		return JobOutcome{}, fmt.Errorf("store: complete job: %w", err)
	}
	return out, nil
}

// recordJobResult records out.Result for job j inside tx: a flaky event,
// or the result with its current row and event.
func (s *SQLite) recordJobResult(ctx context.Context, tx *sql.Tx, j jobRow, out *JobOutcome) error {
	if out.Flaky {
		return s.recordFlaky(ctx, tx, j.modelID, out.Result, j.spec.Previous)
	}
	if err := validResult(out.Result); err != nil {
		return fmt.Errorf("%w: %w", fleet.ErrBadResult, err)
	}
	rc := newRecorder(tx)
	rec, err := rc.record(ctx, j.modelID, out.Result)
	if err != nil {
		return err
	}
	out.Record = rec
	return rc.flush(ctx)
}

// ReleaseJob gives a current lease of workerID back: the job is queued
// again at once (not a lost lease), unless its scan ended (then it is
// cancelled, fleet.Settle); it returns the key of the queue it went back
// to (zero for none). The error wraps fleet.ErrLeaseNotCurrent for any
// other lease.
func (s *SQLite) ReleaseJob(ctx context.Context, workerID, leaseID string, now time.Time) (fleet.QueueKey, error) {
	var key fleet.QueueKey
	err := s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		j, err := scanJob(tx.QueryRowContext(ctx, sqlJobByLease, leaseID))
		if errors.Is(err, sql.ErrNoRows) || (err == nil && j.st.WorkerID != workerID) {
			return false, fmt.Errorf("lease %q: %w", leaseID, fleet.ErrLeaseNotCurrent)
		} else if err != nil {
			return false, err
		}
		if j.st, err = fleet.Release(j.st, leaseID, now); err != nil {
			return false, err
		}
		if err := settle(ctx, tx, &j); err != nil {
			return false, err
		}
		if j.st.State == fleet.Queued {
			key = j.key()
		}
		return true, j.save(ctx, tx, now)
	})
	if err != nil {
		return fleet.QueueKey{}, fmt.Errorf("store: release job: %w", err)
	}
	return key, nil
}

// ExpireLeases takes back every lease past its expiry at now: the job goes
// back to the queue, or, at its fleet.MaxLostLeases-th lost lease, is
// recorded as an error result (never held against the model).
func (s *SQLite) ExpireLeases(ctx context.Context, now time.Time) (Expired, error) {
	var out Expired
	err := s.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		var err error
		out, err = s.expire(ctx, tx, now)
		return out.any(), err
	})
	if err != nil {
		return Expired{}, fmt.Errorf("store: expire leases: %w", err)
	}
	return out, nil
}

// expire is ExpireLeases inside tx.
func (s *SQLite) expire(ctx context.Context, tx *sql.Tx, now time.Time) (Expired, error) {
	var out Expired
	due, err := queryJobs(ctx, tx, sqlDueJobs, unixNano(now))
	if err != nil || len(due) == 0 {
		return out, err
	}
	rc := newRecorder(tx)
	for _, j := range due {
		var expired bool
		if j.st, expired = fleet.Expire(j.st, now); !expired {
			continue
		}
		if err := settle(ctx, tx, &j); err != nil {
			return out, err
		}
		if err := j.save(ctx, tx, now); err != nil {
			return out, err
		}
		switch j.st.State {
		case fleet.Cancelled: // its scan ended: not queued again
			continue
		case fleet.Queued:
			out.Requeued++
			if k := j.key(); !slices.Contains(out.Keys, k) {
				out.Keys = append(out.Keys, k)
			}
			continue
		}
		res, err := s.lostResult(ctx, tx, j, now)
		if err != nil {
			return out, err
		}
		rec, err := rc.record(ctx, j.modelID, res)
		if err != nil {
			return out, err
		}
		out.Failed = append(out.Failed, JobOutcome{ScanID: j.scanID, ModelID: j.modelID, Result: res, Record: rec})
	}
	if len(out.Failed) > 0 {
		if err := rc.flush(ctx); err != nil {
			return out, err
		}
	}
	return out, nil
}

// lostResult is the error result of a job that lost its every lease.
func (s *SQLite) lostResult(ctx context.Context, tx *sql.Tx, j jobRow, now time.Time) (compat.Result, error) {
	var rtText string
	if err := tx.QueryRowContext(ctx, sqlScanRuntime, j.scanID).Scan(&rtText); err != nil {
		return compat.Result{}, fmt.Errorf("scan %d runtime: %w", j.scanID, err)
	}
	var rt compat.Runtime
	if err := json.Unmarshal([]byte(rtText), &rt); err != nil {
		return compat.Result{}, fmt.Errorf("scan %d runtime: %w", j.scanID, err)
	}
	rt = jobRuntime(rt, j.runtimeKey)
	return compat.Result{
		Target: j.spec.Target, Status: compat.StatusError, FailureClass: compat.Ptr(compat.ClassOther),
		Message: compat.Ptr(fleet.LostMessage(j.st.Lost, j.lastWorker)), Mode: compat.Ptr(j.spec.Mode),
		Revision: j.spec.Revision, TestedAt: now.UTC(), Runtime: rt, Task: j.spec.Task,
		Repro:  compat.ReproOn(j.spec.ModelID, j.spec.Revision, j.spec.Target, j.spec.Mode, j.spec.Chips()),
		ScanID: compat.Ptr(j.scanID), Worker: j.lastWorker,
	}, nil
}

// ScanJobs counts the jobs of scan scanID by state (all zero when none).
func (s *SQLite) ScanJobs(ctx context.Context, scanID int64) (JobCounts, error) {
	rows, err := s.r.QueryContext(ctx, sqlScanJobs, scanID)
	if err != nil {
		return JobCounts{}, fmt.Errorf("store: scan jobs: %w", err)
	}
	defer rows.Close()
	var c JobCounts
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return JobCounts{}, fmt.Errorf("store: scan jobs: %w", err)
		}
		c.Total += n
		switch fleet.State(state) {
		case fleet.Queued:
			c.Queued = n
		case fleet.Leased:
			c.Leased = n
		case fleet.Done:
			c.Done = n
		case fleet.Failed:
			c.Failed = n
		case fleet.Cancelled:
			c.Cancelled = n
		}
	}
	if err := rows.Err(); err != nil {
		return JobCounts{}, fmt.Errorf("store: scan jobs: %w", err)
	}
	return c, nil
}

// QueueStats is the open jobs by target and runtime, and the leases lost.
func (s *SQLite) QueueStats(ctx context.Context) (QueueStats, error) {
	var st QueueStats
	rows, err := s.r.QueryContext(ctx, sqlOpenJobs)
	if err != nil {
		return st, fmt.Errorf("store: queue stats: %w", err)
	}
	defer rows.Close()
	byKey := map[[2]string]*QueueDepth{}
	for rows.Next() {
		var target, key, state string
		var n int
		if err := rows.Scan(&target, &key, &state, &n); err != nil {
			return st, fmt.Errorf("store: queue stats: %w", err)
		}
		d := byKey[[2]string{target, key}]
		if d == nil {
			st.Open = append(st.Open, QueueDepth{Target: compat.Target(target), RuntimeKey: key})
			d = &st.Open[len(st.Open)-1]
			byKey[[2]string{target, key}] = d
		}
		if fleet.State(state) == fleet.Queued {
			d.Queued = n
		} else {
			d.Leased = n
		}
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("store: queue stats: %w", err)
	}
	if err := s.r.QueryRowContext(ctx, sqlLostLeases).Scan(&st.LostLeases); err != nil {
		return st, fmt.Errorf("store: queue stats: %w", err)
	}
	return st, nil
}

// cancelScanJobs ends the open jobs of scan scanID inside tx, each by
// fleet.Cancel, and returns how many.
func cancelScanJobs(ctx context.Context, tx *sql.Tx, scanID int64, now time.Time) (int, error) {
	open, err := queryJobs(ctx, tx, sqlOpenScanJobs, scanID)
	if err != nil {
		return 0, err
	}
	for _, j := range open {
		j.st = fleet.Cancel(j.st)
		if err := j.save(ctx, tx, now); err != nil {
			return 0, err
		}
	}
	return len(open), nil
}

// queryJobs reads the jobs a query selects.
func queryJobs(ctx context.Context, q querier, query string, args ...any) ([]jobRow, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []jobRow
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// inTx runs fn in one write transaction, committed when fn returns nil.
// fn reports whether it changed what the site shows (a result, a job's
// state); only then is the data's change time moved, so that heartbeats
// and empty polls leave the pages' caches alone.
func (s *SQLite) inTx(ctx context.Context, fn func(tx *sql.Tx) (bool, error)) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	changed, err := fn(tx)
	if err != nil {
		return err
	}
	if changed {
		if err := s.touch(ctx, tx); err != nil {
			return err
		}
	}
	return s.commit(tx)
}

// any reports whether expiring changed a job.
func (e Expired) any() bool { return e.Requeued > 0 || len(e.Failed) > 0 }

// newLeaseID is an unguessable lease token.
func newLeaseID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
