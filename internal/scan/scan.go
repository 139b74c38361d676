// Package scan is the scanner's orchestration: discover the models to test
// (discover.go), plan which need a (re)test and how (plan.go), fetch their
// files (this file) and decide whether they are worth probing
// (preflight.go), probe them one per device while the next are fetched
// (pipeline.go: each probe is internal/probestep's one step), or hand them
// to workers (fleet.go), and record every outcome the moment it is known
// (record.go). The Service in service.go queues scans (manual, scheduled)
// so that two never run at once.
package scan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/preflight"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
	"github.com/google-pytorch/torchtpu-scanner/internal/probestep"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/internal/scanlock"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// HubClient is the part of the Hub client a scan uses.
type HubClient interface {
	ListModels(ctx context.Context, o hub.ListOptions) ([]hub.ModelInfo, error)
	ModelInfo(ctx context.Context, id, revision string) (hub.ModelInfo, error)
	Download(ctx context.Context, id, sha string, files []string) (string, error)
}

// Prober runs the smoke test; *probe.Runner is the real one.
type Prober interface {
	Probe(ctx context.Context, req probe.Request) compat.Result
	Env(ctx context.Context, target compat.Target) (compat.Target, compat.Runtime, error)
}

// ErrHub wraps a failure to reach or read the Hub; the scan as a whole
// failed, and no model is blamed for it.
var ErrHub = errors.New("hub unreachable")

// Scanner runs scans. Its fields are its dependencies, set once at
// construction.
type Scanner struct {
	Hub    HubClient
	Prober Prober
	// DeviceProbers, when set, holds one prober per device (each pinned to
	// its device): a one-device probe on device i probes with
	// DeviceProbers[i]; a sharded probe with Prober, which pins its ranks
	// itself. Prober still answers Env.
	DeviceProbers []Prober
	Store         Store
	CacheDir      string
	// ScanLock is the database's path: a scan takes its scan lock
	// (scanlock), so that one scan runs per database across processes;
	// "" takes none (tests, a throwaway database).
	ScanLock string
	HasToken bool
	Logger   *slog.Logger
	// Hooks observe every scan (the app's metrics); Run takes the hooks of
	// one scan besides.
	Hooks Hooks
	// ListCache lists models already in the local cache (--source cache);
	// defaults to hub.ScanCache.
	ListCache func(cacheDir string) ([]hub.ModelInfo, error)
	// Fleet, when set, hands the probes to workers (serve --dispatch
	// workers; fleet.go): the scan plans against the runtime its
	// workers report, queues every model to probe and ends when the queue
	// is drained. Prober is then not used.
	Fleet Fleet
	// FleetWait is how long a scan waits for a live worker that can take
	// its jobs (at its start, and whenever its queued jobs match none);
	// 10 minutes when zero.
	FleetWait time.Duration
	// OwnerBeat is how often a running scan renews its owner's claim on
	// it (store.OwnerBeat when zero).
	OwnerBeat time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Serving reads what the pinned vllm-torchtpu declares it serves
	// (serving.Load); a scan calls it when the store lacks that release
	// (declareServing). nil reads nothing.
	Serving func(ctx context.Context) (serving.Registry, error)
	// ServeProbe, when set (--vllm-python), runs the measured serving
	// probe (internal/serving/measure) on a model just probed in full mode
	// whose serving cell is declared served, on the devices that probe
	// still holds (serveProbe), in the snapshot folder dir that probe
	// read; res is that probe's result. An error says it could not start
	// (no snapshot): nothing is stored.
	ServeProbe func(ctx context.Context, dir string, res compat.Result) (compat.ServingMeasured, error)
}

func (s *Scanner) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Scanner) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// entry is one model of the listing on its way through a scan (a fleet
// job, under --dispatch workers, is what newJob makes of it).
type entry struct {
	info     hub.ModelInfo
	previous *compat.Result
	plan     Decision
	weights  Weights
	files    []string // what the probe needs from the repository (fetch)
	inputs   []string // the tokenizer and processor files it may use (full mode)
	snapshot string
	config   map[string]any // config.json as fetched; nil when not read
	result   *compat.Result // set when preflight or fetching decided the outcome
	// inputsNote says which tokenizer or processor files could not be
	// fetched (full mode), for the probe's note; "" when none failed.
	inputsNote string
}

