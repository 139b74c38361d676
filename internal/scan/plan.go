package scan

// This file is the scanner's planning, and its only one: whether a model is
// (re)tested, in which mode, whether its weights fit, and against which
// memory budget. Everything here is pure; the scan gathers the inputs, and
// the runner and the harness execute the decision (the harness still
// reports an oom if the weights do not fit after all).
//
// The probe fit formula (ProbeNeed), with the constants of
// internal/harness/fit.json (harness.Fit), which the harness reads too:
//
//	need(params, target) = params × dtype bytes × copies × fit_factor + fit_slack
//
// where the dtype is what the harness runs the model in on that target
// (bfloat16) and copies counts the model's copies in the budget's memory,
// in units of that dtype (3 on cpu: the bfloat16 run and its float32
// reference, 2 + 4 bytes; 1 on an accelerator, whose reference sits in
// host memory). A
// model fits when need ≤ budget. Before the download only the checkpoint's
// size B is known: it holds between B/4 (float32) and B/2 (16-bit)
// parameters. Auto mode chooses full only when the larger count fits (it
// errs towards arch, never towards an oom); an explicit --mode full is
// declined (too_large) only when even the smaller count does not fit.
//
// Sharding: readiness counts the devices of a generation that hold a model
// (internal/readiness.MinDevices: its bf16 weights and one sequence's KV
// cache, with 10% headroom, over one device's memory). When that is N > 1
// and the host has at least N devices, the probe is sharded over the
// smallest count M ≥ N that the host can run as one slice (a TPU's
// topologies in internal/harness/devices.json; any count on cpu and cuda)
// and that divides the model's attention heads and key/value heads
// (tensor parallelism splits them); when no such M divides them, the
// smallest slice M ≥ N (the harness then shards with FSDP2). One device's
// memory is --device-memory when set, else the generation's HBM
// (readiness.Generations), else what the harness reported; a cpu host
// has no device memory of its own, so only --device-memory shards there.
// A sharded probe's memory budget is M devices' on an accelerator; on cpu
// the ranks share the host, and the budget stays the host's.
//
// This is whether one smoke test fits where it runs, not whether a model
// can be served on a TPU: that is readiness.MinDevices (weights and KV
// cache in bf16 with its own headroom, over each generation's HBM).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
)

// torchOverhead is about what importing torch and transformers takes of a
// probe's memory limit before any model is loaded.
const torchOverhead = 3 << 29 // 1.5 GiB

// Host is what the plan knows of the machine.
type Host struct {
	MemoryBytes uint64 // physical memory; 0 when unknown
	Probes      int    // devices, and so probes that run at once (one per device)
	// DeviceMemory is one device's memory as the operator set it
	// (--device-memory, bytes); 0 leaves it to the device (DeviceMemory).
	DeviceMemory int64
}

// Devices describes the devices of a host for sharding: how many, one's
// memory and where that figure comes from, and the device counts one
// probe may shard over (nil: any count up to Count).
type Devices struct {
	Count  int
	Memory int64 // bytes; 0 when unknown (no sharding)
	Of     string
	Slices []int
}

// DevicesOf is the host's devices as the plan counts them: one device's
// memory is the host's --device-memory when set, else the TPU generation's
// HBM (readiness.Generations, by the device name the harness reported),
// else the device memory the harness reported; on cpu only
// --device-memory gives one (a cpu host has no device memory of its own).
// A TPU shards over the slices its topologies list (devices.json).
func DevicesOf(target compat.Target, rt compat.Runtime, h Host) Devices {
	d := Devices{Count: max(h.Probes, 1)}
	peak, known := harness.MatchDevicePeak(string(target), rt.Device)
	if target == compat.TargetTPU {
		if known {
			d.Slices = peak.SliceSizes()
		} else {
			d.Slices = []int{1} // an unknown TPU: no topology to shard over
		}
	}
	gen, isGen := readiness.GenerationNamed(peak.Generation)
	switch {
	case h.DeviceMemory > 0:
		d.Memory, d.Of = h.DeviceMemory, "--device-memory"
	case target == compat.TargetCPU:
		d.Of = "cpu: no device memory (--device-memory sets one)"
	case known && isGen:
		d.Memory, d.Of = gen.HBMBytes, gen.Name+" HBM"
	case rt.DeviceMemGB != nil && *rt.DeviceMemGB > 0:
		d.Memory, d.Of = int64(*rt.DeviceMemGB*(1<<30)), string(target)+": device memory"
	default:
		d.Of = string(target) + ": device memory unknown"
	}
	return d
}

