// Package scan is the scanner's orchestration: discover the models to test,
// plan which need a (re)test, fetch their files, run preflight, probe them
// one per device, and record every outcome the moment it is known. The
// Service in service.go queues scans (manual, scheduled) so that two never
// run at once.
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
	Mode    compat.Mode
	Timeout time.Duration // per probe
	Force   bool          // retest even when nothing changed
	Devices int           // probes at once, one per device
	// MemoryBudgetBytes bounds the weights auto mode downloads; 0 derives it
	// from the runtime's device memory (or host memory on cpu).
	MemoryBudgetBytes int64
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

// Hooks let the caller observe a scan (metrics, progress bars). Every field
// is optional.
type Hooks struct {
	Progress   func(Progress)
	ProbeDone  func(r compat.Result, held time.Duration)
	ScanDone   func(s store.Scan)
	HubFailure func(err error) // the Hub could not be reached (nil: it could)
}

// Scanner runs scans. Its fields are its dependencies; set them all.
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
	Hooks         Hooks
	// ListCache lists models already in the local cache (--source cache);
	// defaults to hub.ScanCache.
	ListCache func(cacheDir string) ([]hub.ModelInfo, error)
	// Lookahead is how many fetched models may wait for a device (per
	// device); 0 means 2.
	Lookahead int
	// Fetchers is how many models are fetched at once; 0 means 4.
	Fetchers int
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
	snapshot string
	mode     compat.Mode
	result   *compat.Result // set when preflight or fetching decided the outcome
}

// run is the state of one scan in progress.
type run struct {
	s       *Scanner
	opts    Options
	scan    store.Scan
	target  compat.Target
	runtime compat.Runtime
	budget  int64

	mu        sync.Mutex
	refusals  map[string]*hub.Error // Hub refusals of exact --model ids
	done      int
	probed    int
	unchanged int
	busy      time.Duration
}

// Run performs one scan and returns its final record. A scan that could not
// start (no Python, Hub unreachable) is recorded as failed and its error
// returned; per-model problems never end a scan.
func (s *Scanner) Run(ctx context.Context, opts Options) (store.Scan, error) {
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
	r := &run{s: s, opts: opts, scan: sc, target: target, runtime: rt}
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
	r.budget = r.memoryBudget()

	models, invalid, err := r.discover(ctx)
	if err != nil {
		if r.s.Hooks.HubFailure != nil && errors.Is(err, ErrHub) {
			r.s.Hooks.HubFailure(err)
		}
		return err
	}
	if r.s.Hooks.HubFailure != nil && r.opts.Source == "hub" {
		r.s.Hooks.HubFailure(nil)
	}
	if len(invalid) > 0 {
		r.scan.Error = "not scanned: " + strings.Join(invalid, "; ")
	}
	if err := r.s.Store.UpsertModels(ctx, upserts(models)); err != nil {
		return fmt.Errorf("scan: save models: %w", err)
	}
	r.scan.Planned = len(models)
	log.Info("scan planned", "models", len(models), "target", target, "mode", r.opts.Mode, "devices", r.opts.Devices)
	if err := r.s.Store.UpdateScanProgress(ctx, r.scan.ID, len(models), 0, 0, 0); err != nil {
		return fmt.Errorf("scan: progress: %w", err)
	}
	return r.pipeline(ctx, models)
}

