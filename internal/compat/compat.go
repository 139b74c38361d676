// Package compat holds the scanner's vocabulary: the status words, stages,
// failure classes and reasons of ../shared/CONTRACT.md, and the Model and
// Result records that every other package passes around and serialises.
//
// The JSON tags here are the public contract. Nullable contract fields are
// pointers: a metric that was not measured is nil, and marshals as null.
package compat

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
)

// Status is the outcome of one probe of one model on one target.
type Status string

// The status words of the contract.
const (
	StatusPass     Status = "pass"
	StatusFail     Status = "fail"
	StatusOOM      Status = "oom"
	StatusTimeout  Status = "timeout"
	StatusCrash    Status = "crash"
	StatusSkipped  Status = "skipped"
	StatusError    Status = "error"
	StatusUntested Status = "untested"
)

// Statuses lists every status word, in the order the site shows them.
var Statuses = []Status{StatusPass, StatusFail, StatusOOM, StatusTimeout, StatusCrash, StatusSkipped, StatusError, StatusUntested}

// Valid reports whether s is one of the contract's status words.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// HeldAgainstModel reports whether the status says something about the model
// (as opposed to the scanner's own environment, or no verdict at all).
func (s Status) HeldAgainstModel() bool {
	switch s {
	case StatusFail, StatusOOM, StatusTimeout, StatusCrash:
		return true
	}
	return false
}

// IsVerdict reports whether the status says something about the model:
// pass, or a status held against it (as opposed to skipped, error,
// untested, or no result at all).
func (s Status) IsVerdict() bool { return s == StatusPass || s.HeldAgainstModel() }

// Stage is one step of a probe, in the order they run.
type Stage string

// The stages of a probe, in order.
const (
	StageEnv      Stage = "env"
	StageConfig   Stage = "config"
	StageLoad     Stage = "load"
	StageForward  Stage = "forward"
	StageNumerics Stage = "numerics"
	StageCompile  Stage = "compile"
	StageGenerate Stage = "generate"
)

// Stages lists the stages in the order they run.
var Stages = []Stage{StageEnv, StageConfig, StageLoad, StageForward, StageNumerics, StageCompile, StageGenerate}

// Valid reports whether s is one of the contract's stages.
func (s Stage) Valid() bool {
	for _, v := range Stages {
		if s == v {
			return true
		}
	}
	return false
}

// FailureClass says why a stage failed.
type FailureClass string

// The failure classes of the contract.
const (
	ClassUnsupportedOp    FailureClass = "unsupported_op"
	ClassUnsupportedDtype FailureClass = "unsupported_dtype"
	ClassCompileError     FailureClass = "compile_error"
	ClassRecompile        FailureClass = "recompile"
	ClassNumericsMismatch FailureClass = "numerics_mismatch"
	ClassOOM              FailureClass = "oom"
	ClassTimeout          FailureClass = "timeout"
	ClassCrash            FailureClass = "crash"
	ClassLoadError        FailureClass = "load_error"
	ClassConfigError      FailureClass = "config_error"
	ClassImportError      FailureClass = "import_error"
	ClassDeviceUnavail    FailureClass = "device_unavailable"
	ClassOther            FailureClass = "other"
)

// FailureClasses lists every failure class.
var FailureClasses = []FailureClass{ClassUnsupportedOp, ClassUnsupportedDtype, ClassCompileError, ClassRecompile,
	ClassNumericsMismatch, ClassOOM, ClassTimeout, ClassCrash, ClassLoadError, ClassConfigError, ClassImportError,
	ClassDeviceUnavail, ClassOther}

// Valid reports whether c is one of the contract's failure classes.
func (c FailureClass) Valid() bool {
	for _, v := range FailureClasses {
		if c == v {
			return true
		}
	}
	return false
}

// Reason says why preflight declined to run a model (status skipped).
type Reason string

