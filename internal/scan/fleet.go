package scan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// This file is a scan whose probes run on workers (serve --dispatch
// workers): planning, preflight and the outcomes decided without a probe
// are as in a local scan; every model to probe becomes a job of the durable
// queue, in popularity order, and the scan ends when its queue is drained.

// Fleet is the work queue a scan hands its probes to;
// *dispatch.Dispatcher is the real one.
type Fleet interface {
	// Group waits up to wait for live workers of target and returns the
	// group the scan plans for and the others (a mixed fleet); the error
	// wraps fleet.ErrNoWorkers when none came.
	Group(ctx context.Context, target compat.Target, wait time.Duration) (fleet.Group, []fleet.Group, error)
	// Enqueue queues jobs of the scan.
	Enqueue(ctx context.Context, scanID int64, jobs []store.NewJob) error
	// Wait returns when the scan has no open job, reporting its counts.
	Wait(ctx context.Context, scanID int64, progress func(store.JobCounts)) error
	// Cancel ends the scan's open jobs without results.
	Cancel(ctx context.Context, scanID int64) (int, error)
}

// defaultFleetWait is how long a scan waits for a live worker.
const defaultFleetWait = 10 * time.Minute

// fleetEnvironment is the target and runtime of the workers the scan
// plans for, and their hosts' figures for the memory budget.
func (s *Scanner) fleetEnvironment(ctx context.Context, opts Options) (compat.Target, compat.Runtime, Host, error) {
	wait := s.FleetWait
	if wait <= 0 {
		wait = defaultFleetWait
	}
	g, others, err := s.Fleet.Group(ctx, opts.Target, wait)
	if err != nil {
		return "", compat.Runtime{}, Host{}, fmt.Errorf("scan: workers: %w", err)
	}
	for _, o := range others {
		s.log().Warn("workers of another target or runtime get no job of this scan", "target", o.Target,
			"runtime", o.RuntimeKey, "workers", len(o.Workers), "planned_runtime", g.RuntimeKey)
	}
	s.log().Info("scan plans for workers", "target", g.Target, "runtime", g.RuntimeKey, "workers", len(g.Workers), "devices", g.Devices)
	return g.Target, g.Runtime, Host{MemoryBytes: g.MemoryBytes, Probes: g.PerWorker, DeviceMemory: opts.DeviceMemory}, nil
}

// queueJobs plans and preflights the models (fetching config.json ahead, as
// the pipeline does), records what needs no probe, and queues the rest for
// the workers; then it waits until the queue is drained.
func (r *run) queueJobs(ctx context.Context, models []hub.ModelInfo) error {
	wctx := context.WithoutCancel(ctx)
	slots, window, fetched := r.fetchAhead(ctx, models)
	var batch []store.NewJob
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := r.s.Fleet.Enqueue(wctx, r.scan.ID, batch); err != nil {
			return fmt.Errorf("scan: queue jobs: %w", err)
		}
		r.mu.Lock()
		r.queued += len(batch)
		r.mu.Unlock()
		batch = nil
		return nil
	}
	var err error
plan:
	for i, m := range models {
		var j *entry
		select {
		case j = <-slots[i]:
		default:
			// The next model is still being fetched: let the workers
			// start on what is planned meanwhile.
			if err = flush(); err != nil {
				break plan
			}
			select {
			case j = <-slots[i]:
			case <-ctx.Done():
				break plan
			}
		}
		<-window
		switch {
		case j == nil: // unchanged
			r.finishModel(wctx, m.ID, nil, false)
		case j.result != nil:
			r.record(wctx, j, *j.result, false)
		default:
			batch = append(batch, r.newJob(i, j))
		}
	}
	fetched()
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r.mu.Lock()
	r.planned = true // every model is decided or queued
	r.mu.Unlock()
	return r.drain(ctx)
}

// newJob is the job of model i of the listing.
func (r *run) newJob(rank int, j *entry) store.NewJob {
	var prev compat.Status
	if j.previous != nil {
		prev = j.previous.Status
	}
	return store.NewJob{Rank: rank, RuntimeKey: r.runtime.RetestKey(), Job: fleet.Job{
		ModelID: j.info.ID, Revision: j.info.SHA, Task: j.info.PipelineTag, Target: r.target, Mode: j.plan.Mode,
		Files: j.files, InputFiles: j.inputs, PlanNote: planNote(j), MemoryBudgetBytes: j.plan.Budget,
		TimeoutS: r.opts.Timeout.Seconds(), Previous: prev, Devices: j.plan.Devices,
	}}
}

// drain waits until the scan's queue is drained, reporting progress as
// the workers' results come in.
func (r *run) drain(ctx context.Context) error {
	wctx := context.WithoutCancel(ctx)
	return r.s.Fleet.Wait(ctx, r.scan.ID, func(c store.JobCounts) {
		r.mu.Lock()
		r.jobs = c
		if r.resumed {
			// Every planned model was either decided by the earlier
			// process (and counted) or queued.
			r.done = max(r.scan.Planned-c.Total, 0)
		}
		p := r.progressLocked()
		r.mu.Unlock()
		r.report(wctx, p)
	})
}

// leftQueued reports whether a scan that ended with runErr leaves its jobs
// in the queue for the next server process (this one is stopping), rather
// than ending: its record stays running, and store.ResumeScans hands it to
// the next process. Only a scan whose every model was decided or queued
// is left so (a resumed scan counts what is not queued as done); one
// stopped while still planning is interrupted, as a local scan is, and
// its jobs are cancelled.
func (r *run) leftQueued(runErr error) bool {
	if r.s.Fleet == nil || !(errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded)) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.planned || r.resumed
}

// Resume waits for the queue of a scan that an earlier server process
// left running (store.ResumeScans) and finishes its record; hooks observe
// it as they would a new scan.
func (s *Scanner) Resume(ctx context.Context, scanID int64, hooks Hooks) (store.Scan, error) {
	if s.Fleet == nil {
		return store.Scan{}, errors.New("scan: resume needs workers (--dispatch workers)")
	}
	lock, err := s.lock() // one scan per database, a resumed one too
	if err != nil {
		return store.Scan{}, err
	}
	defer lock.Release()
	if err := lock.SetScan(scanID); err != nil {
		s.log().Warn("scan lock: the scan id is not recorded for other processes", "err", err)
	}
	sc, err := s.Store.GetScan(ctx, scanID)
	if err != nil {
		return sc, fmt.Errorf("scan: resume %d: %w", scanID, err)
	}
	var opts Options
	if err := json.Unmarshal([]byte(sc.Params), &opts); err != nil {
		s.log().Warn("resume: the scan's options are unreadable", "scan_id", scanID, "err", err)
	}
	r := &run{s: s, opts: withDefaults(opts), hooks: s.Hooks.then(hooks), scan: sc,
		target: compat.Target(sc.Target), runtime: sc.Runtime, unchanged: sc.Unchanged, planned: true, resumed: true}
	s.log().Info("resuming a scan left to its queue", "scan_id", scanID, "planned", sc.Planned)
	return r.finish(r.drain(ctx))
}
