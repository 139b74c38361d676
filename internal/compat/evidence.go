package compat

import (
	"fmt"
	"strings"
	"time"
)

// EvidenceKind is what a verdict rests on: a run that measured it, a
// prediction, or nothing.
type EvidenceKind string

// The evidence tiers, strongest first.
const (
	// EvidenceMeasured: a probe ran the model on a target and saw the
	// verdict (a pass, or a status held against the model). On cpu it is
	// the CPU reference's verdict, never TorchTPU's.
	EvidenceMeasured EvidenceKind = "measured"
	// EvidencePredicted: nothing ran the model to a verdict; something else
	// predicts it (Evidence.From names what, e.g. the runtime's TorchTPU
	// kernel table). Never a pass on TPU.
	EvidencePredicted EvidenceKind = "predicted"
	// EvidenceNone: no verdict at all (untested, skipped, the scanner's own
	// error) and nothing predicts one.
	EvidenceNone EvidenceKind = "none"
)

// EvidenceKinds lists the tiers, strongest first.
var EvidenceKinds = []EvidenceKind{EvidenceMeasured, EvidencePredicted, EvidenceNone}

// Evidence is what one verdict rests on. A measured verdict says where
// (the target, the device as its runtime named it and how many the probe
// ran on), with what (the runtime's key, RuntimeRef.Key) and when; a
// predicted one says from what. The fields of the other tiers are empty
// (and left out of JSON).
type Evidence struct {
	Kind        EvidenceKind `json:"kind"`
	Target      Target       `json:"target,omitempty"`
	Device      string       `json:"device,omitempty"`
	DeviceCount int          `json:"device_count,omitempty"` // devices the probe ran on; 0 when not known
	Runtime     string       `json:"runtime,omitempty"`      // RuntimeRef.Key of the result's runtime
	At          *time.Time   `json:"at,omitempty"`
	From        string       `json:"from,omitempty"` // predicted: what predicts the verdict
}

// EvidenceOf is the one rule for what the verdict of r rests on, whoever
// shows it (the table, the model page, badges, feeds, the API, the CSV):
//
//   - measured: r is a verdict (pass, fail, oom, timeout, crash), on
//     r.Target's device, r.DevicesUsed of them, r's runtime, at r.TestedAt;
//   - predicted: r is no verdict, and something predicts one (predictedFrom);
//   - none: nil, or no verdict and nothing that predicts one.
func EvidenceOf(r *Result) Evidence {
	if r == nil {
		return Evidence{Kind: EvidenceNone}
	}
	if r.Status.IsVerdict() {
		e := Evidence{Kind: EvidenceMeasured, Target: r.Target, Device: r.Runtime.Device, DeviceCount: max(r.DevicesUsed, 0),
			Runtime: r.Runtime.Ref(r.Target).Key()}
		if e.Device == "" {
			e.Device = string(r.Target)
		}
		if !r.TestedAt.IsZero() {
			at := r.TestedAt.UTC()
			e.At = &at
		}
		return e
	}
	if from := predictedFrom(*r); from != "" {
		return Evidence{Kind: EvidencePredicted, Target: r.Target, From: from}
	}
	return Evidence{Kind: EvidenceNone}
}

// EvidenceOfMode is the evidence of the verdict of one way of running r's
// model (r.Modes[mode]): measured by the run that made r (its target,
// device, devices, runtime and date) when that verdict is one, none when
// the mode was not run, skipped or the scanner's own error, whatever the
// inference verdict rests on.
func EvidenceOfMode(r *Result, mode string) Evidence {
	if r == nil {
		return Evidence{Kind: EvidenceNone}
	}
	v, ok := r.Modes[mode]
	if !ok || !v.Status.IsVerdict() {
		return Evidence{Kind: EvidenceNone}
	}
	run := *r
	run.Status = v.Status
	return EvidenceOf(&run)
}

// predictedFrom names what predicts the verdict of a result that has none,
// "" when nothing does. Nothing does yet: the runtime's TorchTPU kernel
// table (the Result's tpu_ops, issue 36) will, as "TorchTPU <version>'s
// kernel table" (its Target then being tpu, the target predicted for). A
// new source of predictions is one more case here; a TPU verdict predicted
// beside a measured one on another target (a CPU run's tpu_ops) is a
// second verdict, with EvidencePredicted of its own, never this result's.
func predictedFrom(Result) string { return "" }

