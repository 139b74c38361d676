package compat

import (
	"slices"
	"strings"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/termsafe"
)

// The serving cell's types (issue 40): whether vLLM-TorchTPU serves a
// model, declared (internal/serving reads the pinned release's registry
// and fills a ServingCell) or measured (internal/serving/measure runs it).
// They live here, beside Model that carries the cell, so that the import
// arrow points down: internal/serving imports compat, never the reverse.

// ServingKind is what vLLM serves an architecture as.
type ServingKind string

// The kinds: text generation (the generate runner), pooling (embeddings,
// rerankers, classifiers, reward models: the pooling runner), and
// multimodal (generation with image, audio or video inputs).
const (
	ServingGeneration ServingKind = "generation"
	ServingPooling    ServingKind = "pooling"
	ServingMultimodal ServingKind = "multimodal"
)

// ServingKinds are the kinds in the order an architecture listed in
// several tables takes them: vLLM's default runner for an architecture it
// can both generate and pool with is the generate runner.
var ServingKinds = []ServingKind{ServingGeneration, ServingMultimodal, ServingPooling}

// Valid reports whether k is one of ServingKinds.
func (k ServingKind) Valid() bool { return slices.Contains(ServingKinds, k) }

// The evidence of a serving verdict.
const (
	// ServingEvidenceDeclared: the pinned release's vLLM registry lists (or
	// does not list) the model's architecture; nothing was run.
	ServingEvidenceDeclared = "declared"
	// ServingEvidenceMeasured: the serving probe ran.
	ServingEvidenceMeasured = "measured"
)

// ServingCell is a model's serving cell.
type ServingCell struct {
	Evidence    string `json:"evidence"`
	Package     string `json:"package"`
	Version     string `json:"version"`
	VLLMVersion string `json:"vllm_version,omitempty"`
	// Served says the registry lists one of the model's architectures;
	// Architecture is the first that it lists and Kind what it is served
	// as (both null when not served).
	Served       bool         `json:"served"`
	Kind         *ServingKind `json:"kind"`
	Architecture *string      `json:"architecture"`
	// Architectures are the model's, from its config.json.
	Architectures []string `json:"architectures"`
	// TensorParallelSize is --tensor-parallel-size per TPU generation
	// (serving.TensorParallel of readiness's min_devices); MaxModelLen is
	// --max-model-len (readiness's context_tokens), null when unknown.
	TensorParallelSize map[string]int `json:"tensor_parallel_size"`
	MaxModelLen        *int64         `json:"max_model_len"`
	// Command serves it on serving.CommandGeneration's chips; null when
	// not served.
	Command *string `json:"command"`
	// Measured is the model's newest measured serving verdict (a scan
	// with --vllm-python ran vLLM-TorchTPU on it); null when none. It
	// outranks the declared verdict where one verdict is asked for
	// (Verdict) when it is one (ServingMeasured.Judged).
	Measured *ServingMeasured `json:"measured"`
}

// Verdict is the cell's one verdict, the measured one first: pass says
// the model serves (measured: the serving probe passed; declared: the
// registry lists it), and evidence which tier said so. A measured probe
// that judged nothing (an error of the scanner's own, or not judged for
// want of a reference) leaves the declared verdict standing.
func (c ServingCell) Verdict() (pass bool, evidence string) {
	if c.Measured != nil && c.Measured.Judged() {
		return c.Measured.Status == string(StatusPass), ServingEvidenceMeasured
	}
	return c.Served, c.Evidence
}

// ServingMeasured is one measured serving probe's verdict
// (internal/serving/measure runs it). Status, Stage and FailureClass take
// this package's values; Reason says why a probe was not judged (status
// skipped: ServingReasonNoReference).
type ServingMeasured struct {
	Evidence           string         `json:"evidence"`
	Status             string         `json:"status"`
	Stage              *string        `json:"stage"`
	FailureClass       *string        `json:"failure_class"`
	Op                 *string        `json:"op"`
	Signature          *string        `json:"signature"`
	Message            *string        `json:"message"`
	Reason             *string        `json:"reason,omitempty"`
	Runtime            ServingRuntime `json:"runtime"`
	Device             *string        `json:"device"`
	TensorParallelSize int            `json:"tensor_parallel_size"`
	MaxModelLen        int            `json:"max_model_len"`
	Metrics            ServingMetrics `json:"metrics"`
	Tokens             []int          `json:"tokens,omitempty"`
	ReferenceTokens    []int          `json:"reference_tokens,omitempty"`
	LogTail            string         `json:"log_tail,omitempty"`
	// MeasuredAt is when the probe ended (zero: not said).
	MeasuredAt time.Time `json:"measured_at,omitzero"`
	// Revision is the model's revision (the Hub commit) the probe ran on:
	// the result it ran after (a fleet's server sets its job's); "" when
	// not said. Its serving changes name it, as other events do.
	Revision string `json:"revision,omitempty"`
	// LatestAttempt is a serving probe newer than this verdict that judged
	// nothing (the scanner's error, skipped for want of a CPU reference),
	// as the store reads it: this judged verdict stays the one shown, and
	// the page says what became of the later probe. Nil when this is the
	// newest; never stored, never sent by a worker.
	LatestAttempt *ServingMeasured `json:"latest_attempt,omitempty"`
}

