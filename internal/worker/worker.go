// Package worker is `scanner worker`: it leases probes from a scanner
// server (internal/fleet is the protocol), downloads each model's files
// from the Hub itself, runs the same harness runner a local scan runs (one
// probe per device), and posts the results. It survives server restarts
// (every request is retried with backoff) and stops gracefully: on SIGTERM
// it takes no new lease, gives its probes --probe-grace to finish, stops the
// rest and gives their leases back.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/chips"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
)

// Prober runs the smoke test on one device; *probe.Runner is the real one.
type Prober interface {
	Probe(ctx context.Context, req probe.Request) compat.Result
	Env(ctx context.Context, target compat.Target) (compat.Target, compat.Runtime, error)
}

// Fetcher downloads a model's files at a revision into the Hub cache and
// returns the snapshot directory; *hub.Client is the real one.
type Fetcher interface {
	Download(ctx context.Context, id, sha string, files []string) (string, error)
}

// Config configures a Worker.
type Config struct {
	Server  string // the scanner server's URL
	Token   string // SCANNER_WORKER_TOKEN
	ID      string // this process's worker id (see NewID)
	Host    string // the machine, recorded with its results
	Version string
	Target  compat.Target // requested; auto resolves once at start
	// Timeout caps one probe; a job's own timeout applies when shorter.
	Timeout time.Duration
	// ProbeGrace is what running probes get after SIGTERM before they are
	// stopped (and, inside the runner, again before SIGKILL).
	ProbeGrace time.Duration
	// MemoryBytes is the host's memory (0 when unknown), reported so that
	// the server plans cpu budgets from it.
	MemoryBytes uint64
	// Wait is the long poll asked for; fleet.MaxWait when zero.
	Wait time.Duration
	// MisconfiguredAfter is how long the server may refuse the worker
	// (401, 403, 404) before its /healthz fails; 2 minutes when zero.
	MisconfiguredAfter time.Duration
	HTTP               *http.Client
	Logger             *slog.Logger
	// ServeProbe, when set (--vllm-python), runs the measured serving
	// probe on the snapshot dir a job's probe read, after a probe whose
	// job asks for it (fleet.Job.Serve), on the devices it still holds:
	// the scan's own (app.ServeProbeIn). Its verdict is posted with the
	// result. Nil: no serving probe runs here.
	ServeProbe func(ctx context.Context, dir string, res compat.Result) (compat.ServingMeasured, error)
	// ServingVersion is the vllm-torchtpu version ServeProbe's interpreter
	// reports ("" when it did not say), told to the server with the rest of
	// what the worker says about itself (fleet.Worker.Serving).
	ServingVersion string
}

// Worker leases and runs probes until its context ends.
type Worker struct {
	cfg     Config
	env     Prober   // answers Env: the host's runner
	probers []Prober // one per device
	fetch   Fetcher
	api     *client
	log     *slog.Logger

	self fleet.Worker // as registered: target and runtime resolved
	// final ends ShutdownBudget after SIGTERM: results still being
	// delivered then are given up (their leases expire on the server).
	final context.Context

	mu   sync.Mutex
	held map[string]*heldLease // lease id → running job

	beat      atomic.Int64 // heartbeat interval the server asked for, nanoseconds
	lastOK    atomic.Int64 // unix nanos of the last answered request
	done      atomic.Int64 // results accepted
	running   atomic.Int64 // probes running now
	serverUp  atomic.Bool
	resolving atomic.Bool
	misconf   atomic.Pointer[misconfig] // what the server's refusals say is wrong; nil while it answers
}

// heldLease is a lease this worker holds: its probe is cancelled if the
// server says the lease is lost.
type heldLease struct {
	lease  fleet.Lease
	cancel context.CancelFunc
	lost   atomic.Bool
}