// run is the state of one scan in progress.
type run struct {
	s        *Scanner
	opts     Options
	hooks    Hooks // the Scanner's, then this scan's
	scan     store.Scan
	target   compat.Target
	runtime  compat.Runtime
	host     Host
	budget   int64
	budgetOf string
	devices  Devices     // the host's, for sharding (DevicesOf)
	yielded  atomic.Bool // the scan gave way (opts.Yield): no more probes
	// serving is the pinned release's registry, for the serving probe's
	// choice of models (serveProbe); nil without Scanner.ServeProbe or
	// when it could not be read.
	serving *serving.Registry

	mu        sync.Mutex
	jobs      store.JobCounts       // the fleet's share of the scan (fleet.go)
	queued    int                   // jobs this run queued
	planned   bool                  // every model is decided or queued (queueJobs)
	resumed   bool                  // a scan an earlier process left to its queue
	refusals  map[string]*hub.Error // Hub refusals of exact --model ids
	done      int
	probed    int
	unchanged int
	busy      time.Duration
}

// Run performs one scan and returns its final record; hooks observe this
// scan (after the Scanner's own Hooks). A scan that could not start (no
// Python, Hub unreachable) is recorded as failed and its error returned;
// per-model problems never end a scan. While another process scans the
// same database, Run records nothing and returns an error matching
// scanlock.ErrHeld that says who.
func (s *Scanner) Run(ctx context.Context, opts Options, hooks Hooks) (store.Scan, error) {
	lock, err := s.lock()
	if err != nil {
		return store.Scan{}, err
	}
	defer lock.Release()
	if locked := s.Hooks.then(hooks).Locked; locked != nil {
		locked(s.ScanLock)
	}
	opts = withDefaults(opts)
	ctx, cancel := withDeadline(ctx, opts)
	defer cancel()
	params, _ := json.Marshal(opts)
	started := s.now().UTC()
	// The environment comes first, so that the scan record names the
	// target it really runs on (auto resolves to tpu or cpu here).
	target, rt, host, envErr := s.environment(ctx, opts)
	if envErr != nil {
		target = opts.Target
	}
	if envErr == nil && s.Fleet == nil {
		s.keepKernelTable(ctx)
	}
	sc := store.Scan{Trigger: opts.Trigger, Status: store.ScanRunning, Target: string(target), Runtime: rt,
		Params: string(params), StartedAt: started}
	id, err := s.Store.StartScan(ctx, sc)
	if err != nil {
		return sc, fmt.Errorf("scan: start: %w", err)
	}
	sc.ID = id
	defer s.keepOwner(id)()
	if err := lock.SetScan(id); err != nil {
		s.log().Warn("scan lock: the scan id is not recorded for other processes", "err", err)
	}
	r := &run{s: s, opts: opts, hooks: s.Hooks.then(hooks), scan: sc, target: target, runtime: rt, host: host}
	if envErr != nil {
		return r.finish(timedOut(ctx, envErr))
	}
	return r.finish(timedOut(ctx, r.execute(ctx)))
}

// lock takes the database's scan lock (nil when ScanLock is "": a nil
// *scanlock.Lock's methods do nothing).
func (s *Scanner) lock() (*scanlock.Lock, error) {
	if s.ScanLock == "" {
		return nil, nil
	}
	l, err := scanlock.TryLock(s.ScanLock)
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	return l, nil
}

// KernelTabler is a Prober that reads the TorchTPU kernel table of its
// runtime (*probe.Runner).
type KernelTabler interface {
	KernelTable(ctx context.Context) (compat.KernelTable, error)
}

// KernelVersioner is a KernelTabler that names the versions its table is
// kept under without reading it, and takes a kept one instead
// (*probe.Runner).
type KernelVersioner interface {
	KernelVersions(ctx context.Context) (torch, torchTPU string, err error)
	UseKernelTable(kt compat.KernelTable)
}

// The runner names its versions and takes a kept table: a scan reads the
// table once per runtime.
var (
	_ KernelTabler    = (*probe.Runner)(nil)
	_ KernelVersioner = (*probe.Runner)(nil)
	_ KernelStore     = (*store.SQLite)(nil)
)

// KernelStore keeps kernel tables (*store.SQLite).
type KernelStore interface {
	PutKernelTable(ctx context.Context, kt compat.KernelTable) (bool, error)
	KernelTableOf(ctx context.Context, torch, torchTPU string) (compat.KernelTable, bool, error)
}