// pipeline fetches files for upcoming models while earlier ones hold the
// devices: several fetchers prepare models ahead (in a bounded window), the
// models reach a queue in popularity order, and Devices probe workers drain
// it; one recorder writes every outcome.
func (r *run) pipeline(ctx context.Context, models []hub.ModelInfo) error {
	look := r.s.Lookahead
	if look <= 0 {
		look = 2
	}
	// Outcomes are written by one recorder goroutine, off the devices' path;
	// the hand-off is unbuffered, so a crash loses at most the models in
	// flight. Writes use a context that shutdown does not cancel: a result
	// that was measured is kept.
	wctx := context.WithoutCancel(ctx)
	records := make(chan func())
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		for write := range records {
			write()
		}
	}()
	queue := make(chan *job, look*r.opts.Devices)
	var wg sync.WaitGroup
	for w := range r.opts.Devices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				if ctx.Err() != nil {
					continue // stopping: take no more work, drain the queue
				}
				if write := r.probe(ctx, wctx, r.s.proberFor(w), j); write != nil {
					records <- write
				}
			}
		}()
	}
	// Fetchers prepare several models at once, so slow downloads overlap
	// each other as well as the probes; the models still reach the devices
	// in popularity order, and at most `ahead` are fetched before their turn.
	ahead := r.fetchers() + look*r.opts.Devices
	slots := make([]chan *job, len(models))
	for i := range slots {
		slots[i] = make(chan *job, 1)
	}
	todo := make(chan int)
	window := make(chan struct{}, ahead)
	var fetchers sync.WaitGroup
	for range r.fetchers() {
		fetchers.Add(1)
		go func() {
			defer fetchers.Done()
			for i := range todo {
				if ctx.Err() != nil {
					continue
				}
				slots[i] <- r.prepare(ctx, models[i]) // nil: unchanged
			}
		}()
	}
	go func() {
		defer close(todo)
		for i := range models {
			select {
			case window <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case todo <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
dispatch:
	for i, m := range models {
		var j *job
		select {
		case j = <-slots[i]:
		case <-ctx.Done():
			break dispatch
		}
		<-window
		switch {
		case j == nil: // unchanged
			records <- func() { r.finishModel(wctx, m.ID, nil, false) }
		case j.result != nil:
			records <- func() { r.record(wctx, j, *j.result, false) }
		default:
			select {
			case queue <- j:
			case <-ctx.Done():
				break dispatch
			}
		}
	}
	fetchers.Wait()
	close(queue)
	wg.Wait()
	close(records)
	<-recorded
	return ctx.Err()
}

// fetchers is how many models are fetched at once.
func (r *run) fetchers() int {
	if r.s.Fetchers > 0 {
		return r.s.Fetchers
	}
	return 4
}

// prepare plans, fetches and preflights one model. It returns nil when the
// model needs no retest, a job with result set when the outcome is already
// known, or a job ready to probe.
func (r *run) prepare(ctx context.Context, m hub.ModelInfo) *job {
	j := &job{info: m}
	if he := r.refusal(m.ID); he != nil {
		return r.fetchFailed(j, he)
	}
	if prev, err := r.s.Store.LatestResult(ctx, m.ID, r.target); err == nil {
		j.previous = &prev
		if !r.opts.Force && unchanged(prev, m.SHA, r.runtime, r.opts.Mode) {
			return nil
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return r.scannerError(j, compat.StageEnv, fmt.Errorf("read previous result: %w", err))
	}

	cand := probe.Candidate{
		ID: m.ID, Revision: m.SHA, Task: m.PipelineTag, Library: m.Library, Tags: m.Tags,
		Gated: m.Gated, HasToken: r.s.HasToken, Disabled: m.Disabled, Mode: r.opts.Mode,
		MemoryBudgetBytes: r.budget,
	}
	cand.WeightFiles, cand.WeightBytes = hub.WeightFiles(m.Siblings)
	if r.opts.Mode == compat.ModeAuto && len(cand.WeightFiles) > 0 && !m.FilesMetadata && r.opts.Source != "cache" {
		// Listings name files without sizes: auto mode needs the sizes to
		// decide whether the weights fit, so ask for this revision's files.
		if full, err := r.s.Hub.ModelInfo(ctx, m.ID, m.SHA); err == nil {
			cand.WeightFiles, cand.WeightBytes = hub.WeightFiles(full.Siblings)
		} else {
			r.s.log().Warn("model info for file sizes; testing the architecture only", "model", m.ID, "err", err)
		}
	}
	// Decline what the listing (and its excerpt of config.json) already
	// rules out (gated, custom code, other libraries, tasks), before any
	// download.
	listed := cand
	listed.Config = m.Config
	if res := probe.Preflight(listed); res != nil && listingDecides(*res, m) {
		return r.decided(j, *res)
	}

	files := []string{"config.json"}
	j.mode = r.opts.Mode
	if r.wantWeights(cand) {
		files = append(files, cand.WeightFiles...)
		if hasFile(m.Siblings, "generation_config.json") {
			files = append(files, "generation_config.json")
		}
	}
	dir := hub.SnapshotDir(r.s.CacheDir, m.ID, m.SHA)
	if r.opts.Source != "cache" { // a cache source has its files already
		var err error
		if dir, err = r.s.Hub.Download(ctx, m.ID, m.SHA, files); err != nil {
			return r.fetchFailed(j, err)
		}
	}
	j.snapshot = dir
	cfg, cfgErr := readConfig(filepath.Join(dir, "config.json"))
	cand.Config, cand.ConfigErr = cfg, cfgErr
	if len(files) == 1 {
		// Weights were not fetched: preflight judges arch mode only.
		if cand.Mode == compat.ModeAuto {
			cand.Mode = compat.ModeArch
		}
		j.mode = cand.Mode
	}
	if res := probe.Preflight(cand); res != nil {
		return r.decided(j, *res)
	}
	return j
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
	case compat.ReasonNoSafetensors, compat.ReasonTooLarge:
		return len(m.Siblings) > 0
	}
	return false
}

func hasFile(sib []hub.Sibling, name string) bool {
	for _, s := range sib {
		if s.Name == name {
			return true
		}
	}
	return false
}

// wantWeights decides whether the real weights are downloaded.
func (r *run) wantWeights(c probe.Candidate) bool {
	if len(c.WeightFiles) == 0 {
		return false
	}
	switch c.Mode {
	case compat.ModeFull:
		return true
	case compat.ModeAuto:
		return c.WeightBytes > 0 && r.budget > 0 && c.WeightBytes <= r.budget
	}
	return false
}

// memoryBudget is how many bytes of weights auto mode accepts on this
// scan's target: the device memory the harness reported, else host memory.
func (r *run) memoryBudget() int64 {
	if r.opts.MemoryBudgetBytes > 0 {
		return r.opts.MemoryBudgetBytes
	}
	if r.target == compat.TargetCPU {
		// The run and its float32 reference both sit in host memory, with
		// activations on top: a quarter of it for the weights.
		if m, err := probe.PhysicalMemory(); err == nil {
			return int64(m / 4)
		}
		return 0
	}
	if r.runtime.DeviceMemGB != nil && *r.runtime.DeviceMemGB > 0 {
		// On an accelerator the weights run in bf16, about half a float32
		// checkpoint's size, which leaves room for activations.
		return int64(*r.runtime.DeviceMemGB * (1 << 30))
	}
	return 0
}

func readConfig(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config.json: %w", err)
	}
	return probe.ParseConfig(b)
}

// unchanged reports whether prev still stands: same revision, same runtime,
// a mode the scan accepts, and not a result of the scanner's own
// environment failing.
func unchanged(prev compat.Result, sha string, rt compat.Runtime, mode compat.Mode) bool {
	return prev.Status != compat.StatusError && prev.Status != compat.StatusUntested &&
		prev.Revision == sha && prev.Runtime.Key() == rt.Key() && modeAccepts(mode, prev.Mode)
}

// modeAccepts reports whether a result of mode got answers a scan asking
// for want: auto takes either; an explicit full or arch takes only itself
// (a result without a mode, a skip, stands for any).
func modeAccepts(want compat.Mode, got *compat.Mode) bool {
	return want == compat.ModeAuto || got == nil || *got == want
}

// decided completes a result that preflight produced.
func (r *run) decided(j *job, res compat.Result) *job {
	res.Target = r.target
	res.Revision = j.info.SHA
	res.Runtime = r.runtime
	if res.TestedAt.IsZero() {
		res.TestedAt = r.s.now().UTC()
	}
	if res.Repro == "" {
		res.Repro = compat.Repro(j.info.ID, j.info.SHA, r.target, r.opts.Mode)
	}
	if res.Task == "" {
		res.Task = j.info.PipelineTag
	}
	j.result = &res
	return j
}

// fetchFailed turns a download failure into a result: the Hub's own answers
// (gated, not found, disabled) are skips; anything else is the scanner's
// environment failing, never held against the model.
func (r *run) fetchFailed(j *job, err error) *job {
	var he *hub.Error
	if errors.As(err, &he) {
		if reason := he.Reason(); reason != "" {
			return r.decided(j, compat.Result{
				Status:  compat.StatusSkipped,
				Reason:  compat.Ptr(reason),
				Message: compat.Ptr("hub: " + he.Error()),
			})
		}
	}
	return r.scannerError(j, compat.StageConfig, fmt.Errorf("fetch files: %w", err))
}

func (r *run) scannerError(j *job, stage compat.Stage, err error) *job {
	return r.decided(j, compat.Result{
		Status:       compat.StatusError,
		Stage:        compat.Ptr(stage),
		FailureClass: compat.Ptr(compat.ClassOther),
		Message:      compat.Ptr(err.Error()),
	})
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
			return func() {
				if err := r.s.Store.RecordFlaky(wctx, j.info.ID, res, j.previous.Status); err != nil {
					r.s.log().Error("record flaky", "model", j.info.ID, "err", err)
				}
				r.finishModel(wctx, j.info.ID, &res, true)
			}
		}
		res = again
	}
	return func() { r.record(wctx, j, res, true) }
}