// The skip reasons of the contract.
const (
	ReasonRemoteCode         Reason = "remote_code"
	ReasonGated              Reason = "gated"
	ReasonNoSafetensors      Reason = "no_safetensors"
	ReasonTooLarge           Reason = "too_large"
	ReasonUnsupportedLibrary Reason = "unsupported_library"
	ReasonUnsupportedTask    Reason = "unsupported_task"
	ReasonDisabled           Reason = "disabled"
	ReasonNotFound           Reason = "not_found"
)

// Reasons lists every skip reason.
var Reasons = []Reason{ReasonRemoteCode, ReasonGated, ReasonNoSafetensors, ReasonTooLarge, ReasonUnsupportedLibrary,
	ReasonUnsupportedTask, ReasonDisabled, ReasonNotFound}

// Valid reports whether r is one of the contract's reasons.
func (r Reason) Valid() bool {
	for _, v := range Reasons {
		if r == v {
			return true
		}
	}
	return false
}

// Target is where a probe runs.
type Target string

// The targets of the contract. TargetAuto is only ever a request: a result
// always records the target it really ran on.
const (
	TargetTPU  Target = "tpu"
	TargetCPU  Target = "cpu"
	TargetCUDA Target = "cuda"
	TargetAuto Target = "auto"
)

// Targets lists the concrete targets a result can carry.
var Targets = []Target{TargetTPU, TargetCPU, TargetCUDA}

// The target rules live here, and only here: what a probe may be asked to
// run on (ParseTarget), what a result can carry (ParseResultTarget), what
// selects results (ParseTargetFilter), and where a request may end up
// running (Target.Admits).

// ParseTarget accepts a target a probe may be asked for: a concrete target
// or auto.
func ParseTarget(s string) (Target, error) {
	switch t := Target(s); t {
	case TargetTPU, TargetCPU, TargetCUDA, TargetAuto:
		return t, nil
	}
	return "", fmt.Errorf("unknown target %q (want auto, tpu, cpu or cuda)", s)
}

// ParseResultTarget accepts a target a result can carry: tpu, cpu or cuda,
// never auto.
func ParseResultTarget(s string) (Target, error) {
	switch t := Target(s); t {
	case TargetTPU, TargetCPU, TargetCUDA:
		return t, nil
	}
	return "", fmt.Errorf("target %q is not a concrete target (want tpu, cpu or cuda)", s)
}

// ParseTargetFilter reads a target that selects results (scanner check,
// the API's ?target=): "" and auto select every target and return "";
// otherwise a concrete target.
func ParseTargetFilter(s string) (Target, error) {
	switch t := Target(s); t {
	case "", TargetAuto:
		return "", nil
	case TargetTPU, TargetCPU, TargetCUDA:
		return t, nil
	}
	return "", fmt.Errorf("unknown target %q (want tpu, cpu, cuda or auto)", s)
}

// Admits checks that a probe asked to run on t really ran on got: got is
// a concrete target, a concrete request runs on itself only, and auto runs
// on tpu or cpu (never cuda: auto means TorchTPU when present, else the
// CPU).
func (t Target) Admits(got Target) error {
	if _, err := ParseResultTarget(string(got)); err != nil {
		return err
	}
	switch {
	case t == TargetAuto && got == TargetCUDA:
		return errors.New("target cuda on an auto request (auto is tpu or cpu)")
	case t != TargetAuto && got != t:
		return fmt.Errorf("target %s on a %s request", got, t)
	}
	return nil
}

// Mode is how a probe gets its weights.
type Mode string

// The modes of the contract. ModeAuto is only ever a request.
const (
	ModeFull Mode = "full"
	ModeArch Mode = "arch"
	ModeAuto Mode = "auto"
)

// ParseMode accepts full, arch or auto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeFull, ModeArch, ModeAuto:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q (want auto, full or arch)", s)
}

