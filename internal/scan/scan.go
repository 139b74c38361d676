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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
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
	HasToken      bool
	Logger        *slog.Logger
	// Hooks observe every scan (the app's metrics); Run takes the hooks of
	// one scan besides.
	Hooks Hooks
	// ListCache lists models already in the local cache (--source cache);
	// defaults to hub.ScanCache.
	ListCache func(cacheDir string) ([]hub.ModelInfo, error)
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
	budget   int64
	budgetOf string

	mu        sync.Mutex
	refusals  map[string]*hub.Error // Hub refusals of exact --model ids
	done      int
	probed    int
	unchanged int
	busy      time.Duration
}

// Run performs one scan and returns its final record; hooks observe this
// scan (after the Scanner's own Hooks). A scan that could not start (no
// Python, Hub unreachable) is recorded as failed and its error returned;
// per-model problems never end a scan.
func (s *Scanner) Run(ctx context.Context, opts Options, hooks Hooks) (store.Scan, error) {
	opts = withDefaults(opts)
	params, _ := json.Marshal(opts)
	started := s.now().UTC()
	// The environment comes first, so that the scan record names the
	// target it really runs on (auto resolves to tpu or cpu here).
	target, rt, envErr := s.Prober.Env(ctx, opts.Target)
	if envErr != nil {
		target, envErr = opts.Target, fmt.Errorf("scan: probe environment: %w", envErr)
	}
	sc := store.Scan{Trigger: opts.Trigger, Status: store.ScanRunning, Target: string(target), Runtime: rt,
		Params: string(params), StartedAt: started}
	id, err := s.Store.StartScan(ctx, sc)
	if err != nil {
		return sc, fmt.Errorf("scan: start: %w", err)
	}
	sc.ID = id
	r := &run{s: s, opts: opts, hooks: s.Hooks.then(hooks), scan: sc, target: target, runtime: rt}
	if envErr != nil {
		return r.finish(envErr)
	}
	return r.finish(r.execute(ctx))
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

func (r *run) execute(ctx context.Context) error {
	log := r.s.log().With("scan_id", r.scan.ID)
	target := r.target
	if r.opts.Target == compat.TargetAuto && target != compat.TargetTPU {
		log.Info("no TPU found: --target auto runs on "+string(target), "target", target, "device", r.runtime.Device)
	}
	mem, _ := probe.PhysicalMemory() // 0 when unknown: Budget says so
	r.budget, r.budgetOf = Budget(target, r.runtime, Host{MemoryBytes: mem, Probes: r.opts.Devices})

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
	listed := probe.ListedCandidate(m, r.s.HasToken)
	listed.Mode = r.opts.Mode
	if res := probe.Preflight(listed); res != nil && listingDecides(*res, m) {
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
func (r *run) fetch(ctx context.Context, j *job, cand probe.Candidate) *job {
	m := j.info
	files := []string{"config.json"}
	full := j.plan.Mode == compat.ModeFull && j.plan.Decline == ""
	if full {
		files = append(files, j.weights.Files...)
	}
	dir := hub.SnapshotDir(r.s.CacheDir, m.ID, m.SHA)
	if r.opts.Source != "cache" { // a cache source has its files already
		var err error
		if dir, err = r.s.Hub.Download(ctx, m.ID, m.SHA, files); err != nil {
			return r.fetchFailed(j, err)
		}
		if full {
			j.inputsNote = r.fetchInputs(ctx, m)
		}
	}
	j.snapshot = dir
	cand.Config, cand.ConfigErr = readConfig(filepath.Join(dir, "config.json"))
	j.config = cand.Config
	cand.Mode = j.plan.Mode
	if res := probe.Preflight(cand); res != nil {
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
	var missed []string
	for _, f := range hub.InputFiles(m.Siblings) {
		if _, err := r.s.Hub.Download(ctx, m.ID, m.SHA, []string{f}); err != nil {
			if ctx.Err() != nil {
				return ""
			}
			r.s.log().Warn("input file not fetched; the probe falls back to synthetic inputs if it needs it",
				"model", m.ID, "file", f, "err", err)
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

func readConfig(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config.json: %w", err)
	}
	return probe.ParseConfig(b)
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
	if j.previous != nil && wouldChange(j.previous.Status, res.Status) {
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

// wouldChange reports whether a new status would change what the model
// shows; errors (the scanner's environment) never count as a change worth
// confirming, and neither do skips.
func wouldChange(old, new compat.Status) bool {
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