// proberFor is the prober of device i.
func (s *Scanner) proberFor(i int) Prober {
	if i < len(s.DeviceProbers) && s.DeviceProbers[i] != nil {
		return s.DeviceProbers[i]
	}
	return s.Prober
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
		Target: r.target, Mode: j.mode, Timeout: r.opts.Timeout, MemoryBudgetBytes: r.budget,
	})
	held := time.Since(start)
	r.mu.Lock()
	r.busy += held
	r.mu.Unlock()
	if res.Task == "" {
		res.Task = j.info.PipelineTag
	}
	if r.s.Hooks.ProbeDone != nil {
		r.s.Hooks.ProbeDone(res, held)
	}
	return res
}

func (r *run) record(ctx context.Context, j *job, res compat.Result, probed bool) {
	res.ScanID = compat.Ptr(r.scan.ID)
	if _, err := r.s.Store.RecordResult(ctx, j.info.ID, res); err != nil {
		r.s.log().Error("record result", "model", j.info.ID, "err", err)
	}
	r.s.log().Info("model done", "model", j.info.ID, "status", res.Status, "stage", deref(res.Stage),
		"reason", deref(res.Reason), "duration_s", res.DurationS)
	r.finishModel(ctx, j.info.ID, &res, probed)
}

func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

func (r *run) finishModel(ctx context.Context, id string, res *compat.Result, probed bool) {
	r.mu.Lock()
	r.done++
	if probed {
		r.probed++
	}
	if res == nil {
		r.unchanged++
	}
	p := Progress{ScanID: r.scan.ID, Planned: r.scan.Planned, Done: r.done, Probed: r.probed, Unchanged: r.unchanged, ModelID: id, Result: res}
	r.mu.Unlock()
	if err := r.s.Store.UpdateScanProgress(ctx, r.scan.ID, p.Planned, p.Done, p.Probed, p.Unchanged); err != nil && ctx.Err() == nil {
		r.s.log().Error("scan progress", "err", err)
	}
	if r.s.Hooks.Progress != nil {
		r.s.Hooks.Progress(p)
	}
}