// Runtime records the software and device a result was produced with.
// Empty strings mean "not present" (torch_tpu on a cpu run, for example).
type Runtime struct {
	Python       string `json:"python"`
	Torch        string `json:"torch"`
	Transformers string `json:"transformers"`
	TorchTPU     string `json:"torch_tpu"`
	Harness      string `json:"harness"`
	Device       string `json:"device"`
	DeviceCount  int    `json:"device_count"`
	// Extensions beyond the contract.
	LibTPU string `json:"libtpu,omitempty"`
	// VLLMTorchTPU is the vllm-torchtpu version of a serving change's
	// runtime (ServingRuntime.EventRuntime); "" elsewhere.
	VLLMTorchTPU string   `json:"vllm_torchtpu,omitempty"`
	DeviceMemGB  *float64 `json:"device_memory_gib,omitempty"`
	// TCMalloc: whether tcmalloc was the harness's allocator (the runner
	// preloads it where installed; TorchTPU's host performance needs it);
	// nil when not known. Not part of Key: it never forces a retest.
	TCMalloc *bool `json:"tcmalloc,omitempty"`
}

// RetestKey is the part of the runtime that decides whether a model must
// be retested: a change in any of these versions invalidates a result. The
// store and the fleet file results and jobs under it (their runtime_key);
// the public name of a runtime, with its target, is RuntimeRef.Key.
func (r Runtime) RetestKey() string {
	return r.Torch + "|" + r.TorchTPU + "|" + r.Transformers + "|" + r.Harness
}

// RuntimeOfKey is the runtime a RetestKey names (its versions only: the device
// and the other fields are not in the key); false for a string that is not
// a key. Versions never hold "|" (Runtime.Validate), so this reverses Key.
func RuntimeOfKey(key string) (Runtime, bool) {
	f := strings.Split(key, "|")
	if len(f) != 4 {
		return Runtime{}, false
	}
	return Runtime{Torch: f[0], TorchTPU: f[1], Transformers: f[2], Harness: f[3]}, true
}

// Metrics are the measurements of a probe. Every field is nil unless it was
// really measured.
type Metrics struct {
	LoadS         *float64 `json:"load_s"`
	FirstForwardS *float64 `json:"first_forward_s"`
	ForwardMS     *float64 `json:"forward_ms"`
	CompileS      *float64 `json:"compile_s"`
	TokensPerS    *float64 `json:"tokens_per_s"`
	PeakMemBytes  *int64   `json:"peak_mem_bytes"`
	MaxAbsDiff    *float64 `json:"max_abs_diff"`
	Top1Agreement *float64 `json:"top1_agreement"`
	// MFU and MBU: model FLOPs and weight bytes per second of a passing run
	// ÷ the device's peaks (internal/harness/harness_efficiency.py).
	MFU *float64 `json:"mfu"`
	MBU *float64 `json:"mbu"`
	// Extensions beyond the contract.
	CompiledStepMS *float64 `json:"compiled_step_ms,omitempty"`
	TTFTMS         *float64 `json:"ttft_ms,omitempty"`
	Perplexity     *float64 `json:"perplexity,omitempty"`
	Tolerance      *float64 `json:"tolerance,omitempty"`
	ParamCount     *int64   `json:"param_count,omitempty"`
	// RelError is the largest relative error ||device - reference|| /
	// ||reference|| over the dense outputs (boxes, masks, depth, audio, ...);
	// CosineSimilarity the smallest over the embeddings (numerics.json).
	RelError         *float64 `json:"rel_error,omitempty"`
	CosineSimilarity *float64 `json:"cosine_similarity,omitempty"`
	// Efficiency is how MFU and MBU were computed (or why not).
	Efficiency *Efficiency `json:"efficiency,omitempty"`
	// CollectiveMS is the time a sharded probe's rank 0 spent in
	// collectives during one profiled forward step (torch.profiler's c10d
	// ops); nil when not sharded or not profiled.
	CollectiveMS *float64 `json:"collective_ms,omitempty"`
	// GraphBreaks is how many graph breaks torch's dynamo counted in the
	// compile stage, GraphBreakReasons the first three reasons, shortened
	// (nil when the compile stage did not run that far).
	GraphBreaks       *int64   `json:"graph_breaks,omitempty"`
	GraphBreakReasons []string `json:"graph_break_reasons,omitempty"`
	// Precision is the float32 matmul precision the device figures were
	// measured at on tpu ("default" or "highest"; nil off tpu);
	// NumericsPrecision the one whose numerics decided; PrecisionChecks
	// the numerics at each of the two.
	Precision         *string                   `json:"precision,omitempty"`
	NumericsPrecision *string                   `json:"numerics_precision,omitempty"`
	PrecisionChecks   map[string]PrecisionCheck `json:"precision_checks,omitempty"`
}