// keepKernelTable keeps this host's TorchTPU kernel table with its runtime
// (once per torch and torch_tpu versions): what /runtimes and /ops show,
// and what this scan's predictions (result.tpu_ops) are judged against.
// The table is read once per runtime, not once per runner: when the
// database keeps the table of the versions the runner names, the runner
// takes it instead of reading it (~25 s in a child process). A host
// without torch_tpu has none, and says so once.
func (s *Scanner) keepKernelTable(ctx context.Context) {
	kp, ok := s.Prober.(KernelTabler)
	ks, ok2 := s.Store.(KernelStore)
	if !ok || !ok2 {
		return
	}
	if kv, ok := s.Prober.(KernelVersioner); ok {
		if torch, tpu, err := kv.KernelVersions(ctx); err == nil {
			kept, found, err := ks.KernelTableOf(ctx, torch, tpu)
			if err != nil {
				s.log().Warn("scan: kept kernel table unreadable: reading it again", "err", err)
			} else if found {
				kv.UseKernelTable(kept)
				return
			}
		}
	}
	kt, err := kp.KernelTable(ctx)
	if err != nil {
		return // the runner logged why
	}
	if stored, err := ks.PutKernelTable(ctx, kt); err != nil {
		s.log().Warn("scan: kernel table not kept", "table", kt.Name(), "err", err)
	} else if stored {
		s.log().Info("scan: kept a new TorchTPU kernel table", "table", kt.Name())
	}
}

// environment resolves where this scan's probes run: this host's runner,
// or the group of live workers it plans for (fleetEnvironment).
func (s *Scanner) environment(ctx context.Context, opts Options) (compat.Target, compat.Runtime, Host, error) {
	if s.Fleet != nil {
		return s.fleetEnvironment(ctx, opts)
	}
	target, rt, err := s.Prober.Env(ctx, opts.Target)
	if err != nil {
		return "", rt, Host{}, fmt.Errorf("scan: probe environment: %w", err)
	}
	mem, _ := probe.PhysicalMemory() // 0 when unknown: Budget says so
	return target, rt, Host{MemoryBytes: mem, Probes: opts.Devices, DeviceMemory: opts.DeviceMemory}, nil
}

func (r *run) execute(ctx context.Context) error {
	log := r.s.log().With("scan_id", r.scan.ID)
	target := r.target
	if r.opts.Target == compat.TargetAuto && target != compat.TargetTPU {
		log.Info("no TPU found: --target auto runs on "+string(target), "target", target, "device", r.runtime.Device)
	}
	r.budget, r.budgetOf = Budget(target, r.runtime, r.host)
	r.devices = DevicesOf(target, r.runtime, r.host)

	models, invalid, err := r.discover(ctx)
	if err != nil {
		if r.hooks.HubFailure != nil && errors.Is(err, ErrHub) {
			r.hooks.HubFailure(err)
		}
		return err
	}
	if r.hooks.HubFailure != nil && r.opts.Source == "hub" {
		r.hooks.HubFailure(nil)
	}
	if len(invalid) > 0 {
		r.scan.Error = "not scanned: " + strings.Join(invalid, "; ")
	}
	if err := r.s.Store.UpsertModels(ctx, upserts(models)); err != nil {
		return fmt.Errorf("scan: save models: %w", err)
	}
	r.declareServing(ctx)
	r.loadServing(ctx)
	r.scan.Planned = len(models)
	log.Info("scan planned", "models", len(models), "target", target, "mode", r.opts.Mode, "devices", r.opts.Devices,
		"budget_gib", float64(r.budget)/(1<<30), "budget_of", r.budgetOf,
		"device_memory_gib", float64(r.devices.Memory)/(1<<30), "device_memory_of", r.devices.Of)
	if err := r.s.Store.UpdateScanProgress(ctx, r.scan.ID, len(models), 0, 0, 0); err != nil {
		return fmt.Errorf("scan: progress: %w", err)
	}
	if r.s.Fleet != nil {
		return r.queueJobs(ctx, models)
	}
	return r.pipeline(ctx, models)
}

