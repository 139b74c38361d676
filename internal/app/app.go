// Package app wires the scanner together: one App holds the store, the Hub
// client, the probe runner, the scan service and the web server, built from
// one validated Config. Serve runs them until its context ends and shuts
// them down in order: stop scheduling and wait for the scan in flight, shut
// the server down, close the database.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/dispatch"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/knownissues"
	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
	"github.com/google-pytorch/torchtpu-scanner/internal/scan"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving/wheel"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web"
)

// RequirementsHash identifies the harness's pinned Python environment.
func RequirementsHash() string { return harness.RequirementsHash() }

// App is the whole scanner.
type App struct {
	cfg     config.Config
	log     *slog.Logger
	version string

	Store   *store.SQLite
	Hub     *hub.Client
	Runner  scan.Prober
	Scanner *scan.Scanner
	Service *scan.Service
	// Fleet is the work queue's dispatcher under --dispatch workers, else nil.
	Fleet   *dispatch.Dispatcher
	Metrics *metrics.Registry
	m       appMetrics

	// What serve reloads (reload.go): the known issues in use, the web
	// server that shows them, and the webhooks' sender.
	known     atomic.Pointer[knownissues.Table]
	srv       atomic.Pointer[web.Server]
	hooks     hookRunner
	reloading sync.Mutex
}

// New opens the database and builds every part from cfg. The caller must
// Close the App.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, version string) (*App, error) {
	if log == nil {
		log = slog.Default()
	}
	a := &App{cfg: cfg, log: log, version: version, Metrics: metrics.NewRegistry()}
	a.m = newAppMetrics(a.Metrics, version)
	known := cfg.KnownIssues
	a.known.Store(&known)

	st, err := store.Open(ctx, cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", cfg.DB, err)
	}
	a.Store = st
	resumed, err := a.startUp(ctx)
	if err != nil {
		st.Close()
		return nil, err
	}

	a.Hub, err = newHubClient(cfg, log, a.m)
	if err != nil {
		st.Close()
		return nil, err
	}
	a.Runner = newRunner(cfg, log)
	perDevice := deviceProbers(a.Runner, cfg.Devices)
	a.Scanner = &scan.Scanner{
		Hub: a.Hub, Prober: a.Runner, DeviceProbers: perDevice, Store: st, CacheDir: cfg.CacheDir, HasToken: cfg.Token != "", Logger: log,
		ScanLock: cfg.DB, // one scan per database, across processes
		Hooks: scan.Hooks{
			ProbeDone: func(r compat.Result, held time.Duration) {
				a.m.probes.With(string(r.Status)).Inc()
				a.m.probeSeconds.With(string(r.Status)).Observe(held.Seconds())
			},
			ScanDone: func(s store.Scan) {
				a.m.scans.With(string(s.Status)).Inc()
				if s.DeviceBusy != nil {
					a.m.deviceBusy.With().Set(*s.DeviceBusy)
				}
			},
		},
	}
	a.Scanner.Serving = func(ctx context.Context) (serving.Registry, error) {
		return wheel.Load(ctx, pythonOf(cfg), cfg.CacheHome)
	}
	a.Scanner.ServeProbe = serveProbeOf(cfg)
	if a.Fleet != nil {
		a.Scanner.Fleet, a.Scanner.FleetWait = a.Fleet, cfg.WorkerWait
	}
	a.Service = scan.NewService(a.Scanner, scanOptions(cfg), log)
	a.Service.Resume(resumed)
	return a, nil
}

// startUp settles what an earlier process left (settle); under --dispatch
// workers it first builds the dispatcher.
func (a *App) startUp(ctx context.Context) ([]int64, error) {
	if a.cfg.Dispatch == config.DispatchWorkers {
		a.Fleet = a.newDispatcher()
	}
	return a.settle(ctx)
}