// PrecisionCheck is the numerics of a tpu forward at one float32 matmul
// precision against the float32 CPU reference.
type PrecisionCheck struct {
	OK            bool     `json:"ok"`
	MaxAbsDiff    *float64 `json:"max_abs_diff"`
	Top1Agreement *float64 `json:"top1_agreement"`
	Why           *string  `json:"why"`
}

// Run modes of Result.Modes (the keys of the verdict matrix).
const (
	ModeTrain             = "train"
	ModeCompiled          = "compiled"
	ModeEager             = "eager" // cpu and cuda: their one eager mode
	ModeEagerDeferAndFuse = "eager_defer_and_fuse"
	ModeEagerDeferNever   = "eager_defer_never"
)

// ModeServe names the serving verdict where badges (?mode=serve) and
// `scanner check --mode serve` ask for it: the model's serving cell
// (Model.Serving), not a key of Result.Modes.
const ModeServe = "serve"

// Verdict is how one way of running the model went (Result.Modes): a small
// Result of its own. Its metrics are those of the mode: the train step's
// losses against the reference's, step time, throughput and peak memory;
// an eager mode's forward time and numerics; the compile stage's graphs,
// graph breaks and recompiles.
type Verdict struct {
	Status       Status        `json:"status"`
	Stage        *string       `json:"stage"`
	FailureClass *FailureClass `json:"failure_class,omitempty"`
	Op           *string       `json:"op,omitempty"`
	Reason       *string       `json:"reason,omitempty"`
	Signature    *string       `json:"signature"`
	Message      *string       `json:"message"`
	Metrics      ModeMetrics   `json:"metrics"`
	Note         string        `json:"note,omitempty"`
	// Evidence is what this verdict rests on (EvidenceOfMode); set by the
	// web layer as it serves the result, never stored.
	Evidence *Evidence `json:"evidence,omitempty"`
}

// ModeMetrics are a Verdict's figures; a figure the mode does not measure
// is left out, one it measured and could not is null in the harness's file.
type ModeMetrics struct {
	// train
	Losses          []*float64 `json:"losses,omitempty"`
	ReferenceLosses []*float64 `json:"reference_losses,omitempty"`
	StepMS          *float64   `json:"step_ms,omitempty"`
	TokensPerS      *float64   `json:"tokens_per_s,omitempty"`
	SamplesPerS     *float64   `json:"samples_per_s,omitempty"`
	PeakMemBytes    *int64     `json:"peak_mem_bytes,omitempty"`
	PeakMemSource   *string    `json:"peak_mem_source,omitempty"`
	ParamsChanged   *float64   `json:"params_changed,omitempty"`
	MaxLossDiff     *float64   `json:"max_loss_diff,omitempty"`
	LossTolerance   *float64   `json:"loss_tolerance,omitempty"`
	LR              *float64   `json:"lr,omitempty"`
	// eager modes
	ForwardMS     *float64 `json:"forward_ms,omitempty"`
	FirstForwardS *float64 `json:"first_forward_s,omitempty"`
	MaxAbsDiff    *float64 `json:"max_abs_diff,omitempty"`
	Top1Agreement *float64 `json:"top1_agreement,omitempty"`
	// compiled
	CompileS          *float64 `json:"compile_s,omitempty"`
	CompiledStepMS    *float64 `json:"compiled_step_ms,omitempty"`
	Graphs            *int64   `json:"graphs,omitempty"`
	GraphBreaks       *int64   `json:"graph_breaks,omitempty"`
	GraphBreakReasons []string `json:"graph_break_reasons,omitempty"`
	Recompiles        *int64   `json:"recompiles,omitempty"`
	// tpu: the float32 matmul precision the figures were measured at
	Precision *string `json:"precision,omitempty"`
}