// New returns a worker that probes with probers, one per device; env
// resolves the target and runtime (the host's runner, unpinned).
func New(cfg Config, env Prober, probers []Prober, fetch Fetcher) (*Worker, error) {
	if len(probers) == 0 || env == nil {
		return nil, errors.New("worker: no prober")
	}
	if cfg.Server == "" {
		return nil, errors.New("worker: no server URL")
	}
	if cfg.Wait <= 0 || cfg.Wait > fleet.MaxWait {
		cfg.Wait = fleet.MaxWait
	}
	if cfg.ProbeGrace <= 0 {
		cfg.ProbeGrace = config.DefaultProbeGrace
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = config.DefaultTimeout
	}
	if cfg.MisconfiguredAfter <= 0 {
		cfg.MisconfiguredAfter = defaultMisconfiguredAfter
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Worker{
		cfg: cfg, env: env, probers: probers, fetch: fetch, api: newClient(cfg.Server, cfg.Token, cfg.HTTP),
		log: log.With("worker_id", cfg.ID), held: map[string]*heldLease{},
	}, nil
}

// Run resolves the target, registers, and leases until ctx ends (SIGTERM);
// then it stops as the package says and returns nil. An error means the
// worker could not start (no usable device for the target).
func (w *Worker) Run(ctx context.Context) error {
	w.resolving.Store(true)
	target, rt, err := w.env.Env(ctx, w.cfg.Target)
	w.resolving.Store(false)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("worker: probe environment for target %s: %w", w.cfg.Target, err)
	}
	w.self = fleet.Worker{ID: w.cfg.ID, Host: w.cfg.Host, Version: w.cfg.Version, Target: target, Runtime: rt,
		Devices: len(w.probers), MemoryBytes: w.cfg.MemoryBytes}
	if w.cfg.ServeProbe != nil {
		w.self.Serving = &fleet.WorkerServing{VLLMTorchTPU: w.cfg.ServingVersion}
	}
	w.log.Info("worker starting", "server", w.cfg.Server, "target", target, "devices", len(w.probers),
		"device", rt.Device, "torch", rt.Torch, "torch_tpu", rt.TorchTPU, "transformers", rt.Transformers)
	if !w.registerLoop(ctx) {
		return nil
	}
	// hard ends the probes: ProbeGrace after ctx ends.
	hard, stopHard := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHard()
	stopTimer := context.AfterFunc(ctx, func() { time.AfterFunc(w.cfg.ProbeGrace, stopHard) })
	defer stopTimer()
	final, stopFinal := context.WithCancel(context.WithoutCancel(ctx))
	defer stopFinal()
	stopFinalTimer := context.AfterFunc(ctx, func() { time.AfterFunc(fleet.ShutdownBudget(w.cfg.ProbeGrace), stopFinal) })
	defer stopFinalTimer()
	w.final = final
	beats, stopBeats := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	bg.Go(func() { w.heartbeatLoop(beats) })

	var jobs sync.WaitGroup
	w.leaseLoop(ctx, hard, &jobs)
	w.log.Info("worker stopping: no new leases; waiting for running probes", "running", w.running.Load(),
		"probe_grace", w.cfg.ProbeGrace)
	jobs.Wait()
	stopBeats()
	bg.Wait()
	w.leave()
	w.log.Info("worker stopped", "results_accepted", w.done.Load())
	return nil
}

// leave tells the server this worker is leaving, so that it is not planned
// for while the server waits out its silence; within what is left of the
// shutdown budget (w.final), so the worker still stops within it.
func (w *Worker) leave() {
	ctx, cancel := context.WithTimeout(w.final, fleet.ReleaseTimeout)
	defer cancel()
	if err := w.api.leave(ctx, w.cfg.ID); err != nil {
		w.log.Warn("the server was not told this worker leaves; it notices its silence", "err", err)
	}
}

// registerLoop registers until the server answers; false when ctx ended.
func (w *Worker) registerLoop(ctx context.Context) bool {
	for n := 0; ; n++ {
		reg, err := w.api.register(ctx, w.self)
		if err == nil {
			w.setTiming(reg)
			w.seen(true)
			w.log.Info("registered", "lease_ttl_s", reg.LeaseTTLS, "heartbeat_s", reg.HeartbeatS)
			return true
		}
		w.failed(ctx, "register", err, n)
		if ctx.Err() != nil {
			return false
		}
		if sleep(ctx, fleet.Backoff(n, rand.Float64())) != nil {
			return false
		}
	}
}

