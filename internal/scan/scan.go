// Package scan is the scanner's orchestration: discover the models to test
// (discover.go), plan which need a (re)test and how (plan.go), fetch their
// files and run preflight (this file), probe them one per device while the
// next are fetched (pipeline.go), and record every outcome the moment it is
// known (record.go). The Service in service.go queues scans (manual,
// scheduled) so that two never run at once.
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
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
	"github.com/google-pytorch/torchtpu-scanner/internal/scanlock"
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

// ErrScanTimeout ends a scan that ran past Options.ScanTimeout; it also
// matches context.DeadlineExceeded, so the scan is recorded interrupted.
var ErrScanTimeout = errors.New("the scan ran past its deadline")

// scanTimeout is the error of a scan cut by its deadline: it reads as
// its cause (which names the flag) and matches both ErrScanTimeout and
// context.DeadlineExceeded.
type scanTimeout struct{ cause error }

func (e scanTimeout) Error() string   { return e.cause.Error() }
func (e scanTimeout) Unwrap() []error { return []error{e.cause, context.DeadlineExceeded} }

// withDeadline bounds ctx by opts.ScanTimeout, whose expiry is the cause.
func withDeadline(ctx context.Context, opts Options) (context.Context, context.CancelFunc) {
	if opts.ScanTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, opts.ScanTimeout,
		fmt.Errorf("%w (--scan-timeout %s): what was measured is saved, and the next scan tests the rest", ErrScanTimeout, opts.ScanTimeout))
}

// timedOut turns err into a scanTimeout when ctx ended by its deadline.
func timedOut(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, ErrScanTimeout) {
		return scanTimeout{cause}
	}
	return err
}

// Options are one scan's parameters.
type Options struct {
	Trigger string        // "cli", "schedule", "manual", "startup"
	Source  string        // "hub" (default) or "cache"
	Limit   int           // how many popular models
	Sort    string        // downloads, likes, trending
	Tasks   []string      // pipeline tags to include (all when empty)
	Models  []string      // exactly these ids (overrides the listing)
	Target  compat.Target // requested target (auto resolves once per scan)
	Mode    compat.Mode   // requested mode (Plan decides full or arch per model)
	Timeout time.Duration // per probe
	Force   bool          // retest even when nothing changed
	Devices int           // probes at once, one per device
	// ScanTimeout is the whole scan's deadline (0: none); a scan past it
	// ends interrupted with ErrScanTimeout.
	ScanTimeout time.Duration
}

// Progress is reported after every model that got an outcome.
type Progress struct {
	ScanID    int64
	Planned   int
	Done      int
	Probed    int
	Unchanged int
	ModelID   string
	Result    *compat.Result // nil when the model was unchanged
}

// Hooks let a caller observe scans (metrics, progress bars, the service's
// state). Every field is optional.
type Hooks struct {
	Progress   func(Progress)
	ProbeDone  func(r compat.Result, held time.Duration)
	ScanDone   func(s store.Scan)
	HubFailure func(err error) // the Hub could not be reached (nil: it could)
}

// then is h followed by o: each event reaches h's hook, then o's.
func (h Hooks) then(o Hooks) Hooks {
	return Hooks{
		Progress:   chain(h.Progress, o.Progress),
		ScanDone:   chain(h.ScanDone, o.ScanDone),
		HubFailure: chain(h.HubFailure, o.HubFailure),
		ProbeDone: func(r compat.Result, held time.Duration) {
			if h.ProbeDone != nil {
				h.ProbeDone(r, held)
			}
			if o.ProbeDone != nil {
				o.ProbeDone(r, held)
			}
		},
	}
}

func chain[T any](a, b func(T)) func(T) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(v T) { a(v); b(v) }
}