// Train is r's train verdict, nil when the probe has none (an old result,
// or a probe that failed before the train step).
func (r Result) Train() *Verdict {
	if v, ok := r.Modes[ModeTrain]; ok {
		return &v
	}
	return nil
}

// Efficiency records the basis of MFU and MBU: the peaks used and the
// model's FLOPs and weight bytes; Note says why a figure is null.
type Efficiency struct {
	Device              string   `json:"device,omitempty"` // devices.json key
	PeakBF16FLOPS       *float64 `json:"peak_bf16_flops,omitempty"`
	PeakHBMBytesPerS    *float64 `json:"peak_hbm_bytes_per_s,omitempty"`
	Tokens              *int64   `json:"tokens,omitempty"`
	FLOPsPerToken       *float64 `json:"flops_per_token,omitempty"`
	WeightBytesPerToken *float64 `json:"weight_bytes_per_token,omitempty"`
	ForwardTiming       string   `json:"forward_timing,omitempty"` // eager or compiled
	Model               string   `json:"model,omitempty"`          // full, or reduced (arch mode)
	Note                string   `json:"note,omitempty"`
	// Devices is how many devices' peaks a sharded probe is measured
	// against (the peaks above are theirs together); 0 for one.
	Devices int `json:"devices,omitempty"`
}

// StageRun is the evidence of one stage: how it ended and how long it took.
type StageRun struct {
	Stage     Stage   `json:"stage"`
	OK        bool    `json:"ok"`
	Skipped   bool    `json:"skipped,omitempty"`
	DurationS float64 `json:"duration_s"`
	Note      string  `json:"note,omitempty"`
}