// ProbeMemLimit is each harness process's memory limit (its RLIMIT_DATA):
// three quarters of the host's memory, shared by the probes that run at
// once. 0 means unknown (the runner then runs without a limit, and says so).
func ProbeMemLimit(h Host) uint64 {
	return h.MemoryBytes / 4 * 3 / uint64(max(h.Probes, 1))
}

// Budget is the memory, in bytes, that a probe's model may take on target,
// and where that figure comes from; 0 when unknown. On cpu the model and
// its reference share the host with everything else: a quarter of the
// host's memory, and never more than the probe's memory limit leaves once
// torch is imported (--device-memory does not change it: it sizes devices
// for sharding only). On an accelerator it is one device's memory:
// --device-memory when set, else as the harness reported it in the
// runtime.
func Budget(target compat.Target, rt compat.Runtime, h Host) (int64, string) {
	if target == compat.TargetCPU {
		if h.MemoryBytes == 0 {
			return 0, "host memory unknown"
		}
		quarter := int64(h.MemoryBytes / 4)
		limit := int64(ProbeMemLimit(h)) - torchOverhead
		if limit < quarter {
			return max(limit, 0), "cpu: the probe's memory limit less torch's own share"
		}
		return quarter, "cpu: a quarter of host memory"
	}
	if h.DeviceMemory > 0 {
		return h.DeviceMemory, string(target) + ": --device-memory"
	}
	if rt.DeviceMemGB != nil && *rt.DeviceMemGB > 0 {
		return int64(*rt.DeviceMemGB * (1 << 30)), string(target) + ": device memory"
	}
	return 0, string(target) + ": device memory unknown"
}

// ProbeNeed is the probe fit formula: the bytes a model of params
// parameters takes in a probe's memory budget on target.
func ProbeNeed(params int64, target compat.Target) int64 {
	t, ok := harness.Fit.Targets[target]
	if !ok { // not a concrete target: count it as cpu, the costlier
		t = harness.Fit.Targets[compat.TargetCPU]
	}
	whole := params * harness.Fit.DtypeBytes[t.Dtype] * t.Copies
	return int64(float64(whole)*harness.Fit.FitFactor) + harness.Fit.FitSlackBytes
}

// TrainNeed is the train fit formula (fit.json's train_about): the bytes a
// full-mode train step of a model of params parameters takes on target,
// every copy the budget holds trained with its gradients and AdamW state.
func TrainNeed(params int64, target compat.Target) int64 {
	t, ok := harness.Fit.Targets[target]
	if !ok {
		t = harness.Fit.Targets[compat.TargetCPU]
	}
	whole := params * harness.Fit.DtypeBytes[t.Dtype] * t.Copies * harness.Fit.TrainStateFactor
	return int64(float64(whole)*harness.Fit.FitFactor) + harness.Fit.FitSlackBytes
}

// trainRule decides whether a full-mode probe runs the train step: not
// when the weights, gradients and AdamW state of the larger parameter count
// the checkpoint can hold exceed the budget (a host out of memory would
// take the inference verdict down with it). It returns the reason to skip,
// "" to train. Arch mode's reduced model always trains; an unknown budget
// or size trains (the train verdict's own oom says if it did not fit).
func trainRule(in Input, mode compat.Mode) string {
	if mode != compat.ModeFull || in.Budget <= 0 || in.Weights.Bytes <= 0 {
		return ""
	}
	params := in.Weights.Bytes / harness.Fit.CheckpointBytesPerParam.Min
	if need := TrainNeed(params, in.Target); need > in.Budget {
		return fmt.Sprintf("the weights, gradients and AdamW state (%s of weights) need up to %s, over the %s budget (%s)",
			gib(in.Weights.Bytes), gib(need), gib(in.Budget), in.BudgetOf)
	}
	return ""
}

// Weights are a model's safetensors weight files as listed.
type Weights struct {
	Files []string // hub.WeightFiles: the checkpoint's files and index
	Bytes int64    // their total size; 0 when unknown (listings carry names only)
}

// checkpoint reports whether the files hold a transformers safetensors
// checkpoint (what the harness loads in full mode).
func (w Weights) checkpoint() bool {
	return slices.ContainsFunc(w.Files, hub.IsCheckpoint)
}

// needRange is need for the fewest and the most parameters a checkpoint of
// w.Bytes can hold.
func (w Weights) needRange(target compat.Target) (least, most int64) {
	b := harness.Fit.CheckpointBytesPerParam
	return ProbeNeed(w.Bytes/b.Max, target), ProbeNeed(w.Bytes/b.Min, target)
}