// prepareEntry plans, fetches and preflights one model. It returns nil
// when the model needs no retest, an entry with result set when the
// outcome is already known, or an entry ready to probe.
func (r *run) prepareEntry(ctx context.Context, m hub.ModelInfo) *entry {
	j := &entry{info: m}
	if he := r.refusal(m.ID); he != nil {
		return r.fetchFailed(j, he)
	}
	if prev, err := r.s.Store.LatestResult(ctx, m.ID, r.target); err == nil {
		j.previous = &prev
	} else if !errors.Is(err, store.ErrNotFound) {
		return r.scannerError(j, compat.StageEnv, fmt.Errorf("read previous result: %w", err))
	}
	known, _ := r.readinessInput(m, nil) // what sharding can know before config.json comes
	in := Input{SHA: m.SHA, Previous: j.previous, Runtime: r.runtime, Target: r.target, Mode: r.opts.Mode,
		Force: r.opts.Force, Budget: r.budget, BudgetOf: r.budgetOf, Devices: r.devices, Model: readiness.ShardOf(known)}
	in.Weights.Files, in.Weights.Bytes = hub.WeightFiles(m.Siblings)
	if j.plan = Plan(in); !j.plan.Retest {
		return nil
	}
	// Decline what the listing (and its excerpt of config.json) already
	// rules out (gated, custom code, other libraries, tasks), before any
	// download or further request.
	listed := preflight.Listed(m, r.s.HasToken)
	listed.Mode = r.opts.Mode
	if res := preflight.Preflight(listed); res != nil && preflight.ListingDecides(*res, m) {
		return r.decided(j, *res)
	}
	if j.plan.AskSizes && !m.FilesMetadata && r.opts.Source != "cache" {
		in.Weights = r.weightSizes(ctx, m, in.Weights)
		j.plan = Plan(in)
	}
	j.weights = in.Weights
	r.s.log().Debug("model planned", "model", m.ID, "mode", j.plan.Mode, "why", j.plan.Reason, "mode_why", j.plan.ModeReason)
	// What the plan declines stands once the listing named the repo's
	// files; else config.json comes first (preflight may say otherwise).
	if j.plan.Decline != "" && len(m.Siblings) > 0 {
		return r.declined(j)
	}
	return r.fetch(ctx, j, listed, in)
}

// weightSizes asks the Hub for the sizes of this revision's weights, which
// listings do not carry; it keeps w when the Hub cannot tell.
func (r *run) weightSizes(ctx context.Context, m hub.ModelInfo, w Weights) Weights {
	full, err := r.s.Hub.ModelInfo(ctx, m.ID, m.SHA)
	if err != nil {
		r.s.log().Warn("model info for file sizes; testing the architecture only", "model", m.ID, "err", err)
		return w
	}
	w.Files, w.Bytes = hub.WeightFiles(full.Siblings)
	return w
}

// fetch downloads config.json, plans again with the model's sizes from it
// (sharding: readiness.ShardOf), runs preflight again on it, and, in full
// mode, downloads the weights and the tokenizer and processor files.
func (r *run) fetch(ctx context.Context, j *entry, cand preflight.Candidate, in Input) *entry {
	m := j.info
	dir := hub.SnapshotDir(r.s.CacheDir, m.ID, m.SHA)
	local := r.opts.Source != "cache" // a cache source has its files already
	if local {
		var err error
		if dir, err = r.s.Hub.Download(ctx, m.ID, m.SHA, []string{"config.json"}); err != nil {
			return r.fetchFailed(j, err)
		}
	}
	j.snapshot = dir
	cand.Config, cand.ConfigErr = preflight.ReadConfig(filepath.Join(dir, "config.json"))
	cand.ConfigRead = cand.ConfigErr == nil
	if _, ok := hub.IsCapError(cand.ConfigErr); ok {
		return r.decided(j, probestep.FetchFailed(cand.ConfigErr))
	}
	j.config = cand.Config
	if cand.Config != nil {
		if sh := readiness.ShardOf(readiness.Input{Config: cand.Config, Safetensors: m.Safetensors}); sh != in.Model {
			in.Model = sh
			j.plan = Plan(in)
		}
	}
	cand.Mode = j.plan.Mode
	if res := preflight.Preflight(cand); res != nil {
		return r.decided(j, *res)
	}
	if j.plan.Decline != "" {
		return r.declined(j)
	}
	j.files = []string{"config.json"}
	if j.plan.Mode == compat.ModeFull {
		j.files = append(j.files, j.weights.Files...)
		j.inputs = hub.InputFiles(m.Siblings)
		// With a fleet, workers fetch the files they probe; the server
		// reads config.json for preflight only and never holds weights.
		if local && r.s.Fleet == nil {
			if _, err := r.s.Hub.Download(ctx, m.ID, m.SHA, j.weights.Files); err != nil {
				return r.fetchFailed(j, err)
			}
			j.inputsNote = probestep.FetchInputs(ctx, r.s.Hub, r.s.log(), m.ID, m.SHA, j.inputs)
		}
	}
	return j
}