// Result is one probe of one model at one revision on one target.
type Result struct {
	Target       Target        `json:"target"`
	Status       Status        `json:"status"`
	Stage        *Stage        `json:"stage"`
	FailureClass *FailureClass `json:"failure_class"`
	Op           *string       `json:"op"`
	Reason       *Reason       `json:"reason"`
	Signature    *string       `json:"signature"`
	Message      *string       `json:"message"`
	Mode         *Mode         `json:"mode"`
	Revision     string        `json:"revision"`
	TestedAt     time.Time     `json:"tested_at"`
	DurationS    float64       `json:"duration_s"`
	Runtime      Runtime       `json:"runtime"`
	Metrics      Metrics       `json:"metrics"`
	Repro        string        `json:"repro"`
	// Extensions beyond the contract.
	Task    string     `json:"task,omitempty"`
	Stages  []StageRun `json:"stages,omitempty"`
	LogTail string     `json:"log_tail,omitempty"`
	ScanID  *int64     `json:"scan_id,omitempty"`
	// Continuation is set for a causal LM probed in full mode with its own
	// tokenizer; nil otherwise.
	Continuation *Continuation `json:"continuation,omitempty"`
	// Worker is the host that produced the result under --dispatch
	// workers ("" for a probe of the scanner's own process).
	Worker string `json:"worker,omitempty"`
	// DevicesUsed is how many devices (chips) the probe ran on: 1 unless
	// it was sharded over several, and then Sharding says how (nil
	// otherwise, or when a sharded probe ended before it said).
	DevicesUsed int       `json:"devices_used"`
	Sharding    *Sharding `json:"sharding"`
	// WorkerTestedAt is the time the worker's own clock gave the result
	// (its probe's start) under --dispatch workers; TestedAt is then when
	// the server received it, so that no worker's clock orders results.
	// Nil for a probe of the scanner's own process.
	WorkerTestedAt *time.Time `json:"worker_tested_at,omitempty"`
	// KnownIssue is where the operator tracks the result's signature
	// (--known-issues); nil when untracked. Never stored: the web layer
	// sets it as it serves the result.
	KnownIssue *KnownIssue `json:"known_issue"`
	// Modes is the verdict matrix: one Verdict per way of running the model
	// (ModeTrain, ModeCompiled, the eager modes); nil in results from
	// before it. Status stays the inference verdict.
	Modes map[string]Verdict `json:"modes,omitempty"`
	// PrecisionSensitive says the numerics passed on tpu only at
	// torch.tpu.Precision.HIGHEST.
	PrecisionSensitive bool `json:"precision_sensitive,omitempty"`
	// Evidence is what the verdict rests on (EvidenceOf, its one rule).
	// Never stored nor read: the web layer sets it as it serves the
	// result, as it does KnownIssue.
	Evidence *Evidence `json:"evidence,omitempty"`
	// TPUOps is the prediction for TorchTPU of a run that was not on a
	// TPU: the ops it traced, judged against the runtime's kernel table
	// (never a TPU result); nil when none was made.
	TPUOps *TPUOps `json:"tpu_ops,omitempty"`
	// OpsTraced is the harness's trace that TPUOps is judged from. The
	// store keeps it apart (a new kernel table judges it again) and never
	// reads it back into a result.
	OpsTraced *OpsTrace `json:"ops_traced,omitempty"`
}

// KnownIssue is a tracked failure: its title, the URL of its tracking
// issue and its state ("open", "fixed in torch_tpu 0.3.0", …), as the
// operator wrote them in the known-issues file.
type KnownIssue struct {
	Title string `json:"title"`
	URL   string `json:"url"`
	State string `json:"state"`
}

// Sharding is how a sharded probe split the model over its devices.
type Sharding string

// The shardings: transformers' own tensor-parallel plan, or FSDP2
// (fully_shard per layer) for a model class without one.
const (
	ShardingTP   Sharding = "tp"
	ShardingFSDP Sharding = "fsdp"
)

// Valid reports whether s is tp or fsdp.
func (s Sharding) Valid() bool { return s == ShardingTP || s == ShardingFSDP }

// Continuation is a causal LM's greedy continuation of the harness's fixed
// prompt, decoded with the model's own tokenizer: text the model wrote,
// escaped wherever it is shown.
type Continuation struct {
	Prompt string `json:"prompt"`
	Text   string `json:"text"`
}

// Model is a Hub model as the scanner knows it, with its current result on
// one target (nil when it has none yet).
type Model struct {
	ID        string `json:"id"`
	Task      string `json:"task"`
	Library   string `json:"library"`
	Downloads int64  `json:"downloads"`
	Likes     int64  `json:"likes"`
	Gated     bool   `json:"gated"`
	SHA       string `json:"sha"`
	URL       string `json:"url"`
	// Readiness is what config.json and the Hub's safetensors metadata
	// say about running the model on TPUs; nil when not computed.
	Readiness *readiness.Readiness `json:"readiness"`
	Result    *Result              `json:"result"`
	// Serving is whether vLLM-TorchTPU serves the model (serving.Declare);
	// nil when nothing is known (no registry read yet, or no architectures
	// in its config). Never stored: the web layer sets it as it serves the
	// model.
	Serving *ServingCell `json:"serving"`
	// Extensions beyond the contract.
	Tags         []string  `json:"tags,omitempty"`
	Aliases      []string  `json:"aliases,omitempty"`
	LastModified time.Time `json:"last_modified,omitzero"`
}