// Input is everything Plan looks at.
type Input struct {
	SHA      string         // the revision the scan sees
	Weights  Weights        // the model's weights, as listed
	Previous *compat.Result // the latest result on this target; nil if none
	Runtime  compat.Runtime // this scan's runtime (the retest key)
	Target   compat.Target  // where this scan runs (auto resolved)
	Mode     compat.Mode    // the mode asked for: full, arch or auto
	Force    bool           // retest whatever the previous result
	Budget   int64          // Budget's figure; 0 when unknown
	BudgetOf string         // Budget's source, for the reason
	// Devices are the host's (DevicesOf), Model what sharding needs to
	// know of the model (readiness.ShardOf; zero when unknown).
	Devices Devices
	Model   readiness.Shard
}

// Decision is what Plan decided for one model.
type Decision struct {
	// Retest is false when the previous result still stands.
	Retest bool
	// Mode is full or arch: what the probe runs, and whether the weights
	// are downloaded (full). Set whenever Retest is.
	Mode compat.Mode
	// Decline, when set, is the skip reason of an explicit --mode full that
	// cannot run (no_safetensors, too_large); the model is not probed.
	Decline compat.Reason
	// AskSizes: auto mode met weights listed without sizes; the decision
	// may change with them (ask the Hub, and plan again).
	AskSizes bool
	// Budget is the memory budget the probe runs against (bytes; 0 when
	// unknown): a sharded probe's on an accelerator is its devices'.
	Budget int64
	// Devices is how many devices the probe holds: 1, or the count it is
	// sharded over. Set whenever Retest is.
	Devices int
	// ShardReason says why the probe is sharded, or why a model that
	// needs several devices is not ("" when it fits one).
	ShardReason string
	// Reason says, for people, why the model is retested or not;
	// ModeReason why this mode (or the decline's message). The scan logs
	// both and hands them to the harness, which notes them in its result.
	Reason, ModeReason string
	// NoTrain, when set, is why the probe skips the train step (trainRule);
	// the harness gets it as --no-train.
	NoTrain string
}

// Plan decides whether a model is (re)tested and how.
func Plan(in Input) Decision {
	d := Decision{Budget: in.Budget}
	d.Retest, d.Reason = retest(in)
	if d.Retest {
		d.Devices, d.ShardReason = shard(in)
		if b := shardBudget(in.Target, in.Budget, d.Devices); b != in.Budget {
			d.Budget = b
			in.Budget, in.BudgetOf = b, fmt.Sprintf("%d devices' %s", d.Devices, in.BudgetOf)
		}
		d.Mode, d.Decline, d.AskSizes, d.ModeReason = chooseMode(in)
		d.NoTrain = trainRule(in, d.Mode)
	}
	return d
}

// shardBudget is the memory budget of a probe sharded over devices devices
// on target, from one probe's budget on one device: on an accelerator it
// holds every device's memory; on cpu the host's memory is one budget
// whatever the count. A re-planned job's budget comes from here too.
func shardBudget(target compat.Target, budget int64, devices int) int64 {
	if devices > 1 && target != compat.TargetCPU && budget > 0 {
		return budget * int64(devices)
	}
	return budget
}

// shard holds the sharding rule (see the file's comment): how many devices
// the probe holds, and why.
func shard(in Input) (int, string) {
	dev, m := in.Devices, in.Model
	if m.NeedBytes <= 0 || dev.Memory <= 0 {
		return 1, ""
	}
	n := readiness.MinDevices(m.NeedBytes, readiness.Generation{HBMBytes: dev.Memory})
	if n <= 1 {
		return 1, ""
	}
	needs := fmt.Sprintf("needs %d devices of %s (%s)", n, size(dev.Memory), dev.Of)
	if n > dev.Count {
		return 1, fmt.Sprintf("%s; the host has %d: probed on one device", needs, dev.Count)
	}
	var fits []int // slice sizes from n to the host's devices
	for c := n; c <= dev.Count; c++ {
		if dev.Slices == nil || slices.Contains(dev.Slices, c) {
			fits = append(fits, c)
		}
	}
	if len(fits) == 0 {
		return 1, fmt.Sprintf("%s; no slice of %d to %d devices on this host (slices %v): probed on one device", needs, n, dev.Count, dev.Slices)
	}
	if m.Heads <= 0 || m.KVHeads <= 0 {
		return fits[0], fmt.Sprintf("%s: sharded over %d (its attention heads are unknown)", needs, fits[0])
	}
	for _, c := range fits {
		if m.Heads%int64(c) == 0 && m.KVHeads%int64(c) == 0 {
			return c, fmt.Sprintf("%s: sharded over %d, which divides its %d heads and %d key/value heads", needs, c, m.Heads, m.KVHeads)
		}
	}
	return fits[0], fmt.Sprintf("%s: sharded over %d; no count up to %d divides its %d heads and %d key/value heads (tensor parallelism cannot split them; FSDP can)",
		needs, fits[0], dev.Count, m.Heads, m.KVHeads)
}