// settle takes over what another process left: under --dispatch workers it
// resumes the scans whose owner is gone while their jobs are still queued
// (returned); otherwise it cancels such jobs. Then the scans left running
// by a gone owner are marked interrupted. At start-up, and every
// store.OwnerBeat while serving (watchOrphans): an owner may fall silent
// any time (another server on this database, a container recreated under
// a new host name).
func (a *App) settle(ctx context.Context) ([]int64, error) {
	var resumed []int64
	if a.Fleet != nil {
		var err error
		if resumed, err = a.Store.ResumeScans(ctx); err != nil {
			return nil, fmt.Errorf("resume scans: %w", err)
		}
		if len(resumed) > 0 {
			a.log.Info("scans left to their queued jobs by a process that is gone are resumed", "scans", resumed)
		}
	} else if n, err := a.Store.CancelOrphanJobs(ctx); err != nil {
		return nil, fmt.Errorf("cancel orphan jobs: %w", err)
	} else if n > 0 {
		a.log.Warn("jobs queued for workers by an earlier process cancelled (this server probes locally)", "jobs", n)
	}
	if n, err := a.Store.MarkInterrupted(ctx); err != nil {
		return nil, fmt.Errorf("mark interrupted scans: %w", err)
	} else if n > 0 {
		a.log.Warn("scans left running by a process that is gone marked interrupted", "scans", n)
	}
	return resumed, nil
}

// watchOrphans settles, every store.OwnerBeat until ctx ends, what a
// process that fell silent left running, handing the scans it resumes to
// the service.
func (a *App) watchOrphans(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(store.OwnerBeat):
		}
		resumed, err := a.settle(ctx)
		if err != nil && ctx.Err() == nil {
			a.log.Error("orphaned scans", "err", err)
		}
		a.Service.Resume(resumed)
	}
}

func newHubClient(cfg config.Config, log *slog.Logger, m appMetrics) (*hub.Client, error) {
	c, err := hub.New(hub.Options{
		Endpoint: cfg.HubEndpoint, Token: cfg.Token, CacheDir: cfg.CacheDir, Logger: log,
		OnResponse: func(status int, d time.Duration) {
			m.hubRequests.With(fmt.Sprint(status)).Inc()
		},
		OnRateLimitWait: func(d time.Duration) {
			m.rateLimitWaits.With().Inc()
			m.rateLimitSeconds.With().Add(d.Seconds())
		},
	})
	if err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	return c, nil
}

// newRunner builds the probe runner. Without a usable Python the scanner
// still serves its pages: every scan then fails with the reason, and no
// model is blamed.
func newRunner(cfg config.Config, log *slog.Logger) scan.Prober {
	py := pythonOf(cfg)
	r, err := probe.NewRunner(probe.Config{Python: py, Script: cfg.Harness, Timeout: cfg.Timeout, Grace: cfg.ProbeGrace, NoLandlock: cfg.NoLandlock,
		MemLimitBytes: memLimit(cfg.Devices, log), Logger: log})
	if err != nil {
		err = fmt.Errorf("no usable Python for the harness (%w); run `make pyenv` or pass --python", err)
		log.Warn("scans will fail", "err", err)
		return brokenProber{err}
	}
	return r
}

// pythonOf is the project's interpreter: --python, else the project's own
// environment (harness.DefaultPython).
func pythonOf(cfg config.Config) string {
	if cfg.Python != "" {
		return cfg.Python
	}
	return harness.DefaultPython(cfg.CacheHome)
}

// deviceProbers are the per-device probers of a host with devices > 1
// devices: runners pinned to one device each (probe.Runner.ForDevice owns
// the pinning environment), nil with one device or without a usable runner.
func deviceProbers(p scan.Prober, devices int) []scan.Prober {
	r, ok := p.(*probe.Runner)
	if !ok || devices < 2 {
		return nil
	}
	out := make([]scan.Prober, devices)
	for i := range out {
		out[i] = r.ForDevice(i)
	}
	return out
}

// memLimit is each probe's memory limit: the plan's share of the host
// (scan.ProbeMemLimit), which the scan's budget is derived from too.
func memLimit(devices int, log *slog.Logger) uint64 {
	total, err := probe.PhysicalMemory()
	return memLimitOf(total, err, devices, log)
}

// memLimitOf is memLimit for a host of total bytes (err: not known), for
// devices probes side by side: no limit when the share is unknown or 0.
func memLimitOf(total uint64, err error, devices int, log *slog.Logger) uint64 {
	if limit := scan.ProbeMemLimit(scan.Host{MemoryBytes: total, Probes: devices}); err == nil && limit > 0 {
		return limit
	}
	log.Warn("host memory unknown: the harness runs without a memory limit", "err", err)
	return probe.NoLimit
}