// ServingReasonNoReference is a serving probe's reason for status skipped:
// the transformers CPU reference gave no greedy tokens to hold vLLM's to
// (it failed, or the model's inference probe showed it cannot run), so
// vLLM was not judged: never a pass, never a fail.
const ServingReasonNoReference = "no_reference"

// Judged reports whether m is a verdict on vLLM-TorchTPU (Status.IsVerdict:
// not the scanner's own error, not a probe skipped for want of a
// reference).
func (m ServingMeasured) Judged() bool { return Status(m.Status).IsVerdict() }

// ServingRuntime is the serving probe's own runtime: the versions in the
// vLLM interpreter.
type ServingRuntime struct {
	VLLMTorchTPU *string `json:"vllm-torchtpu"`
	VLLM         *string `json:"vllm"`
	Torch        *string `json:"torch"`
	TorchTPU     *string `json:"torch-tpu"`
	Libtpu       *string `json:"libtpu"`
	Python       *string `json:"python"`
}

// Key names the runtime as the serving probe's retests would:
// "vllm-torchtpu~torch~torch_tpu~libtpu" versions, an unknown one empty.
func (r ServingRuntime) Key() string {
	v := func(p *string) string {
		if p == nil {
			return ""
		}
		return strings.ReplaceAll(*p, "~", "_")
	}
	return strings.Join([]string{v(r.VLLMTorchTPU), v(r.Torch), v(r.TorchTPU), v(r.Libtpu)}, "~")
}

// ServingMetrics are the serving probe's figures; nil when not measured.
type ServingMetrics struct {
	LoadS        *float64 `json:"load_s"`
	TTFTS        *float64 `json:"ttft_s"`
	TokensPerS   *float64 `json:"tokens_per_s"`
	AgreedTokens *int     `json:"agreed_tokens"`
}

// The measured serving verdict's changes (ServingMeasured, issue 40),
// listed apart from the inference's and the train step's: a model can
// stop serving with vLLM-TorchTPU while its TorchTPU inference passes.
const (
	EventServingNew        EventKind = "serving_new"        // the first measured serving verdict
	EventServingRegression EventKind = "serving_regression" // it served (measured pass), now a verdict held against vLLM-TorchTPU
	EventServingFix        EventKind = "serving_fix"        // a verdict held against vLLM-TorchTPU, now it serves
)

// ServingChange decides whether a new measured serving status makes a
// serving event (ClassifyChange's rule between two judged verdicts): the
// first verdict is serving_new, pass → held against is a regression, held
// against → pass a fix. last is the status of the newest earlier judged
// serving verdict ("" for none). A probe that judged nothing (error,
// skipped for want of a reference) makes none, and neither does the same
// status or a change between two failures (fail → oom).
func ServingChange(last, new Status) (EventKind, bool) {
	if !new.IsVerdict() || new == last {
		return "", false
	}
	if !last.IsVerdict() {
		return EventServingNew, true
	}
	switch ClassifyChange(last, new) {
	case EventRegression:
		return EventServingRegression, true
	case EventFix:
		return EventServingFix, true
	}
	return "", false
}

// Serving reports whether e is a change of the measured serving verdict,
// not of the model's (inference) status.
func (e Event) Serving() bool {
	return e.Kind == EventServingNew || e.Kind == EventServingRegression || e.Kind == EventServingFix
}

// EventStage is the stage a serving change names: where a verdict other
// than pass ended (env, load, generate: Stage.Valid), as the train
// step's changes name theirs; nil for a pass or a stage not of a probe.
func (m ServingMeasured) EventStage() *Stage {
	if m.Stage == nil || Status(m.Status) == StatusPass || !Stage(*m.Stage).Valid() {
		return nil
	}
	return Ptr(Stage(*m.Stage))
}

// EventRuntime is the serving runtime as an event's Runtime: its torch,
// torch_tpu, libtpu, Python and vllm-torchtpu versions, the device the
// probe named and its tensor_parallel_size chips (an unknown one empty).
func (m ServingMeasured) EventRuntime() Runtime {
	v := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return Runtime{Python: v(m.Runtime.Python), Torch: v(m.Runtime.Torch), TorchTPU: v(m.Runtime.TorchTPU),
		LibTPU: v(m.Runtime.Libtpu), VLLMTorchTPU: v(m.Runtime.VLLMTorchTPU), Device: v(m.Device),
		DeviceCount: m.TensorParallelSize}
}