// ModelStatus is the status a model shows: its result's, or untested.
func (m Model) ModelStatus() Status {
	if m.Result == nil {
		return StatusUntested
	}
	return m.Result.Status
}

// Ptr returns a pointer to v, for filling nullable fields.
func Ptr[T any](v T) *T { return &v }

// Repro is the command that reproduces a result on its own, on one
// device. It is the one writer of repro commands (ReproOn adds the
// devices of a sharded probe); the harness leaves its result's repro
// empty for the runner to fill (TestReproHasNoCopies).
func Repro(modelID, revision string, target Target, mode Mode) string {
	return ReproOn(modelID, revision, target, mode, 1)
}

// ReproOn is Repro for a probe sharded over devices (--devices N when N > 1).
func ReproOn(modelID, revision string, target Target, mode Mode, devices int) string {
	s := "scanner probe " + modelID
	if revision != "" {
		s += " --revision " + revision
	}
	s += " --target " + string(target)
	if mode != "" {
		s += " --mode " + string(mode)
	}
	if devices > 1 {
		s += " --devices " + strconv.Itoa(devices)
	}
	return s
}

// EventKind says what a status change means to a user.
type EventKind string

// The kinds of status change the feed carries.
const (
	EventNew        EventKind = "new"        // a first verdict on a target: no result, or none that was a verdict, before
	EventRegression EventKind = "regression" // was pass, now held against the model
	EventFix        EventKind = "fix"        // was held against the model, now pass
	EventChange     EventKind = "change"     // any other change of status
	EventFlaky      EventKind = "flaky"      // a change that did not reproduce on rerun
)

// EventKinds are the kinds of status change, in the site's order.
var EventKinds = []EventKind{EventRegression, EventFix, EventNew, EventChange, EventFlaky, EventTrainRegression, EventTrainFix,
	EventServingRegression, EventServingFix, EventServingNew}

// The train step's changes (Result.Modes["train"]), listed apart from the
// inference's: a model whose inference still passes can stop training.
const (
	EventTrainRegression EventKind = "train_regression" // the train verdict was pass, now held against the model
	EventTrainFix        EventKind = "train_fix"        // the train verdict was held against the model, now pass
)

// TrainChange decides whether a new train verdict makes a train event:
// only a regression or a fix (ClassifyChange) between two train verdicts
// does; last is the status of the newest earlier train verdict on the
// target that is not an error ("" for none).
func TrainChange(last, new Status) (EventKind, bool) {
	switch ClassifyChange(last, new) {
	case EventRegression:
		return EventTrainRegression, true
	case EventFix:
		return EventTrainFix, true
	}
	return "", false
}

// Train reports whether e is a change of the train verdict, not of the
// model's (inference) status.
func (e Event) Train() bool {
	return e.Kind == EventTrainRegression || e.Kind == EventTrainFix
}

// ClassifyChange is the one rule for what a change of status from old to
// new means, whoever shows it: the feed's events (store), a comparison of
// two runtimes (compare.Classify) and `scanner check`. old is "" for a
// model's first result on a target.
//
//   - new: the first result on a target, or the first verdict after
//     results that were none (error, skipped): error → pass is new, not
//     fix, as the scanner's own failure said nothing about the model
//   - regression: pass → a status held against the model
//   - fix: a status held against the model → pass
//   - change: anything else (fail → oom, pass → error, ...)
func ClassifyChange(old, new Status) EventKind {
	switch {
	case old == "" || old == StatusUntested || (!old.IsVerdict() && new.IsVerdict()):
		return EventNew
	case old == StatusPass && new.HeldAgainstModel():
		return EventRegression
	case old.HeldAgainstModel() && new == StatusPass:
		return EventFix
	default:
		return EventChange
	}
}