// brokenProber stands in for a runner that could not be built.
type brokenProber struct{ err error }

func (b brokenProber) Env(context.Context, compat.Target) (compat.Target, compat.Runtime, error) {
	return "", compat.Runtime{}, b.err
}

func (b brokenProber) Probe(_ context.Context, req probe.Request) compat.Result {
	return compat.Result{Status: compat.StatusError, Target: req.Target, FailureClass: compat.Ptr(compat.ClassImportError), Message: compat.Ptr(b.err.Error())}
}

func scanOptions(cfg config.Config) scan.Options {
	return scan.Options{
		Source: cfg.Source, Limit: cfg.Limit, Sort: cfg.Sort, Tasks: cfg.Tasks, Models: cfg.Models,
		Target: cfg.Target, Mode: cfg.Mode, Timeout: cfg.Timeout, Force: cfg.Force, Devices: cfg.Devices,
		DeviceMemory: cfg.DeviceMemory, ScanTimeout: cfg.ScanTimeout,
	}
}

// Scan runs one scan now (scanner scan), reporting progress.
func (a *App) Scan(ctx context.Context, trigger string, progress func(scan.Progress)) (store.Scan, error) {
	opts := scanOptions(a.cfg)
	opts.Trigger = trigger
	return a.Scanner.Run(ctx, opts, scan.Hooks{Progress: progress})
}

// Serve runs the web server and the scan service until ctx ends. On an
// empty database it starts the first scan at once, so a newcomer sees rows
// appear; with --no-schedule nothing is scanned unless asked.
func (a *App) Serve(ctx context.Context) error {
	wcfg := web.Config{
		Store: a.Store, Scans: scanControl{a.Service, a.Fleet}, AdminToken: a.cfg.AdminToken, HubEndpoint: a.cfg.HubEndpoint,
		Metrics: a.Metrics, Logger: a.log, Version: a.version, PublicURL: a.cfg.PublicURL, APIRate: apiRate(a.cfg.RateLimit),
		TrustedProxies: a.cfg.TrustedProxies, IPv6ClientPrefix: a.cfg.IPv6ClientPrefix,
	}
	if a.Fleet != nil {
		wcfg.Work, wcfg.WorkerToken = a.Fleet, a.cfg.WorkerToken
	}
	sender, err := a.watch(ctx, &wcfg)
	if err != nil {
		return err
	}
	srv, err := web.New(wcfg)
	if err != nil {
		return fmt.Errorf("web: %w", err)
	}
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", a.cfg.Addr, err)
	}
	a.log.Info("serving", "addr", ln.Addr().String(), "db", a.cfg.DB, "hub", a.cfg.HubEndpoint, "schedule", schedule(a.cfg))

	scanCtx, stopScans := context.WithCancel(context.Background())
	scansDone := make(chan struct{})
	go func() {
		defer close(scansDone)
		var bg sync.WaitGroup
		if a.Fleet != nil {
			bg.Go(func() { a.Fleet.Run(scanCtx) }) // takes expired leases back
		}
		bg.Go(func() { a.watchOrphans(scanCtx) })
		a.Service.Run(scanCtx)
		bg.Wait()
	}()
	// The webhooks' deliveries: background work of their own, which reads
	// what the scans write and never holds them up (a reload replaces it).
	a.hooks.run(sender)
	a.serving(srv)
	stopBackground := func() {
		stopScans()
		<-scansDone
		a.hooks.close()
	}
	if !a.cfg.NoSchedule {
		if err := a.Service.Schedule(a.cfg.Schedule); err != nil {
			stopBackground()
			ln.Close()
			return err
		}
		a.firstScan(ctx)
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Listen(ln) }()

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-serveErr:
	}
	a.log.Info("shutting down: stopping scans and webhooks")
	stopBackground()
	if a.Fleet != nil {
		a.Fleet.Close() // ends the workers' long polls; they retry until the next start
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("web shutdown: %w", err))
	}
	return runErr
}

// apiRate turns requests per minute into the web server's per-second rate;
// 0 turns the limit off.
func apiRate(perMinute int) float64 {
	if perMinute <= 0 {
		return -1
	}
	return float64(perMinute) / 60
}

