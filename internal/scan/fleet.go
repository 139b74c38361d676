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
	// Wait returns when the scan has no open job, reporting its counts;
	// an error wrapping fleet.ErrStalled once no live worker could take
	// its queued jobs for longer than bound.
	Wait(ctx context.Context, scanID int64, bound time.Duration, progress func(store.JobCounts)) error
	// Replan moves the scan's queued jobs that no worker can take to
	// group g's runtime, each with the memory budget budgetOf gives for
	// its devices, and records note on the scan.
	Replan(ctx context.Context, scanID int64, g fleet.Group, budgetOf func(devices int) int64, note string) (int, error)
	// Withdraw ends the scan's queued jobs without results; its leased
	// ones may still finish.
	Withdraw(ctx context.Context, scanID int64) (int, error)
}

// defaultFleetWait is how long a scan waits for a live worker.
const defaultFleetWait = 10 * time.Minute

// fleetWait is how long a scan waits for a live worker that can take its
// jobs: at its start, and whenever its queued jobs match none.
func (s *Scanner) fleetWait() time.Duration {
	if s.FleetWait > 0 {
		return s.FleetWait
	}
	return defaultFleetWait
}

// fleetEnvironment is the target and runtime of the workers the scan
// plans for, and their hosts' figures for the memory budget.
func (s *Scanner) fleetEnvironment(ctx context.Context, opts Options) (compat.Target, compat.Runtime, Host, error) {
	g, others, err := s.Fleet.Group(ctx, opts.Target, s.fleetWait())
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
	fctx, stopFetching := context.WithCancel(ctx) // stopped when the scan gives way
	defer stopFetching()
	slots, window, fetched := r.fetchAhead(fctx, models)
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
			case <-fctx.Done():
				break plan
			}
		}
		<-window
		switch {
		case j == nil: // unchanged
			r.finishModel(wctx, m.ID, nil, false)
		case j.result != nil:
			r.record(wctx, j, *j.result, false)
		case r.yields():
			break plan // what is queued is withdrawn by drain
		default:
			batch = append(batch, r.newJob(i, j))
		}
	}
	stopFetching()
	fetched()
	if err == nil && !r.yielded.Load() {
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
		Files: j.files, InputFiles: j.inputs, PlanNote: planNote(j), MemoryBudgetBytes: j.plan.Budget, NoTrain: j.plan.NoTrain,
		TimeoutS: r.opts.Timeout.Seconds(), Previous: prev, Devices: j.plan.Devices,
		Serve: j.plan.Mode == compat.ModeFull && r.declaredServed(j),
	}}
}

// drain waits until the scan's queue is drained, reporting progress as
// the workers' results come in. When no live worker can take its queued
// jobs for longer than the fleet wait (a rollout to another runtime), it
// re-plans them for the runtime the fleet runs now (same target, that
// fleet's memory budget), or, with no worker of the target left at all,
// ends the scan with that reason (an error wrapping fleet.ErrStalled and
// fleet.ErrNoWorkers: the service retries later).
func (r *run) drain(ctx context.Context) error {
	wctx := context.WithoutCancel(ctx)
	if r.opts.Yield != nil {
		defer r.withdrawOnYield(ctx)()
	}
	for {
		err := r.s.Fleet.Wait(ctx, r.scan.ID, r.s.fleetWait(), func(c store.JobCounts) {
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
		if !errors.Is(err, fleet.ErrStalled) {
			return err
		}
		if err := r.replan(ctx, err); err != nil {
			return err
		}
	}
}

// yieldPoll is how often a fleet scan that may give way (Options.Yield)
// asks whether it does.
const yieldPoll = 100 * time.Millisecond

// withdrawOnYield watches Options.Yield while the scan waits for its jobs:
// once the scan gives way, its queued jobs are withdrawn (the leased ones,
// probes in flight, finish), and the scan ends when those have. stop ends
// the watch.
func (r *run) withdrawOnYield(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(yieldPoll)
		defer t.Stop()
		for {
			if r.yields() {
				n, err := r.s.Fleet.Withdraw(context.WithoutCancel(ctx), r.scan.ID)
				if err != nil {
					r.s.log().Error("giving way: withdrawing the queued jobs", "scan_id", r.scan.ID, "err", err)
				} else {
					r.s.log().Info("the scan gives way to a waiting scan: its queued jobs are withdrawn", "scan_id", r.scan.ID, "jobs", n)
				}
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// replan moves the stalled queued jobs to the group of live workers of the
// scan's target, or says why it cannot.
func (r *run) replan(ctx context.Context, stall error) error {
	g, _, err := r.s.Fleet.Group(ctx, r.target, 0)
	if err != nil {
		return fmt.Errorf("scan: %w; %w", stall, err)
	}
	budget, _ := Budget(g.Target, g.Runtime, Host{MemoryBytes: g.MemoryBytes, Probes: g.PerWorker})
	note := fmt.Sprintf("re-planned for %s runtime %s at %s: no live worker could take the queued jobs for %v (a rollout)",
		g.Target, g.RuntimeKey, r.s.now().UTC().Format(time.RFC3339), r.s.fleetWait())
	budgetOf := func(devices int) int64 { return shardBudget(g.Target, budget, devices) }
	n, err := r.s.Fleet.Replan(ctx, r.scan.ID, g, budgetOf, note)
	if err != nil {
		return fmt.Errorf("scan: re-plan: %w", err)
	}
	r.s.log().Warn("queued jobs re-planned for the runtime the fleet runs now", "scan_id", r.scan.ID, "jobs", n,
		"runtime", g.RuntimeKey, "workers", len(g.Workers), "cause", stall.Error())
	r.mu.Lock()
	r.runtime = g.Runtime
	r.mu.Unlock()
	return nil
}

// leftQueued reports whether a scan that ended with runErr leaves its jobs
// in the queue for the next server process (this one is stopping), rather
// than ending: its record stays running, and store.ResumeScans hands it to
// the next process. Only a shutdown leaves a scan so, never its deadline
// or a stall (the scan ends there, its queued jobs withdrawn), and only a
// scan whose every model was decided or queued (a resumed scan counts what
// is not queued as done); one stopped while still planning is interrupted,
// as a local scan is.
func (r *run) leftQueued(runErr error) bool {
	if r.s.Fleet == nil || !errors.Is(runErr, context.Canceled) || errors.Is(runErr, ErrScanTimeout) {
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
	opts = withDefaults(opts)
	r := &run{s: s, opts: opts, hooks: s.Hooks.then(hooks), scan: sc,
		target: compat.Target(sc.Target), runtime: sc.Runtime, unchanged: sc.Unchanged, planned: true, resumed: true}
	defer s.keepOwner(scanID)()
	// The scan's deadline runs from its start, not from its resumption.
	ctx, cancel := withDeadlineFrom(ctx, sc.StartedAt, opts)
	defer cancel()
	s.log().Info("resuming a scan left to its queue", "scan_id", scanID, "planned", sc.Planned)
	return r.finish(timedOut(ctx, r.drain(ctx)))
}
