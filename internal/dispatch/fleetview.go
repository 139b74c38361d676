package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// Stats is the fleet and its queue at one moment.
type Stats struct {
	At      time.Time
	Queue   store.QueueStats
	Workers []fleet.WorkerView
	Live    int // workers heard from within their liveness window
	Busy    int // live workers holding at least one lease
	// Desired is the scaling hint (fleet.DesiredWorkers): workers of the
	// planned group's size that would hold every open job at once.
	Desired int
	// Stalled is the queued jobs no live worker can take (fleet.Unserved):
	// a rollout to another runtime, a fleet gone.
	Stalled int
}

// maxWorkers bounds the fleet listing.
const maxWorkers = 500

// Stats reads the fleet and the queue now.
func (d *Dispatcher) Stats(ctx context.Context) (Stats, error) {
	q, err := d.st.QueueStats(ctx)
	if err != nil {
		return Stats{}, err
	}
	recs, err := d.st.Workers(ctx, maxWorkers)
	if err != nil {
		return Stats{}, err
	}
	now := d.now()
	planned := map[string]bool{} // target|runtime key of open jobs
	open := 0
	for _, o := range q.Open {
		planned[string(o.Target)+"|"+o.RuntimeKey] = true
		open += o.Queued + o.Leased
	}
	st := Stats{At: now, Queue: q, Workers: make([]fleet.WorkerView, 0, len(recs))}
	perWorker := 1
	seen := fleetOf(recs)
	for _, o := range q.Open {
		if len(fleet.Unserved([]fleet.QueueKey{{Target: o.Target, RuntimeKey: o.RuntimeKey}}, seen, now, d.ttl)) > 0 {
			st.Stalled += o.Queued
		}
	}
	for i, r := range recs {
		v := fleet.WorkerView{ID: r.ID, Host: r.Host, Target: r.Target, Device: r.Runtime.Device, Devices: r.Devices,
			Runtime: r.Runtime, LastSeen: r.LastSeen, Live: seen[i].LiveAt(now, d.ttl), Busy: r.Busy,
			JobsDone: r.JobsDone, Planned: planned[string(r.Target)+"|"+r.Runtime.RetestKey()], Serving: r.Serving}
		if v.Live {
			st.Live++
			if v.Busy > 0 {
				st.Busy++
			}
			if v.Planned {
				perWorker = max(perWorker, v.Devices)
			}
		}
		st.Workers = append(st.Workers, v)
	}
	st.Desired = fleet.DesiredWorkers(open, perWorker, 0)
	return st, nil
}

// Workers is the fleet as GET /api/v1/workers shows it.
func (d *Dispatcher) Workers(ctx context.Context) ([]fleet.WorkerView, error) {
	st, err := d.Stats(ctx)
	if err != nil {
		return nil, err
	}
	return st.Workers, nil
}

// Snapshot is the figures of the last sweep (zero before the first).
func (d *Dispatcher) Snapshot() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Run takes expired leases back and refreshes the figures, every
// sweepInterval, until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) {
	t := time.NewTicker(sweepInterval(d.ttl))
	defer t.Stop()
	for {
		d.sweep(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweepInterval is how often Run sweeps: every eighth of the lease TTL,
// between 100 ms and 15 s.
func sweepInterval(ttl time.Duration) time.Duration {
	return min(max(ttl/8, 100*time.Millisecond), 15*time.Second)
}

// forgetInterval is how often a sweep drops the workers gone longer than
// fleet.ForgetAfter.
const forgetInterval = time.Hour

// forget drops, at most once per forgetInterval, the workers not heard
// from for fleet.ForgetAfter (each worker process registers under a fresh
// id: without it the fleet's table would keep every restart).
func (d *Dispatcher) forget(ctx context.Context, now time.Time) {
	if !d.forgotAt.IsZero() && now.Sub(d.forgotAt) < forgetInterval {
		return
	}
	n, err := d.st.ForgetWorkers(ctx, now.Add(-fleet.ForgetAfter))
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("forget workers", "err", err)
		}
		return
	}
	d.forgotAt = now
	if n > 0 {
		d.log.Info("workers forgotten", "workers", n, "unseen_for", fleet.ForgetAfter.String())
		d.notify()
	}
}

func (d *Dispatcher) sweep(ctx context.Context) {
	exp, err := d.st.ExpireLeases(ctx, d.now())
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("expire leases", "err", err)
		}
		return
	}
	if exp.Requeued > 0 || len(exp.Failed) > 0 {
		d.log.Warn("leases expired", "requeued", exp.Requeued, "failed", len(exp.Failed))
		for _, o := range exp.Failed {
			d.log.Error("job failed: every lease was lost", "model", o.ModelID, "scan_id", o.ScanID, "last_worker", o.Result.Worker)
			if d.hooks.Result != nil {
				d.hooks.Result(o)
			}
		}
		d.notify()
		d.wake(exp.Keys...)
	}
	d.forget(ctx, d.now())
	st, err := d.Stats(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("fleet stats", "err", err)
		}
		return
	}
	d.mu.Lock()
	d.stats = st
	d.mu.Unlock()
	if d.hooks.Stats != nil {
		d.hooks.Stats(st)
	}
}

// Group waits up to wait for live workers of target (auto: tpu workers
// when any, else cpu) and returns the group a scan plans for, and the
// others (fleet.PlanGroup). The error wraps fleet.ErrNoWorkers when none
// came.
func (d *Dispatcher) Group(ctx context.Context, target compat.Target, wait time.Duration) (fleet.Group, []fleet.Group, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	for {
		changed := d.watch()
		recs, err := d.st.Workers(ctx, maxWorkers)
		if err != nil {
			return fleet.Group{}, nil, err
		}
		g, others, err := fleet.PlanGroup(fleetOf(recs), target, d.now(), d.ttl)
		if !errors.Is(err, fleet.ErrNoWorkers) {
			return g, others, err
		}
		select {
		case <-changed:
		case <-poll.C:
		case <-deadline.C:
			return g, others, fmt.Errorf("%w (waited %v for one to register)", err, wait)
		case <-ctx.Done():
			return g, others, ctx.Err()
		}
	}
}

