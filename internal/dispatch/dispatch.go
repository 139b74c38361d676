// Package dispatch is the server's side of the worker fleet (`scanner serve
// --dispatch workers`): it answers the /api/v1/work/… requests (register,
// lease with a long poll, heartbeat, result, release, leave) from the
// durable queue in the store, wakes only the long polls a change of the
// queue concerns, takes expired leases back on a timer, tells a scan which
// runtime its workers run, when its queue is drained and when no live
// worker can take it (a rollout), and keeps the fleet's figures for
// /metrics, /api/v1/workers and the site's notice.
//
// The store decides nothing: every job transition is one of internal/fleet's
// pure functions, applied in one transaction.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// Store is the durable queue; *store.SQLite implements it. Lease errors
// wrap fleet.ErrLeaseNotCurrent, result checks fleet.ErrBadResult.
type Store interface {
	SeeWorker(ctx context.Context, w fleet.Worker, now time.Time) error
	Workers(ctx context.Context, limit int) ([]store.WorkerRecord, error)
	EnqueueJobs(ctx context.Context, scanID int64, jobs []store.NewJob) error
	LeaseJobs(ctx context.Context, w fleet.Worker, max int, now time.Time, ttl time.Duration) ([]fleet.Lease, []fleet.QueueKey, error)
	RenewLeases(ctx context.Context, workerID string, ids []string, now time.Time, ttl time.Duration) (renewed, lost []string, requeued []fleet.QueueKey, err error)
	CompleteJob(ctx context.Context, req fleet.ResultRequest, now time.Time) (store.JobOutcome, error)
	ReleaseJob(ctx context.Context, workerID, leaseID string, now time.Time) (fleet.QueueKey, error)
	ExpireLeases(ctx context.Context, now time.Time) (store.Expired, error)
	ScanJobs(ctx context.Context, scanID int64) (store.JobCounts, error)
	QueueStats(ctx context.Context) (store.QueueStats, error)
	WithdrawJobs(ctx context.Context, scanID int64) (int, error)
	ScanQueueKeys(ctx context.Context, scanID int64) ([]fleet.QueueKey, error)
	SetScanStall(ctx context.Context, scanID int64, since *time.Time, note string) error
	ReplanJobs(ctx context.Context, scanID int64, target compat.Target, rt compat.Runtime, budgetOf func(devices int) int64, note string) (int, error)
	LeaveWorker(ctx context.Context, id string, now time.Time) error
	ForgetWorkers(ctx context.Context, seenBefore time.Time) (int, error)
}

var _ Store = (*store.SQLite)(nil)

// ErrBadRequest wraps a request that is not the protocol's (400).
var ErrBadRequest = errors.New("bad work request")

// ErrClosed: the dispatcher is shutting down (503; workers retry).
var ErrClosed = errors.New("dispatcher closed")

// Hooks observe the fleet; every field is optional.
type Hooks struct {
	// Result is called for every result recorded from the queue: those
	// workers posted, and the errors of jobs that lost every lease.
	Result func(o store.JobOutcome)
	// Stats is called with fresh figures after every sweep.
	Stats func(s Stats)
}

// Config configures a Dispatcher.
type Config struct {
	LeaseTTL time.Duration // fleet.DefaultLeaseTTL when zero
	Logger   *slog.Logger
	Hooks    Hooks
	Now      func() time.Time // the clock; time.Now when nil
	// MaxHold is the longest a lease request is held open, whatever its
	// wait_s (fleet.MaxWait when zero): a long poll may end early with no
	// jobs, and a worker asks again. Tests that probe the route hold less.
	MaxHold time.Duration
}

// Dispatcher serves the fleet from the store.
type Dispatcher struct {
	st    Store
	ttl   time.Duration
	log   *slog.Logger
	hooks Hooks
	now   func() time.Time
	hold  time.Duration // Config.MaxHold

	mu sync.Mutex
	// changed is closed (and replaced) at every change of the queue or
	// fleet, for the few that wait on any (a scan's Wait, Group).
	changed chan struct{}
	// pollers are the long polls waiting for a job: a change of the queue
	// wakes only those that could take it (wake).
	pollers map[*poller]struct{}
	closed  chan struct{}
	stats   Stats
	once    sync.Once

	// forgotAt is when the sweep last dropped the workers gone longer than
	// fleet.ForgetAfter (only the sweep reads and writes it).
	forgotAt time.Time
}

// poller is one long poll waiting for jobs.
type poller struct {
	w    fleet.Worker
	free int           // jobs it asks for
	wake chan struct{} // one buffered wake-up
}

// New returns a dispatcher over st.
func New(st Store, cfg Config) *Dispatcher {
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = fleet.DefaultLeaseTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxHold <= 0 || cfg.MaxHold > fleet.MaxWait {
		cfg.MaxHold = fleet.MaxWait
	}
	return &Dispatcher{st: st, ttl: cfg.LeaseTTL, log: cfg.Logger, hooks: cfg.Hooks, now: cfg.Now, hold: cfg.MaxHold,
		changed: make(chan struct{}), closed: make(chan struct{}), pollers: map[*poller]struct{}{}}
}