// retest holds the retest rules: a model is tested again unless its latest
// result on this target has the same revision, the same runtime (torch,
// torch_tpu, transformers, harness), a mode the scan accepts, and was not
// the scanner's own error (other than one the float32 CPU reference shares,
// which repeats for that revision and runtime: compat.Result.Reproducible);
// --force retests anyway.
func retest(in Input) (bool, string) {
	prev := in.Previous
	switch {
	case prev == nil:
		return true, "untested on " + string(in.Target)
	case in.Force:
		return true, "--force"
	case prev.Status == compat.StatusError && !prev.Reproducible():
		// an error the float32 CPU reference shares repeats until the revision or the runtime changes: it stands
		return true, "the last result was the scanner's error"
	case prev.Status == compat.StatusUntested:
		return true, "untested"
	case prev.Revision != in.SHA:
		return true, fmt.Sprintf("new revision %s (was %s)", short(in.SHA), short(prev.Revision))
	case prev.Runtime.RetestKey() != in.Runtime.RetestKey():
		return true, fmt.Sprintf("new runtime %s (was %s)", in.Runtime.RetestKey(), prev.Runtime.RetestKey())
	case !modeAccepts(in.Mode, prev.Mode):
		return true, fmt.Sprintf("--mode %s asked; the last result is %s", in.Mode, *prev.Mode)
	}
	return false, "unchanged: same revision, runtime and mode"
}

// modeAccepts reports whether a result of mode got answers a scan asking
// for want: auto takes either; an explicit full or arch takes only itself
// (a result without a mode, a skip, stands for any).
func modeAccepts(want compat.Mode, got *compat.Mode) bool {
	return want == compat.ModeAuto || got == nil || *got == want
}

// chooseMode holds the mode rules: arch is arch; full is full unless there
// is no safetensors checkpoint or it certainly does not fit; auto is full
// only when the checkpoint certainly fits a known budget.
func chooseMode(in Input) (mode compat.Mode, decline compat.Reason, askSizes bool, why string) {
	w := in.Weights
	budget := func() string { return fmt.Sprintf("%s budget (%s)", gib(in.Budget), in.BudgetOf) }
	switch in.Mode {
	case compat.ModeArch:
		return compat.ModeArch, "", false, "arch asked"
	case compat.ModeFull:
		if !w.checkpoint() {
			return compat.ModeFull, compat.ReasonNoSafetensors, false, fmt.Sprintf(
				"--mode full asked, but the weights are not a safetensors checkpoint (files: %s); the scanner does not unpickle checkpoints", listOrNone(w.Files))
		}
		if least, _ := w.needRange(in.Target); in.Budget > 0 && w.Bytes > 0 && least > in.Budget {
			return compat.ModeFull, compat.ReasonTooLarge, false, fmt.Sprintf(
				"--mode full asked, but the weights (%s) need at least %s, over the target's %s; --mode arch or auto tests the architecture instead",
				gib(w.Bytes), gib(least), budget())
		}
		return compat.ModeFull, "", false, "full asked"
	}
	switch _, most := w.needRange(in.Target); {
	case !w.checkpoint():
		return compat.ModeArch, "", false, "auto -> arch: no safetensors checkpoint"
	case in.Budget <= 0:
		return compat.ModeArch, "", false, "auto -> arch: " + in.BudgetOf
	case w.Bytes <= 0:
		return compat.ModeArch, "", true, "auto -> arch: the weights' sizes are unknown"
	case most > in.Budget:
		return compat.ModeArch, "", false, fmt.Sprintf("auto -> arch: the weights (%s) need up to %s, over the %s", gib(w.Bytes), gib(most), budget())
	default:
		return compat.ModeFull, "", false, fmt.Sprintf("auto -> full: the weights (%s) need at most %s of the %s", gib(w.Bytes), gib(most), budget())
	}
}

func gib(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

// size is gib, or whole MiB below 1 GiB (a --device-memory of tests).
func size(b int64) string {
	if b < 1<<30 {
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return gib(b)
}

func short(sha string) string { return sha[:min(len(sha), 12)] }

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}