// Scanner runs scans. Its fields are its dependencies, set once at
// construction.
type Scanner struct {
	Hub    HubClient
	Prober Prober
	// DeviceProbers, when set, holds one prober per device (each pinned to
	// its device); worker i probes with DeviceProbers[i]. Prober still
	// answers Env.
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
	// workers; dispatch.go): the scan plans against the runtime its
	// workers report, queues every model to probe and ends when the queue
	// is drained. Prober is then not used.
	Fleet Fleet
	// FleetWait is how long a scan waits for a live worker; 10 minutes
	// when zero.
	FleetWait time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
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

// job is one model on its way through a scan.
type job struct {
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

	mu        sync.Mutex
	jobs      store.JobCounts       // the fleet's share of the scan (dispatch.go)
	queued    int                   // jobs this run queued
	planned   bool                  // every model is decided or queued (dispatch)
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
	sc := store.Scan{Trigger: opts.Trigger, Status: store.ScanRunning, Target: string(target), Runtime: rt,
		Params: string(params), StartedAt: started}
	id, err := s.Store.StartScan(ctx, sc)
	if err != nil {
		return sc, fmt.Errorf("scan: start: %w", err)
	}
	sc.ID = id
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

func withDefaults(o Options) Options {
	if o.Trigger == "" {
		o.Trigger = "cli"
	}
	if o.Source == "" {
		o.Source = "hub"
	}
	if o.Limit <= 0 {
		o.Limit = 100
	}
	if o.Sort == "" {
		o.Sort = "downloads"
	}
	if o.Target == "" {
		o.Target = compat.TargetAuto
	}
	if o.Mode == "" {
		o.Mode = compat.ModeAuto
	}
	if o.Timeout <= 0 {
		o.Timeout = 20 * time.Minute
	}
	if o.Devices <= 0 {
		o.Devices = 1
	}
	return o
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
	return target, rt, Host{MemoryBytes: mem, Probes: opts.Devices}, nil
}

func (r *run) execute(ctx context.Context) error {
	log := r.s.log().With("scan_id", r.scan.ID)
	target := r.target
	if r.opts.Target == compat.TargetAuto && target != compat.TargetTPU {
		log.Info("no TPU found: --target auto runs on "+string(target), "target", target, "device", r.runtime.Device)
	}
	r.budget, r.budgetOf = Budget(target, r.runtime, r.host)

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
	r.scan.Planned = len(models)
	log.Info("scan planned", "models", len(models), "target", target, "mode", r.opts.Mode, "devices", r.opts.Devices,
		"budget_gib", float64(r.budget)/(1<<30), "budget_of", r.budgetOf)
	if err := r.s.Store.UpdateScanProgress(ctx, r.scan.ID, len(models), 0, 0, 0); err != nil {
		return fmt.Errorf("scan: progress: %w", err)
	}
	if r.s.Fleet != nil {
		return r.dispatch(ctx, models)
	}
	return r.pipeline(ctx, models)
}

// prepareJob plans, fetches and preflights one model. It returns nil when
// the model needs no retest, a job with result set when the outcome is
// already known, or a job ready to probe.
func (r *run) prepareJob(ctx context.Context, m hub.ModelInfo) *job {
	j := &job{info: m}
	if he := r.refusal(m.ID); he != nil {
		return r.fetchFailed(j, he)
	}
	if prev, err := r.s.Store.LatestResult(ctx, m.ID, r.target); err == nil {
		j.previous = &prev
	} else if !errors.Is(err, store.ErrNotFound) {
		return r.scannerError(j, compat.StageEnv, fmt.Errorf("read previous result: %w", err))
	}
	in := Input{SHA: m.SHA, Previous: j.previous, Runtime: r.runtime, Target: r.target, Mode: r.opts.Mode,
		Force: r.opts.Force, Budget: r.budget, BudgetOf: r.budgetOf}
	in.Weights.Files, in.Weights.Bytes = hub.WeightFiles(m.Siblings)
	if j.plan = Plan(in); !j.plan.Retest {
		return nil
	}
	// Decline what the listing (and its excerpt of config.json) already
	// rules out (gated, custom code, other libraries, tasks), before any
	// download or further request.
	listed := listedCandidate(m, r.s.HasToken)
	listed.Mode = r.opts.Mode
	if res := Preflight(listed); res != nil && listingDecides(*res, m) {
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
	return r.fetch(ctx, j, listed)
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

// fetch downloads config.json (and, in full mode, the weights and the
// tokenizer and processor files) and runs preflight again on what came.
func (r *run) fetch(ctx context.Context, j *job, cand Candidate) *job {
	m := j.info
	j.files = []string{"config.json"}
	full := j.plan.Mode == compat.ModeFull && j.plan.Decline == ""
	if full {
		j.files = append(j.files, j.weights.Files...)
		j.inputs = hub.InputFiles(m.Siblings)
	}
	// With a fleet, workers fetch the files they probe; the server reads
	// config.json for preflight only and never holds the weights.
	download := j.files
	if r.s.Fleet != nil {
		download = j.files[:1]
	}
	dir := hub.SnapshotDir(r.s.CacheDir, m.ID, m.SHA)
	if r.opts.Source != "cache" { // a cache source has its files already
		var err error
		if dir, err = r.s.Hub.Download(ctx, m.ID, m.SHA, download); err != nil {
			return r.fetchFailed(j, err)
		}
		if full && r.s.Fleet == nil { // a worker fetches its own
			j.inputsNote = r.fetchInputs(ctx, m)
		}
	}
	j.snapshot = dir
	cand.Config, cand.ConfigErr = readConfig(filepath.Join(dir, "config.json"))
	if ce, ok := hub.IsCapError(cand.ConfigErr); ok {
		return r.decided(j, overCap(ce))
	}
	j.config = cand.Config
	cand.Mode = j.plan.Mode
	if res := Preflight(cand); res != nil {
		return r.decided(j, *res)
	}
	if j.plan.Decline != "" {
		return r.declined(j)
	}
	return j
}

// fetchInputs downloads the model's tokenizer and processor files
// (hub.InputFiles), each on its own: none is needed (the probe builds
// synthetic inputs without them), so a file that is missing, refused or
// over its cap (hub.FileCap) is logged and named in the returned note, and
// never fails the model. The note is "" when every file came.
func (r *run) fetchInputs(ctx context.Context, m hub.ModelInfo) string {
	return FetchInputs(ctx, r.s.Hub, r.s.log(), m.ID, m.SHA, hub.InputFiles(m.Siblings))
}

// Downloader fetches files of a repository at a revision into the Hub
// cache; *hub.Client is the real one.
type Downloader interface {
	Download(ctx context.Context, id, sha string, files []string) (string, error)
}

// FetchInputs downloads a model's input files (here, and on a worker) as
// fetchInputs says, and returns the note of those that did not come.
func FetchInputs(ctx context.Context, dl Downloader, log *slog.Logger, id, sha string, files []string) string {
	var missed []string
	for _, f := range files {
		if _, err := dl.Download(ctx, id, sha, []string{f}); err != nil {
			if ctx.Err() != nil {
				return ""
			}
			log.Warn("input file not fetched; the probe falls back to synthetic inputs if it needs it",
				"model", id, "file", f, "err", err)
			missed = append(missed, f+" ("+inputFileProblem(err)+")")
		}
	}
	if len(missed) == 0 {
		return ""
	}
	return "input files not fetched: " + strings.Join(missed, ", ")
}

// inputFileProblem is the short reason an input file was not fetched.
func inputFileProblem(err error) string {
	var he *hub.Error
	switch {
	case errors.Is(err, hub.ErrTooLarge):
		return "over its size cap"
	case errors.Is(err, hub.ErrNotAllowed):
		return "not an allowed file type"
	case errors.Is(err, hub.ErrIntegrity):
		return "failed its integrity check"
	case errors.As(err, &he):
		return fmt.Sprintf("the Hub answered %d", he.Status)
	}
	return "download failed"
}

// listingDecides reports whether a preflight verdict made from the listing
// alone stands, or needs config.json (which may say otherwise) first.
func listingDecides(res compat.Result, m hub.ModelInfo) bool {
	if res.Status != compat.StatusSkipped || res.Reason == nil {
		return false
	}
	switch *res.Reason {
	case compat.ReasonGated, compat.ReasonDisabled, compat.ReasonRemoteCode:
		return true
	case compat.ReasonUnsupportedLibrary:
		// sentence-transformers repos pass when their config has a
		// model_type, which only config.json may tell.
		return m.Library != "" && (m.Library != "sentence-transformers" || m.Config != nil)
	case compat.ReasonUnsupportedTask:
		return m.PipelineTag != "" || m.Config != nil
	}
	return false
}

// readConfig reads and parses config.json, never past its cap (a cache
// filled by other tools may hold anything).
func readConfig(path string) (map[string]any, error) {
	b, err := hub.ReadCapped(path, "config.json")
	if err != nil {
		return nil, fmt.Errorf("read config.json: %w", err)
	}
	return ParseConfig(b)
}

// probe runs one model on a device, reruns once a result that would change
// the model's status, and records what stands.
// It returns the write of what stands, for the recorder (nil when there is
// nothing to write).
func (r *run) probe(ctx, wctx context.Context, p Prober, j *job) func() {
	res := r.probeOnce(ctx, p, j)
	if ctx.Err() != nil && res.Status == compat.StatusError {
		// Shutting down: an interrupted probe says nothing about the model.
		r.s.log().Info("probe interrupted", "model", j.info.ID)
		return nil
	}
	if j.previous != nil && WouldChange(j.previous.Status, res.Status) {
		again := r.probeOnce(ctx, p, j)
		if ctx.Err() != nil && again.Status == compat.StatusError {
			r.s.log().Info("rerun interrupted; the change stays unconfirmed", "model", j.info.ID)
			return nil
		}
		if again.Status != res.Status {
			r.s.log().Warn("flaky result: status change not confirmed by a rerun", "model", j.info.ID,
				"kept", j.previous.Status, "first", res.Status, "rerun", again.Status)
			return func() { r.recordFlaky(wctx, j, res) }
		}
		res = again
	}
	return func() { r.record(wctx, j, res, true) }
}

// WouldChange reports whether a new status would change what the model
// shows, so that a rerun confirms it first (here, and on a worker);
// errors (the scanner's environment) never count as a change worth
// confirming, and neither do skips.
func WouldChange(old, new compat.Status) bool {
	if old == new || new == compat.StatusError || new == compat.StatusSkipped {
		return false
	}
	return old == compat.StatusPass || old.HeldAgainstModel()
}

func (r *run) probeOnce(ctx context.Context, p Prober, j *job) compat.Result {
	start := time.Now()
	res := p.Probe(ctx, probe.Request{
		ModelID: j.info.ID, Revision: j.info.SHA, SnapshotDir: j.snapshot, Task: j.info.PipelineTag,
		Target: r.target, Mode: j.plan.Mode, Timeout: r.opts.Timeout,
		MemoryBudgetBytes: j.plan.Budget, PlanNote: planNote(j),
	})
	held := time.Since(start)
	r.mu.Lock()
	r.busy += held
	r.mu.Unlock()
	if res.Task == "" {
		res.Task = j.info.PipelineTag
	}
	if r.hooks.ProbeDone != nil {
		r.hooks.ProbeDone(res, held)
	}
	return res
}

// planNote is what the probe is told of its plan, for its config stage's
// note: why it is retested, why in this mode, and which input files did
// not come.
func planNote(j *job) string {
	note := j.plan.Reason + "; " + j.plan.ModeReason
	if j.inputsNote != "" {
		note += "; " + j.inputsNote
	}
	return note
}