// LeaseTTL is the lease time to live.
func (d *Dispatcher) LeaseTTL() time.Duration { return d.ttl }

// Close wakes every long poll and refuses new ones, so that the web
// server's shutdown does not wait for them.
func (d *Dispatcher) Close() { d.once.Do(func() { close(d.closed) }) }

// notify wakes whoever waits for a change.
func (d *Dispatcher) notify() {
	d.mu.Lock()
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
}

// wake wakes the long polls that could take a queued job of one of keys
// (fleet.CanTake), and no other: a hundred idle workers of another runtime,
// or with no room, sleep through it.
func (d *Dispatcher) wake(keys ...fleet.QueueKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for p := range d.pollers {
		for _, k := range keys {
			if fleet.CanTake(k, p.w, p.free) {
				select {
				case p.wake <- struct{}{}:
				default: // already woken
				}
				break
			}
		}
	}
}

// addPoller registers a long poll until the returned func is called.
func (d *Dispatcher) addPoller(w fleet.Worker, free int) (*poller, func()) {
	p := &poller{w: w, free: free, wake: make(chan struct{}, 1)}
	d.mu.Lock()
	d.pollers[p] = struct{}{}
	d.mu.Unlock()
	return p, func() {
		d.mu.Lock()
		delete(d.pollers, p)
		d.mu.Unlock()
	}
}

// watch returns the channel the next change closes.
func (d *Dispatcher) watch() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.changed
}

// checkWorker refuses what no worker of ours sends. Every string a worker
// supplies is capped and printable ASCII (compat.CheckPrintable, the rule
// for what a worker says about itself), its runtime checked as a result's is
// (compat.Runtime.Validate): the fleet listing, /metrics and runtime keys
// stay small and safe to show.
func checkWorker(w fleet.Worker) error {
	bad := func(err error) error { return fmt.Errorf("%w: worker %v", ErrBadRequest, err) }
	switch {
	case w.ID == "" || w.Host == "":
		return fmt.Errorf("%w: a worker needs an id and a host", ErrBadRequest)
	case w.Devices < 1 || w.Devices > maxDevices:
		return fmt.Errorf("%w: devices %d: want 1 to %d", ErrBadRequest, w.Devices, maxDevices)
	}
	for _, f := range []struct {
		field, s string
		max      int
	}{{"id", w.ID, maxWorkerID}, {"host", w.Host, compat.MaxHostBytes}, {"version", w.Version, compat.MaxVersionBytes}} {
		if err := compat.CheckPrintable(f.field, f.s, f.max); err != nil {
			return bad(err)
		}
	}
	if err := w.Runtime.Validate(); err != nil {
		return bad(err)
	}
	if w.Serving != nil {
		if err := compat.CheckPrintable("serving.vllm_torchtpu", w.Serving.VLLMTorchTPU, compat.MaxVersionBytes); err != nil {
			return bad(err)
		}
	}
	if _, err := compat.ParseResultTarget(string(w.Target)); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return nil
}

// Caps of what a worker says about itself.
const (
	maxWorkerID = 160 // a host name and a random suffix
	maxDevices  = 64
	maxReason   = 200 // why a lease is given back, logged
)

// Register records a worker and tells it the timing.
func (d *Dispatcher) Register(ctx context.Context, w fleet.Worker) (fleet.RegisterResponse, error) {
	if err := checkWorker(w); err != nil {
		return fleet.RegisterResponse{}, err
	}
	if err := d.st.SeeWorker(ctx, w, d.now()); err != nil {
		return fleet.RegisterResponse{}, err
	}
	d.log.Info("worker registered", "worker_id", w.ID, "host", w.Host, "target", w.Target, "devices", w.Devices,
		"runtime", w.Runtime.RetestKey(), "device", w.Runtime.Device)
	d.notify()
	return fleet.RegisterResponse{LeaseTTLS: d.ttl.Seconds(), HeartbeatS: fleet.HeartbeatInterval(d.ttl).Seconds(),
		MaxWaitS: fleet.MaxWait.Seconds()}, nil
}