// VerdictChange decides whether a new result changes what is known of the
// model, and how (ClassifyChange): last is the status of the model's newest
// earlier result on the target that is not an error ("" for none), new the
// new result's. An error is the scanner's own (its environment, its inputs:
// the float32 CPU reference failed the same way) and no verdict: it makes no
// change, and a result after it is compared with the one before it. The same
// status as last makes none either.
func VerdictChange(last, new Status) (EventKind, bool) {
	if new == StatusError || new == last {
		return "", false
	}
	return ClassifyChange(last, new), true
}

// Scanner-error signatures: a result of status error whose signature starts
// with one of these is the scanner's own mistake that the float32 CPU
// reference shares with the target, for a given revision and runtime
// (harness_inputs: its inputs; harness_load: building the model; reference:
// the reference itself); one starting with environment: is a package the
// environment lacks (environment:missing_package:timm).
const (
	SignatureHarnessInputs = "harness_inputs:"
	SignatureHarnessLoad   = "harness_load:"
	SignatureReference     = "reference:"
	SignatureEnvironment   = "environment:"
)

// Reproducible reports whether r is an error the same probe would repeat:
// the scanner's own, shared by the float32 CPU reference, fixed only by a
// new revision or a new runtime (a new harness), never by trying again. An
// environment's error (a missing package, no device, an interrupted probe)
// is not: the next scan may not meet it.
func (r Result) Reproducible() bool {
	if r.Status != StatusError || r.Signature == nil {
		return false
	}
	for _, p := range []string{SignatureHarnessInputs, SignatureHarnessLoad, SignatureReference} {
		if strings.HasPrefix(*r.Signature, p) {
			return true
		}
	}
	return false
}

// Event is one status change of one model on one target.
type Event struct {
	ID         int64     `json:"id"`
	ModelID    string    `json:"model_id"`
	Target     Target    `json:"target"`
	Kind       EventKind `json:"kind"`
	FromStatus Status    `json:"from_status,omitempty"`
	ToStatus   Status    `json:"to_status"`
	Revision   string    `json:"revision"`
	Runtime    Runtime   `json:"runtime"`
	Stage      *Stage    `json:"stage,omitempty"` // the stage the result ended at
	Signature  *string   `json:"signature,omitempty"`
	Message    *string   `json:"message,omitempty"`
	At         time.Time `json:"at"`
	// DevicesUsed is how many devices the probe that made the event ran on
	// (its result's DevicesUsed); 0, and left out of JSON, when not known
	// (the result was deleted). Read with the event, never stored twice.
	DevicesUsed int `json:"devices_used,omitempty"`
	// KnownIssue is where the signature is tracked; set by the web layer
	// as it serves the event, never stored.
	KnownIssue *KnownIssue `json:"known_issue,omitempty"`
	// Evidence is what the new status rests on (EvidenceOfEvent); set by
	// the web layer as it serves the event, never stored.
	Evidence *Evidence `json:"evidence,omitempty"`
	// Epoch is the random id of the database's copy the event was written
	// in (store: renewed at every open); "" for events from before epochs.
	Epoch string `json:"-"`
}

// UID is the event's id across copies of the database: ID alone repeats
// after a restore from a backup (the restored copy hands it out again for
// another change), so it is "<Epoch>-<ID>"; an event from before epochs
// keeps its bare ID, the id it was published with (a feed reader that
// drops repeats must not see it as new). No "." (Standard Webhooks'
// webhook-id is signed in "id.timestamp.body").
func (e Event) UID() string {
	if e.Epoch == "" {
		return strconv.FormatInt(e.ID, 10)
	}
	return e.Epoch + "-" + strconv.FormatInt(e.ID, 10)
}

// AboutVerdicts reports whether e is a change between verdicts (or skips):
// neither side is an error. The store writes no other (VerdictChange);
// events from before that rule may still name one, and the feed and the CI
// gate leave them out.
func (e Event) AboutVerdicts() bool {
	return e.FromStatus != StatusError && e.ToStatus != StatusError
}