// Clean is m with its free text made safe where it enters the store
// (Result.Clean's rules: no terminal escapes or control characters, the
// message and the output bounded), as the fleet's workers send it too.
func (m ServingMeasured) Clean() ServingMeasured {
	if m.Message != nil {
		m.Message = Ptr(head(termsafe.Strip(*m.Message), MaxMessageBytes))
	}
	if m.Signature != nil {
		m.Signature = Ptr(head(termsafe.Strip(*m.Signature), MaxMessageBytes))
	}
	m.LogTail = tail(termsafe.Strip(m.LogTail), MaxLogTailBytes)
	return m
}

// maxServingTokens bounds the token lists a serving verdict carries (the
// serving table asks for 16; a worker may not send more than this).
const maxServingTokens = 4096

// Validate refuses a serving verdict that is not one a serving probe
// makes (a fleet worker's, before it is stored): measured evidence, a
// result status (skipped only with reason no_reference), labels within
// Result's bounds, figures in range, a tensor_parallel_size of 1 or more.
func (m ServingMeasured) Validate() error {
	st := Status(m.Status)
	switch {
	case m.Evidence != ServingEvidenceMeasured:
		return refuse("serving.evidence", "%q: want measured", clip(m.Evidence))
	case !st.Valid() || st == StatusUntested:
		return refuse("serving.status", "%q is not a result status", clip(m.Status))
	case st == StatusSkipped && (m.Reason == nil || *m.Reason != ServingReasonNoReference):
		return refuse("serving.reason", "skipped without reason %s", ServingReasonNoReference)
	case m.Reason != nil && st != StatusSkipped:
		return refuse("serving.reason", "a reason on status %s", st)
	case m.TensorParallelSize < 1 || m.TensorParallelSize > maxDevices:
		return refuse("serving.tensor_parallel_size", "%d: want 1 to %d", m.TensorParallelSize, maxDevices)
	case m.MaxModelLen < 0:
		return refuse("serving.max_model_len", "%d: want 0 or more", m.MaxModelLen)
	case len(m.Tokens) > maxServingTokens || len(m.ReferenceTokens) > maxServingTokens:
		return refuse("serving.tokens", "over %d tokens", maxServingTokens)
	case m.MeasuredAt.IsZero() || !InTimeRange(m.MeasuredAt):
		return refuse("serving.measured_at", "missing or outside %d–%d", minTestedAt.Year(), maxTestedAt.Year())
	case m.LatestAttempt != nil:
		return refuse("serving.latest_attempt", "the store's to read, not a probe's to send")
	case strings.ContainsAny(m.Revision, " \t"):
		return refuse("serving.revision", "%q has a space", clip(m.Revision))
	}
	if err := CheckLabel("serving.revision", m.Revision, MaxRevisionBytes); err != nil {
		return err
	}
	for _, l := range []struct {
		field string
		s     *string
		max   int
	}{
		{"serving.stage", m.Stage, MaxVersionBytes}, {"serving.failure_class", m.FailureClass, MaxVersionBytes},
		{"serving.op", m.Op, MaxOpBytes}, {"serving.signature", m.Signature, MaxSigBytes}, {"serving.device", m.Device, MaxDeviceBytes},
		{"serving.runtime.vllm-torchtpu", m.Runtime.VLLMTorchTPU, MaxVersionBytes}, {"serving.runtime.vllm", m.Runtime.VLLM, MaxVersionBytes},
		{"serving.runtime.torch", m.Runtime.Torch, MaxVersionBytes}, {"serving.runtime.torch-tpu", m.Runtime.TorchTPU, MaxVersionBytes},
		{"serving.runtime.libtpu", m.Runtime.Libtpu, MaxVersionBytes}, {"serving.runtime.python", m.Runtime.Python, MaxVersionBytes},
	} {
		if l.s == nil {
			continue
		}
		if err := CheckLabel(l.field, *l.s, l.max); err != nil {
			return err
		}
	}
	if a := m.Metrics.AgreedTokens; a != nil && (*a < 0 || *a > maxServingTokens) {
		return refuse("serving.metrics.agreed_tokens", "%d: want 0 to %d", *a, maxServingTokens)
	}
	for _, f := range []struct {
		field string
		v     *float64
		max   float64
	}{{"load_s", m.Metrics.LoadS, maxSeconds}, {"ttft_s", m.Metrics.TTFTS, maxSeconds}, {"tokens_per_s", m.Metrics.TokensPerS, maxRate}} {
		if err := checkRange("serving.metrics."+f.field, f.v, 0, f.max); err != nil {
			return err
		}
	}
	return nil
}