// setTiming takes the heartbeat interval the server asks for (a quarter of
// its lease TTL when it names none).
func (w *Worker) setTiming(reg fleet.RegisterResponse) {
	beat := time.Duration(reg.HeartbeatS * float64(time.Second))
	if beat <= 0 {
		ttl := time.Duration(reg.LeaseTTLS * float64(time.Second))
		if ttl <= 0 {
			ttl = fleet.DefaultLeaseTTL
		}
		beat = fleet.HeartbeatInterval(ttl)
	}
	w.beat.Store(int64(beat))
}

func (w *Worker) heartbeatEvery() time.Duration { return time.Duration(w.beat.Load()) }

func (w *Worker) seen(ok bool) {
	w.serverUp.Store(ok)
	if ok {
		w.lastOK.Store(time.Now().UnixNano())
		w.misconf.Store(nil)
	}
}

// leaseLoop asks for jobs for the devices free (a sharded job takes
// several; the server picks by fleet.Pick) and runs each granted one on the
// devices the pool gives it (internal/chips: a job waiting for several
// devices is not overtaken), until ctx ends. It asks again when devices
// free up and no granted job still waits for its own.
func (w *Worker) leaseLoop(ctx, hard context.Context, jobs *sync.WaitGroup) {
	pool := chips.NewPool(len(w.probers))
	freed := make(chan struct{}, 1)
	for failures := 0; ; {
		free := pool.Available()
		if free == 0 {
			select {
			case <-freed:
				continue
			case <-ctx.Done():
				return
			}
		}
		leases, err := w.api.lease(ctx, w.self, free, w.cfg.Wait)
		if err != nil {
			w.failed(ctx, "lease", err, failures)
			if ctx.Err() != nil {
				return
			}
			if sleep(ctx, fleet.Backoff(failures, rand.Float64())) != nil {
				return
			}
			failures++
			continue
		}
		failures = 0
		w.seen(true)
		for _, l := range leases {
			ticket, err := pool.Ask(l.Job.Chips())
			if err != nil { // the server leases only jobs this worker holds (fleet.Holds)
				h := w.hold(l, func() {})
				w.post(h, w.scannerError(l.Job, err), false, nil)
				w.unhold(l)
				continue
			}
			jobs.Add(1)
			go func() {
				defer jobs.Done()
				defer func() {
					select {
					case freed <- struct{}{}:
					default:
					}
				}()
				w.runJob(hard, pool, ticket, l)
			}()
		}
	}
}

// heartbeatLoop renews held leases until ctx ends; a lease the server
// reports lost has its probe cancelled.
func (w *Worker) heartbeatLoop(ctx context.Context) {
	t := time.NewTimer(w.heartbeatEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(w.heartbeatEvery())
		ids := w.heldIDs()
		if len(ids) == 0 {
			continue
		}
		resp, err := w.api.heartbeat(ctx, w.cfg.ID, ids)
		if err != nil {
			w.failed(ctx, "heartbeat", err, 0)
			continue
		}
		w.seen(true)
		for _, id := range resp.Lost {
			w.loseLease(id)
		}
	}
}

func (w *Worker) heldIDs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]string, 0, len(w.held))
	for id := range w.held {
		ids = append(ids, id)
	}
	return ids
}

func (w *Worker) loseLease(id string) {
	w.mu.Lock()
	h := w.held[id]
	w.mu.Unlock()
	if h == nil {
		return
	}
	w.log.Warn("lease lost: stopping its probe (its result would be refused)", "lease_id", id, "model", h.lease.Job.ModelID)
	h.lost.Store(true)
	h.cancel()
}

// sleep waits d or until ctx ends (then it returns ctx's error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