// firstScan queues a scan when the database has no scan yet.
func (a *App) firstScan(ctx context.Context) {
	scans, err := a.Store.ListScans(ctx, 1)
	if err != nil || len(scans) > 0 {
		return
	}
	if err := a.Service.Request("startup"); err != nil {
		a.log.Warn("first scan not queued", "err", err)
	}
}

func schedule(cfg config.Config) string {
	if cfg.NoSchedule {
		return "off"
	}
	return cfg.Schedule
}

// Close releases the harness's files and the database.
func (a *App) Close() error {
	var errs []error
	for _, p := range append([]scan.Prober{a.Runner}, a.Scanner.DeviceProbers...) {
		if c, ok := p.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	if a.Store != nil {
		errs = append(errs, a.Store.Close())
	}
	return errors.Join(errs...)
}

// scanControl adapts the scan service (and the fleet, when there is one)
// to the web server.
type scanControl struct {
	s     *scan.Service
	fleet *dispatch.Dispatcher
}

func (c scanControl) RequestScan(trigger string) error {
	err := c.s.Request(trigger)
	if errors.Is(err, scan.ErrQueued) {
		return web.ErrScanQueued
	}
	return err
}

func (c scanControl) State() web.ScanState {
	st := c.s.State()
	out := web.ScanState{Running: st.Running, ScanID: st.ScanID, Foreign: st.Foreign, Queued: st.Queued, HubError: st.HubError, HubErrorAt: st.HubErrorAt}
	if c.fleet != nil {
		f := c.fleet.Snapshot()
		out.Workers, out.WorkersBusy = f.Live, f.Busy
	}
	return out
}

// Backup writes a consistent copy of the database (safe while serving).
// It only reads the database, so a read-only one (a read-only volume, a
// file this user may not write) is copied too.
func Backup(ctx context.Context, cfg config.Config, path string) error {
	st, err := store.OpenReadOnly(ctx, cfg.DB)
	if err != nil {
		return fmt.Errorf("open database %s: %w", cfg.DB, err)
	}
	defer st.Close()
	if err := st.Backup(ctx, path); err != nil {
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	return nil
}

// Probe runs one smoke test of one model without a database: it resolves
// the revision on the Hub, fetches the files and runs the harness.
func Probe(ctx context.Context, cfg config.Config, log *slog.Logger, id string) (compat.Result, error) {
	if err := compat.ValidateModelID(id); err != nil {
		return compat.Result{}, fmt.Errorf("%q is not a Hub model id: %w", id, err)
	}
	m := newAppMetrics(metrics.NewRegistry(), "probe")
	client, err := newHubClient(cfg, log, m)
	if err != nil {
		return compat.Result{}, err
	}
	// The probe uses no database of the user's: a throwaway one in a temp
	// folder lets it share the scan's exact code path.
	tmp, err := os.MkdirTemp("", "scanner-probe-")
	if err != nil {
		return compat.Result{}, err
	}
	defer os.RemoveAll(tmp)
	st, err := store.Open(ctx, filepath.Join(tmp, "probe.db"))
	if err != nil {
		return compat.Result{}, err
	}
	defer st.Close()
	rev := cfg.Revision
	if rev == "" {
		rev = "main"
	}
	prober := newRunner(cfg, log)
	if c, ok := prober.(io.Closer); ok {
		defer c.Close()
	}
	s := &scan.Scanner{Hub: pinned{client, rev}, Prober: prober, Store: st, CacheDir: cfg.CacheDir, HasToken: cfg.Token != "", Logger: log}
	opts := scanOptions(cfg)
	opts.Models, opts.Force, opts.Source, opts.Trigger = []string{id}, true, "hub", "probe"
	sc, err := s.Run(ctx, opts, scan.Hooks{})
	if err != nil {
		return compat.Result{}, err
	}
	results, err := st.History(ctx, id, "", 1)
	if err != nil || len(results) == 0 {
		return compat.Result{}, fmt.Errorf("no result for %s: %s", id, strings.TrimSpace(sc.Error))
	}
	return results[0], nil
}

// pinned resolves model info at a fixed revision (scanner probe --revision).
type pinned struct {
	*hub.Client
	rev string
}

func (p pinned) ModelInfo(ctx context.Context, id, _ string) (hub.ModelInfo, error) {
	return p.Client.ModelInfo(ctx, id, p.rev)
}