// Lease grants up to req.Max jobs (at most the worker's devices) of the
// worker's target and runtime, waiting up to req.WaitS (0 to
// fleet.MaxWait) for one.
func (d *Dispatcher) Lease(ctx context.Context, req fleet.LeaseRequest) (fleet.LeaseResponse, error) {
	if err := checkWorker(req.Worker); err != nil {
		return fleet.LeaseResponse{}, err
	}
	switch {
	case req.Max < 1 || req.Max > maxDevices:
		return fleet.LeaseResponse{}, fmt.Errorf("%w: max %d: want 1 to %d", ErrBadRequest, req.Max, maxDevices)
	case req.WaitS < 0 || req.WaitS > fleet.MaxWait.Seconds():
		return fleet.LeaseResponse{}, fmt.Errorf("%w: wait_s %g: want 0 to %g", ErrBadRequest, req.WaitS, fleet.MaxWait.Seconds())
	}
	// No more jobs than the worker has devices: a larger max is its devices
	// (a rule across two fields, which the OpenAPI document cannot state).
	req.Max = min(req.Max, req.Worker.Devices)
	wait := min(time.Duration(req.WaitS*float64(time.Second)), d.hold)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	// Registered before the first query, so that no wake-up is missed.
	p, done := d.addPoller(req.Worker, req.Max)
	defer done()
	for {
		select {
		case <-d.closed:
			return fleet.LeaseResponse{}, ErrClosed
		default:
		}
		leases, requeued, err := d.st.LeaseJobs(ctx, req.Worker, req.Max, d.now(), d.ttl)
		if err != nil {
			return fleet.LeaseResponse{}, err
		}
		if len(requeued) > 0 {
			d.notify()
			d.wake(requeued...)
		}
		if len(leases) > 0 {
			for _, l := range leases {
				d.log.Info("job leased", "model", l.Job.ModelID, "worker_id", req.Worker.ID, "host", req.Worker.Host,
					"attempt", l.Attempt, "job_id", l.JobID)
			}
			d.notify()
			return fleet.LeaseResponse{Leases: leases}, nil
		}
		select {
		case <-p.wake:
		case <-timer.C:
			return fleet.LeaseResponse{Leases: []fleet.Lease{}}, nil
		case <-ctx.Done():
			return fleet.LeaseResponse{}, ctx.Err()
		case <-d.closed:
			return fleet.LeaseResponse{}, ErrClosed
		}
	}
}

// Heartbeat renews a worker's leases and says which are lost.
func (d *Dispatcher) Heartbeat(ctx context.Context, req fleet.HeartbeatRequest) (fleet.HeartbeatResponse, error) {
	if req.WorkerID == "" || compat.CheckPrintable("worker_id", req.WorkerID, maxWorkerID) != nil || len(req.Leases) > maxDevices {
		return fleet.HeartbeatResponse{}, fmt.Errorf("%w: heartbeat of %q with %d leases", ErrBadRequest, req.WorkerID, len(req.Leases))
	}
	now := d.now()
	renewed, lost, requeued, err := d.st.RenewLeases(ctx, req.WorkerID, req.Leases, now, d.ttl)
	if err != nil {
		return fleet.HeartbeatResponse{}, err
	}
	if len(requeued) > 0 {
		d.notify()
		d.wake(requeued...)
	}
	if len(lost) > 0 {
		d.log.Warn("heartbeat for lost leases", "worker_id", req.WorkerID, "lost", len(lost))
	}
	return fleet.HeartbeatResponse{Renewed: nonNil(renewed), Lost: nonNil(lost), ExpiresAt: now.Add(d.ttl)}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Result records a lease's result. Its error wraps fleet.ErrBadResult (the
// lease stays until it expires) or fleet.ErrLeaseNotCurrent (a late or
// repeated result: nothing is recorded twice).
func (d *Dispatcher) Result(ctx context.Context, req fleet.ResultRequest) error {
	out, err := d.st.CompleteJob(ctx, req, d.now())
	if err != nil {
		if errors.Is(err, fleet.ErrLeaseNotCurrent) || errors.Is(err, fleet.ErrBadResult) {
			d.log.Warn("result refused", "model", req.ModelID, "worker_id", req.WorkerID, "err", err)
		}
		return err
	}
	d.log.Info("result recorded", "model", out.ModelID, "status", out.Result.Status, "worker", out.Result.Worker,
		"scan_id", out.ScanID, "flaky", out.Flaky)
	if m := out.Serving; m != nil {
		d.log.Info("serving verdict recorded", "model", out.ModelID, "status", m.Status, "runtime", m.Runtime.Key(),
			"worker", out.Result.Worker)
	}
	if d.hooks.Result != nil {
		d.hooks.Result(out)
	}
	d.notify()
	return nil
}

// Leave records that a worker is leaving (it stopped: a rollout, a
// preemption): it is not live from now on. Its error wraps ErrBadRequest
// for a worker id no worker sends, store.ErrNotFound for an unknown one.
func (d *Dispatcher) Leave(ctx context.Context, req fleet.LeaveRequest) error {
	if req.WorkerID == "" || compat.CheckPrintable("worker_id", req.WorkerID, maxWorkerID) != nil {
		return fmt.Errorf("%w: leave of worker %q", ErrBadRequest, req.WorkerID)
	}
	if err := d.st.LeaveWorker(ctx, req.WorkerID, d.now()); err != nil {
		return err
	}
	d.log.Info("worker left", "worker_id", req.WorkerID)
	d.notify()
	return nil
}

// Release gives a lease back (the worker is stopping).
func (d *Dispatcher) Release(ctx context.Context, req fleet.ReleaseRequest) error {
	if err := compat.CheckPrintable("reason", req.Reason, maxReason); err != nil {
		return fmt.Errorf("%w: release: %v", ErrBadRequest, err)
	}
	key, err := d.st.ReleaseJob(ctx, req.WorkerID, req.LeaseID, d.now())
	if err != nil {
		return err
	}
	d.log.Info("lease given back", "worker_id", req.WorkerID, "reason", req.Reason)
	d.notify()
	if key != (fleet.QueueKey{}) { // else its scan ended: the job was cancelled
		d.wake(key)
	}
	return nil
}