// finish closes the scan record; it uses a fresh context so that a scan
// cancelled by shutdown is still recorded as interrupted.
func (r *run) finish(runErr error) (store.Scan, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := store.ScanFinish{Status: store.ScanDone, Error: r.scan.Error}
	switch {
	case runErr == nil:
	case errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded):
		f.Status, f.Error = store.ScanInterrupted, "interrupted: "+hub.Brief(runErr)
	default:
		// The record is read on the page and the API; the log has the
		// full error (URL queries included).
		f.Status, f.Error = store.ScanFailed, hub.Brief(runErr)
	}
	wall := r.s.now().Sub(r.scan.StartedAt)
	r.mu.Lock()
	if wall > 0 && r.probed > 0 {
		frac := r.busy.Seconds() / (wall.Seconds() * float64(r.opts.Devices))
		f.DeviceBusy = compat.Ptr(min(frac, 1))
	}
	planned, done, probed, unch := r.scan.Planned, r.done, r.probed, r.unchanged
	r.mu.Unlock()
	if err := r.s.Store.UpdateScanProgress(ctx, r.scan.ID, planned, done, probed, unch); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if err := r.s.Store.FinishScan(ctx, r.scan.ID, f); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("scan: finish: %w", err))
	}
	sc, err := r.s.Store.GetScan(ctx, r.scan.ID)
	if err != nil {
		sc = r.scan
	}
	if r.s.Hooks.ScanDone != nil {
		r.s.Hooks.ScanDone(sc)
	}
	return sc, runErr
}

func upserts(models []hub.ModelInfo) []store.ModelUpsert {
	out := make([]store.ModelUpsert, 0, len(models))
	for _, m := range models {
		out = append(out, store.ModelUpsert{
			ID: m.ID, Task: m.PipelineTag, Library: m.Library, Downloads: m.Downloads, Likes: m.Likes,
			Gated: m.Gated, SHA: m.SHA, Tags: m.Tags, LastModified: m.LastModified, Aliases: m.Aliases,
		})
	}
	return out
}