// EvidenceOfPrediction is the evidence of a TorchTPU prediction (a
// result's TPUOps, made off tpu): predicted, for tpu, from the runtime's
// kernel table. It is the prediction's own, never the result's: the
// result's verdict stays measured on its own target (EvidenceOf).
func EvidenceOfPrediction(t TPUOps) Evidence {
	return Evidence{Kind: EvidencePredicted, Target: TargetTPU, From: PredictionSource(t.Table)}
}

// PredictionSource names what a TorchTPU prediction comes from, for a
// kernel table named table (KernelTable.Name).
func PredictionSource(table string) string {
	return "the TorchTPU kernel table of " + table
}

// EvidenceOfEvent is the evidence of the result that made the event
// (EvidenceOf): e's target, device and device count, runtime and time
// (DeviceCount 0, not known, for an event whose result is gone).
//
// A serving change (Event.Serving) is measured by the serving probe: its
// device and tensor_parallel_size chips, its runtime's key
// (ServingRuntime.Key: vllm-torchtpu~torch~torch_tpu~libtpu) and time.
func EvidenceOfEvent(e Event) Evidence {
	if e.Serving() {
		at := e.At.UTC()
		rt := e.Runtime
		key := ServingRuntime{VLLMTorchTPU: &rt.VLLMTorchTPU, Torch: &rt.Torch, TorchTPU: &rt.TorchTPU, Libtpu: &rt.LibTPU}.Key()
		ev := Evidence{Kind: EvidenceMeasured, Target: e.Target, Device: rt.Device, DeviceCount: max(rt.DeviceCount, 0), Runtime: key, At: &at}
		if ev.Device == "" {
			ev.Device = string(e.Target)
		}
		return ev
	}
	return EvidenceOf(&Result{Target: e.Target, Status: e.ToStatus, Stage: e.Stage, Signature: e.Signature,
		Revision: e.Revision, TestedAt: e.At, Runtime: e.Runtime, DevicesUsed: e.DevicesUsed})
}

// Short is the evidence in a few words, for a table cell or a badge's
// title: "measured on 2 × TPU v6e", "measured on cpu", "predicted from
// TorchTPU 0.2.0's kernel table", "none (no verdict)".
func (e Evidence) Short() string {
	switch e.Kind {
	case EvidenceMeasured:
		return "measured on " + e.where()
	case EvidencePredicted:
		if e.From == "" {
			return "predicted"
		}
		return "predicted from " + e.From
	}
	return "none (no verdict)"
}

// Sentence is the evidence in full: Short, then the runtime and the date
// of a measurement ("measured on 1 × TPU v6e with torch 2.15.0, torch_tpu
// 0.2.0, transformers 5.23.0 on 2026-11-30").
func (e Evidence) Sentence() string {
	s := e.Short()
	if e.Kind != EvidenceMeasured {
		return s
	}
	if rt := runtimeWords(e.Runtime); rt != "" {
		s += " with " + rt
	}
	if e.At != nil {
		s += " on " + e.At.UTC().Format(time.DateOnly)
	}
	return s
}

// where is the device a measurement ran on: "cpu", "1 × TPU v6e".
func (e Evidence) where() string {
	d := e.Device
	if d == "" {
		d = string(e.Target)
	}
	if e.Target == TargetCPU && !strings.EqualFold(d, "cpu") {
		d = "cpu (" + d + ")"
	}
	// One cpu is "cpu"; an accelerator's count is always said.
	if e.DeviceCount > 1 || e.DeviceCount == 1 && e.Target != TargetCPU {
		return fmt.Sprintf("%d × %s", e.DeviceCount, d)
	}
	return d
}

// runtimeWords are a runtime key's versions as words ("torch 2.15.0,
// torch_tpu 0.2.0, transformers 5.23.0, harness 1.4.0"); "" for a key
// that does not parse.
func runtimeWords(key string) string {
	r, err := ParseRuntimeKey(key)
	if err != nil {
		return ""
	}
	var parts []string
	for _, kv := range [][2]string{{"torch", r.Torch}, {"torch_tpu", r.TorchTPU}, {"transformers", r.Transformers}, {"harness", r.Harness}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	return strings.Join(parts, ", ")
}