// fleetOf is the workers as the fleet's decisions see them.
func fleetOf(recs []store.WorkerRecord) []fleet.Seen {
	seen := make([]fleet.Seen, 0, len(recs))
	for _, r := range recs {
		seen = append(seen, fleet.Seen{Worker: r.Worker, LastSeen: r.LastSeen, Left: r.Left})
	}
	return seen
}

// Enqueue queues a scan's jobs and wakes the workers waiting for work.
func (d *Dispatcher) Enqueue(ctx context.Context, scanID int64, jobs []store.NewJob) error {
	if len(jobs) == 0 {
		return nil
	}
	if err := d.st.EnqueueJobs(ctx, scanID, jobs); err != nil {
		return err
	}
	d.notify()
	var keys []fleet.QueueKey
	for _, j := range jobs {
		if k := j.Job.Key(j.RuntimeKey); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	d.wake(keys...)
	return nil
}

// Wait returns when scan scanID has no open job, calling progress with
// its counts whenever they may have changed; ctx's error when it ends
// first (the jobs stay queued). While no live worker can take its queued
// jobs (fleet.Unserved: a rollout to another runtime, a fleet gone) the
// scan is stalled: Wait logs it, records it on the scan (stalled_since,
// fleet_note) and, once it lasted longer than bound, returns an error
// wrapping fleet.ErrStalled for the scan to re-plan or end.
func (d *Dispatcher) Wait(ctx context.Context, scanID int64, bound time.Duration, progress func(store.JobCounts)) error {
	poll := time.NewTicker(2 * time.Second)
	defer poll.Stop()
	var last store.JobCounts
	var stalled *time.Time
	for first := true; ; first = false {
		changed := d.watch()
		c, err := d.st.ScanJobs(ctx, scanID)
		if err != nil {
			return err
		}
		if (first || c != last) && progress != nil {
			progress(c)
		}
		last = c
		if c.Open() == 0 {
			return d.clearStall(ctx, scanID, stalled)
		}
		if stalled, err = d.checkStall(ctx, scanID, stalled, bound); err != nil {
			return err
		}
		select {
		case <-changed:
		case <-poll.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// checkStall updates scan scanID's stall, stalled since *since (nil: not
// stalled), and returns it; the error wraps fleet.ErrStalled once the
// stall lasted longer than bound.
func (d *Dispatcher) checkStall(ctx context.Context, scanID int64, since *time.Time, bound time.Duration) (*time.Time, error) {
	keys, err := d.st.ScanQueueKeys(ctx, scanID)
	if err != nil {
		return since, err
	}
	var unserved []fleet.QueueKey
	if len(keys) > 0 {
		recs, err := d.st.Workers(ctx, maxWorkers)
		if err != nil {
			return since, err
		}
		unserved = fleet.Unserved(keys, fleetOf(recs), d.now(), d.ttl)
	}
	if len(unserved) == 0 {
		return nil, d.clearStall(ctx, scanID, since)
	}
	now := d.now()
	if since == nil {
		since = &now
		note := fmt.Sprintf("no live worker runs %s; waiting up to %v for one (then the jobs are re-planned for the runtime the fleet runs)",
			keyList(unserved), bound)
		d.log.Warn("no live worker can take the scan's queued jobs", "scan_id", scanID, "needs", keyList(unserved),
			"waiting", bound.String())
		if err := d.st.SetScanStall(ctx, scanID, since, note); err != nil {
			return since, err
		}
	}
	if now.Sub(*since) > bound {
		return since, fmt.Errorf("dispatch: scan %d: %w: none runs %s since %s (%v)", scanID, fleet.ErrStalled,
			keyList(unserved), since.UTC().Format(time.RFC3339), bound)
	}
	return since, nil
}

// clearStall clears a stall recorded on the scan (since is not nil).
func (d *Dispatcher) clearStall(ctx context.Context, scanID int64, since *time.Time) error {
	if since == nil {
		return nil
	}
	d.log.Info("the scan's queued jobs have a live worker again", "scan_id", scanID)
	return d.st.SetScanStall(ctx, scanID, nil, "")
}

// keyList names queue keys for people: "cpu runtime 2.15.0|…".
func keyList(keys []fleet.QueueKey) string {
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, string(k.Target)+" runtime "+k.RuntimeKey)
	}
	return strings.Join(parts, ", ")
}

// Replan moves scan scanID's queued jobs that no worker can take to the
// group the fleet runs now (its runtime, and budgetOf a job's devices for
// its memory), records note on the scan, and wakes that group's long
// polls. It returns how many jobs moved.
func (d *Dispatcher) Replan(ctx context.Context, scanID int64, g fleet.Group, budgetOf func(devices int) int64, note string) (int, error) {
	n, err := d.st.ReplanJobs(ctx, scanID, g.Target, g.Runtime, budgetOf, note)
	if err != nil {
		return 0, err
	}
	d.notify()
	d.wake(fleet.QueueKey{Target: g.Target, RuntimeKey: g.RuntimeKey})
	return n, nil
}

// Withdraw ends a scan's queued jobs without results (the scan ended
// before its queue drained); its leased jobs may still finish.
func (d *Dispatcher) Withdraw(ctx context.Context, scanID int64) (int, error) {
	n, err := d.st.WithdrawJobs(ctx, scanID)
	if err == nil && n > 0 {
		d.notify()
	}
	return n, err
}
