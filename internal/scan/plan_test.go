package scan

import (
	"slices"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
)

const gb = int64(1) << 30

var (
	runtimeA = compat.Runtime{Torch: "2.15.0", Transformers: "5.23.0", Harness: "0.1.0+sha256:aaa"}
	runtimeB = compat.Runtime{Torch: "2.15.0", Transformers: "5.23.0", Harness: "0.1.0+sha256:bbb"}
)

func prevResult(status compat.Status, sha string, rt compat.Runtime, mode compat.Mode) *compat.Result {
	r := &compat.Result{Status: status, Revision: sha, Runtime: rt}
	if mode != "" {
		r.Mode = compat.Ptr(mode)
	}
	return r
}

func withSig(r *compat.Result, sig string) *compat.Result {
	r.Signature = &sig
	return r
}

// TestPlanRetest has one row per retest rule: a model is tested again
// unless its latest result on this target has the same revision, the same
// runtime and a mode the scan accepts, and was not the scanner's error
// (one that the float32 CPU reference shares repeats, and stands like a
// verdict); --force retests anyway.
func TestPlanRetest(t *testing.T) {
	tests := []struct {
		name   string
		prev   *compat.Result
		mode   compat.Mode
		force  bool
		retest bool
		why    string
	}{
		{"untested on this target", nil, compat.ModeAuto, false, true, "untested on cpu"},
		{"unchanged", prevResult(compat.StatusPass, "s1", runtimeA, compat.ModeArch), compat.ModeArch, false, false, "unchanged"},
		{"unchanged failure stands", prevResult(compat.StatusFail, "s1", runtimeA, compat.ModeFull), compat.ModeAuto, false, false, "unchanged"},
		{"new revision", prevResult(compat.StatusPass, "s0", runtimeA, compat.ModeArch), compat.ModeArch, false, true, "new revision s1 (was s0)"},
		{"new runtime", prevResult(compat.StatusPass, "s1", runtimeB, compat.ModeArch), compat.ModeArch, false, true, "new runtime"},
		{"the scanner's error", prevResult(compat.StatusError, "s1", runtimeA, compat.ModeArch), compat.ModeArch, false, true, "scanner's error"},
		{"a missing package may be installed since", withSig(prevResult(compat.StatusError, "s1", runtimeA, compat.ModeArch),
			"environment:missing_package:timm"), compat.ModeArch, false, true, "scanner's error"},
		// an error the float32 CPU reference shares repeats until the revision or the runtime (the harness) changes
		{"the reference shares it, unchanged", withSig(prevResult(compat.StatusError, "s1", runtimeA, compat.ModeArch),
			"harness_inputs:IndexError: index out of range in self"), compat.ModeArch, false, false, "unchanged"},
		{"the reference shares it, new runtime", withSig(prevResult(compat.StatusError, "s1", runtimeB, compat.ModeArch),
			"harness_load:x"), compat.ModeArch, false, true, "new runtime"},
		{"untested status", prevResult(compat.StatusUntested, "s1", runtimeA, ""), compat.ModeAuto, false, true, "untested"},
		{"--force", prevResult(compat.StatusPass, "s1", runtimeA, compat.ModeArch), compat.ModeArch, true, true, "--force"},
		{"full asked, arch result", prevResult(compat.StatusPass, "s1", runtimeA, compat.ModeArch), compat.ModeFull, false, true, "--mode full asked; the last result is arch"},
		{"arch asked, full result", prevResult(compat.StatusPass, "s1", runtimeA, compat.ModeFull), compat.ModeArch, false, true, "--mode arch asked; the last result is full"},
		{"auto takes an arch result", prevResult(compat.StatusPass, "s1", runtimeA, compat.ModeArch), compat.ModeAuto, false, false, "unchanged"},
		{"auto takes a full result", prevResult(compat.StatusPass, "s1", runtimeA, compat.ModeFull), compat.ModeAuto, false, false, "unchanged"},
		{"a skip without a mode stands for any", prevResult(compat.StatusSkipped, "s1", runtimeA, ""), compat.ModeFull, false, false, "unchanged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Plan(Input{SHA: "s1", Previous: tt.prev, Runtime: runtimeA, Target: compat.TargetCPU, Mode: tt.mode,
				Force: tt.force, Budget: 16 * gb, BudgetOf: "test", Weights: Weights{Files: []string{"model.safetensors"}, Bytes: gb}})
			if d.Retest != tt.retest || !strings.Contains(d.Reason, tt.why) {
				t.Errorf("retest %v (%q), want %v (%q)", d.Retest, d.Reason, tt.retest, tt.why)
			}
			if !d.Retest && (d.Mode != "" || d.Decline != "") {
				t.Errorf("no retest, yet mode %q decline %q", d.Mode, d.Decline)
			}
			if d.Retest && d.Mode != compat.ModeFull && d.Mode != compat.ModeArch {
				t.Errorf("mode %q: the plan always decides full or arch", d.Mode)
			}
		})
	}
}

// TestPlanMode has one row per mode rule. The needs below are the fit
// formula worked by hand: a 1 GiB checkpoint holds 2^28 (float32) to 2^29
// (16-bit) parameters; on cpu each takes 2 bytes three times (the
// bfloat16 run, 2 bytes, and its float32 reference, 4), on tpu 2 bytes
// once; ×1.2, +512 MiB.
func TestPlanMode(t *testing.T) {
	const (
		cpuMost1G  = 4402341478 // 2^29 × 2 × 3 × 1.2 + 2^29
		tpuMost1G  = 1825361100 // 2^29 × 2 × 1 × 1.2 + 2^29
		tpuLeast1G = 1181116006 // 2^28 (a float32 checkpoint's count) × 2 × 1 × 1.2 + 2^29
	)
	ckpt := func(bytes int64) Weights { return Weights{Files: []string{"model.safetensors"}, Bytes: bytes} }
	sharded := Weights{Files: []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"}, Bytes: 20 * gb}
	tests := []struct {
		name     string
		mode     compat.Mode
		target   compat.Target
		weights  Weights
		budget   int64
		want     compat.Mode
		decline  compat.Reason
		askSizes bool
		why      string
	}{
		{"arch asked", compat.ModeArch, compat.TargetTPU, ckpt(gb), 16 * gb, compat.ModeArch, "", false, "arch asked"},
		{"arch asked, no weights", compat.ModeArch, compat.TargetTPU, Weights{}, 16 * gb, compat.ModeArch, "", false, "arch asked"},
		{"full asked, fits", compat.ModeFull, compat.TargetTPU, ckpt(gb), 16 * gb, compat.ModeFull, "", false, "full asked"},
		{"full asked, no safetensors", compat.ModeFull, compat.TargetTPU, Weights{}, 16 * gb, compat.ModeFull, compat.ReasonNoSafetensors, false, "not a safetensors checkpoint"},
		{"full asked, not a transformers checkpoint", compat.ModeFull, compat.TargetTPU, Weights{Files: []string{"consolidated.safetensors"}, Bytes: gb}, 16 * gb, compat.ModeFull, compat.ReasonNoSafetensors, false, "consolidated.safetensors"},
		{"full asked, certainly too large", compat.ModeFull, compat.TargetTPU, ckpt(140 * gb), 16 * gb, compat.ModeFull, compat.ReasonTooLarge, false, "need at least 84.50 GiB"},
		{"full asked, fits only as a float32 checkpoint", compat.ModeFull, compat.TargetTPU, sharded, 16 * gb, compat.ModeFull, "", false, "full asked"},
		{"full asked, budget unknown", compat.ModeFull, compat.TargetTPU, ckpt(140 * gb), 0, compat.ModeFull, "", false, "full asked"},
		{"full asked, sizes unknown", compat.ModeFull, compat.TargetTPU, ckpt(0), 16 * gb, compat.ModeFull, "", false, "full asked"},
		// Unknown sizes are not a size of 0, which would still need the fit's 512 MiB slack.
		{"full asked, sizes unknown, a budget under the slack", compat.ModeFull, compat.TargetTPU, ckpt(0), 100 << 20, compat.ModeFull, "", false, "full asked"},
		{"full asked, the least need fits exactly", compat.ModeFull, compat.TargetTPU, ckpt(gb), tpuLeast1G, compat.ModeFull, "", false, "full asked"},
		{"full asked, the least need a byte over", compat.ModeFull, compat.TargetTPU, ckpt(gb), tpuLeast1G - 1, compat.ModeFull, compat.ReasonTooLarge, false, "need at least 1.10 GiB"},
		{"auto, fits", compat.ModeAuto, compat.TargetTPU, ckpt(gb), 16 * gb, compat.ModeFull, "", false, "auto -> full"},
		{"auto, fits exactly", compat.ModeAuto, compat.TargetTPU, ckpt(gb), tpuMost1G, compat.ModeFull, "", false, "auto -> full"},
		{"auto, a byte short", compat.ModeAuto, compat.TargetTPU, ckpt(gb), tpuMost1G - 1, compat.ModeArch, "", false, "auto -> arch"},
		{"auto, may not fit", compat.ModeAuto, compat.TargetTPU, sharded, 16 * gb, compat.ModeArch, "", false, "need up to 24.50 GiB"},
		{"auto, sizes unknown", compat.ModeAuto, compat.TargetTPU, ckpt(0), 16 * gb, compat.ModeArch, "", true, "sizes are unknown"},
		{"auto, budget unknown", compat.ModeAuto, compat.TargetTPU, ckpt(gb), 0, compat.ModeArch, "", false, "auto -> arch: test budget"},
		{"auto, no safetensors", compat.ModeAuto, compat.TargetTPU, Weights{}, 16 * gb, compat.ModeArch, "", false, "no safetensors checkpoint"},
		{"auto, not a transformers checkpoint", compat.ModeAuto, compat.TargetTPU, Weights{Files: []string{"adapter_model.safetensors"}, Bytes: gb}, 16 * gb, compat.ModeArch, "", false, "no safetensors checkpoint"},
		{"auto on cpu, fits exactly", compat.ModeAuto, compat.TargetCPU, ckpt(gb), cpuMost1G, compat.ModeFull, "", false, "auto -> full"},
		// The same weights and budget fit an accelerator (bf16, one copy)
		// and not the cpu (the bf16 run and its float32 reference).
		{"auto on cpu, a byte short", compat.ModeAuto, compat.TargetCPU, ckpt(gb), cpuMost1G - 1, compat.ModeArch, "", false, "auto -> arch"},
		{"auto on cuda, same budget", compat.ModeAuto, compat.TargetCUDA, ckpt(gb), cpuMost1G - 1, compat.ModeFull, "", false, "auto -> full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Plan(Input{SHA: "s1", Runtime: runtimeA, Target: tt.target, Mode: tt.mode, Budget: tt.budget,
				BudgetOf: "test budget", Weights: tt.weights})
			if !d.Retest {
				t.Fatalf("untested model not retested: %q", d.Reason)
			}
			if d.Mode != tt.want || d.Decline != tt.decline || d.AskSizes != tt.askSizes {
				t.Errorf("mode %q decline %q askSizes %v, want %q %q %v (%s)", d.Mode, d.Decline, d.AskSizes, tt.want, tt.decline, tt.askSizes, d.ModeReason)
			}
			if !strings.Contains(d.ModeReason, tt.why) {
				t.Errorf("reason %q, want it to say %q", d.ModeReason, tt.why)
			}
			if d.Budget != tt.budget {
				t.Errorf("budget %d, want the scan's %d passed down", d.Budget, tt.budget)
			}
		})
	}
}

// TestBudget: on cpu the budget comes from host memory (a quarter, within
// the probe's limit less torch's share), never from the device memory the
// harness reports; on an accelerator from the device's memory.
func TestBudget(t *testing.T) {
	gib := func(f float64) compat.Runtime { return compat.Runtime{DeviceMemGB: &f} }
	tests := []struct {
		name   string
		target compat.Target
		rt     compat.Runtime
		host   Host
		want   int64
		of     string
	}{
		{"cpu: a quarter of host memory", compat.TargetCPU, compat.Runtime{}, Host{MemoryBytes: 64 << 30, Probes: 1}, 16 * gb, "a quarter of host memory"},
		{"cpu ignores the reported device memory", compat.TargetCPU, gib(500), Host{MemoryBytes: 64 << 30, Probes: 1}, 16 * gb, "a quarter of host memory"},
		// 16 GiB over 4 probes: each may use 3 GiB, 1.5 of which torch takes.
		{"cpu: within the probe's limit", compat.TargetCPU, compat.Runtime{}, Host{MemoryBytes: 16 << 30, Probes: 4}, 3 << 29, "memory limit less torch"},
		{"cpu: host memory unknown", compat.TargetCPU, compat.Runtime{}, Host{Probes: 1}, 0, "unknown"},
		// 3 GiB, one probe: its limit (2.25 GiB) less torch's 1.5 is 768 MiB, exactly a quarter.
		{"cpu: the limit less torch equals a quarter", compat.TargetCPU, compat.Runtime{}, Host{MemoryBytes: 3 << 30, Probes: 1}, 768 << 20, "a quarter of host memory"},
		{"tpu: a reported device memory of 0 is unknown", compat.TargetTPU, gib(0), Host{MemoryBytes: 64 << 30, Probes: 1}, 0, "tpu: device memory unknown"},
		{"tpu: device memory", compat.TargetTPU, gib(32), Host{MemoryBytes: 64 << 30, Probes: 1}, 32 * gb, "tpu: device memory"},
		{"cuda: device memory", compat.TargetCUDA, gib(80), Host{MemoryBytes: 64 << 30, Probes: 4}, 80 * gb, "cuda: device memory"},
		{"tpu: device memory unknown", compat.TargetTPU, compat.Runtime{}, Host{MemoryBytes: 64 << 30, Probes: 1}, 0, "unknown"},
		{"tpu: --device-memory", compat.TargetTPU, gib(32), Host{MemoryBytes: 64 << 30, Probes: 1, DeviceMemory: 30 << 30}, 30 * gb, "--device-memory"},
		{"cpu: --device-memory sizes devices only", compat.TargetCPU, compat.Runtime{}, Host{MemoryBytes: 64 << 30, Probes: 1, DeviceMemory: 48 << 20}, 16 * gb, "a quarter of host memory"},
	}
	for _, tt := range tests {
		got, of := Budget(tt.target, tt.rt, tt.host)
		if got != tt.want || !strings.Contains(of, tt.of) {
			t.Errorf("%s: %d (%s), want %d (%s)", tt.name, got, of, tt.want, tt.of)
		}
	}
}

// TestProbeMemLimit: the runner's memory limit is three quarters of the
// host's memory, shared by the probes that run at once.
func TestProbeMemLimit(t *testing.T) {
	tests := []struct {
		host Host
		want uint64
	}{
		{Host{MemoryBytes: 64 << 30, Probes: 1}, 48 << 30},
		{Host{MemoryBytes: 64 << 30, Probes: 4}, 12 << 30},
		{Host{MemoryBytes: 64 << 30}, 48 << 30},
		{Host{Probes: 2}, 0},
	}
	for _, tt := range tests {
		if got := ProbeMemLimit(tt.host); got != tt.want {
			t.Errorf("ProbeMemLimit(%+v) = %d, want %d", tt.host, got, tt.want)
		}
	}
}

// TestNeedMatchesTheFitTable: Go's formula reproduces the worked examples
// of harness/fit.json, which the harness's own test checks as well.
func TestNeedMatchesTheFitTable(t *testing.T) {
	seen := map[compat.Target]bool{}
	for _, ex := range harness.Fit.Examples {
		seen[ex.Target] = true
		if got := ProbeNeed(ex.Params, ex.Target); got != ex.Need {
			t.Errorf("ProbeNeed(%d, %s) = %d, fit.json says %d", ex.Params, ex.Target, got, ex.Need)
		}
	}
	for _, target := range compat.Targets {
		if !seen[target] {
			t.Errorf("fit.json has no example on %s", target)
		}
	}
}

// TestPlanTrain: a full-mode probe skips the train step only when the
// weights, gradients and AdamW state of the larger parameter count do not
// fit; arch always trains. Figures from fit.json, by hand:
// 1 GiB of checkpoint holds at most 2^29 parameters (2 bytes each);
// on tpu: 2^29 × 2 × 1 copy × 4 × 1.2 + 2^29 = 5690831667 bytes;
// on cpu: 2^29 × 2 × 3 copies × 4 × 1.2 + 2^29 = 15998753177 bytes.
func TestPlanTrain(t *testing.T) {
	const tpuTrain1G, cpuTrain1G = 5690831667, 15998753177
	if got := TrainNeed(1<<29, compat.TargetTPU); got != tpuTrain1G {
		t.Errorf("TrainNeed tpu = %d, want %d", got, tpuTrain1G)
	}
	if got := TrainNeed(1<<29, compat.TargetCPU); got != cpuTrain1G {
		t.Errorf("TrainNeed cpu = %d, want %d", got, cpuTrain1G)
	}
	ckpt := Weights{Files: []string{"model.safetensors"}, Bytes: gb}
	for _, tc := range []struct {
		name   string
		mode   compat.Mode
		target compat.Target
		w      Weights
		budget int64
		skip   bool
	}{
		{"full, fits with its state", compat.ModeFull, compat.TargetTPU, ckpt, tpuTrain1G, false},
		{"full, one byte short", compat.ModeFull, compat.TargetTPU, ckpt, tpuTrain1G - 1, true},
		{"full on cpu counts the reference too", compat.ModeFull, compat.TargetCPU, ckpt, cpuTrain1G - 1, true},
		{"auto -> full, inference fits, training does not", compat.ModeAuto, compat.TargetTPU, ckpt, 4 * gb, true},
		{"arch always trains", compat.ModeArch, compat.TargetTPU, ckpt, gb, false},
		{"full, budget unknown: trains", compat.ModeFull, compat.TargetTPU, ckpt, 0, false},
		// Unknown sizes are not 0 bytes, whose state would still need the fit's 512 MiB slack.
		{"full, sizes unknown: trains", compat.ModeFull, compat.TargetTPU, Weights{Files: []string{"model.safetensors"}}, 100 << 20, false},
	} {
		d := Plan(Input{SHA: "s", Weights: tc.w, Target: tc.target, Mode: tc.mode, Budget: tc.budget, BudgetOf: "test"})
		if got := d.NoTrain != ""; got != tc.skip {
			t.Errorf("%s: NoTrain %q (mode %s), want skip=%v", tc.name, d.NoTrain, d.Mode, tc.skip)
		}
		if tc.skip && !strings.Contains(d.NoTrain, "AdamW state") {
			t.Errorf("%s: reason %q", tc.name, d.NoTrain)
		}
	}
}

// TestPlanShard has one row per sharding rule. Each need is worked by hand
// with readiness's rule: ceil(need × 1.1 / one device's memory) devices.
func TestPlanShard(t *testing.T) {
	const mib = int64(1) << 20
	cpu2 := Devices{Count: 2, Memory: 48 * mib, Of: "--device-memory"}
	v6e := func(n int) Devices { return Devices{Count: n, Memory: 32 * gb, Of: "v6e HBM", Slices: []int{1, 4, 8}} }
	tests := []struct {
		name    string
		devices Devices
		model   readiness.Shard
		want    int
		why     string
	}{
		// 60 MiB × 1.1 = 66 MiB over 48 MiB devices: 2, which divides 4 heads and 2 K/V heads.
		{"needs two of two", cpu2, readiness.Shard{NeedBytes: 60 * mib, Heads: 4, KVHeads: 2}, 2, "sharded over 2, which divides its 4 heads and 2 key/value heads"},
		// 40 MiB × 1.1 = 44 MiB: one device holds it.
		{"fits one device", cpu2, readiness.Shard{NeedBytes: 40 * mib, Heads: 4, KVHeads: 2}, 1, ""},
		{"needs more than the host has", Devices{Count: 1, Memory: 48 * mib, Of: "--device-memory"},
			readiness.Shard{NeedBytes: 60 * mib, Heads: 4, KVHeads: 2}, 1, "needs 2 devices of 48 MiB (--device-memory); the host has 1: probed on one device"},
		// 100 MiB × 1.1 = 110 MiB: 3 devices; 3 divides 6.
		{"the smallest count that holds it", Devices{Count: 8, Memory: 48 * mib}, readiness.Shard{NeedBytes: 100 * mib, Heads: 6, KVHeads: 6}, 3, "sharded over 3"},
		// 3 devices hold it, but 3 does not divide 4 heads: 4 does.
		{"the smallest count that divides the heads", Devices{Count: 8, Memory: 48 * mib}, readiness.Shard{NeedBytes: 100 * mib, Heads: 4, KVHeads: 4}, 4, "sharded over 4, which divides"},
		// 200 MiB × 1.1 / 48 MiB = 4.6: 5 devices; none of 5 to 8 divides 4 heads (and 2 K/V heads).
		{"no count divides the heads: FSDP", Devices{Count: 8, Memory: 48 * mib}, readiness.Shard{NeedBytes: 200 * mib, Heads: 4, KVHeads: 2}, 5, "no count up to 8 divides its 4 heads and 2 key/value heads"},
		{"heads unknown", cpu2, readiness.Shard{NeedBytes: 60 * mib}, 2, "its attention heads are unknown"},
		// One count unknown is as good as both: 0 heads would divide by any count.
		{"attention heads unknown", cpu2, readiness.Shard{NeedBytes: 60 * mib, KVHeads: 2}, 2, "needs 2 devices of 48 MiB (--device-memory): sharded over 2 (its attention heads are unknown)"},
		{"key/value heads unknown", cpu2, readiness.Shard{NeedBytes: 60 * mib, Heads: 4}, 2, "sharded over 2 (its attention heads are unknown)"},
		// 40 GiB × 1.1 = 44 GiB over 32 GiB: 2, but a v6e host runs slices of 1, 4 and 8.
		{"a TPU shards over its slices only", v6e(8), readiness.Shard{NeedBytes: 40 * gb, Heads: 32, KVHeads: 8}, 4, "sharded over 4"},
		{"no slice between need and host", v6e(2), readiness.Shard{NeedBytes: 40 * gb, Heads: 32, KVHeads: 8}, 1, "no slice of 2 to 2 devices on this host"},
		{"device memory unknown", Devices{Count: 8}, readiness.Shard{NeedBytes: 40 * gb, Heads: 32, KVHeads: 8}, 1, ""},
		{"model size unknown", v6e(8), readiness.Shard{Heads: 32, KVHeads: 8}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Plan(Input{SHA: "s1", Runtime: runtimeA, Target: compat.TargetCPU, Mode: compat.ModeArch,
				Budget: 16 * gb, BudgetOf: "test", Devices: tt.devices, Model: tt.model})
			if d.Devices != tt.want || !strings.Contains(d.ShardReason, tt.why) || (tt.why == "") != (d.ShardReason == "") {
				t.Errorf("devices %d (%q), want %d (%q)", d.Devices, d.ShardReason, tt.want, tt.why)
			}
		})
	}
	// Unchanged: no probe, no devices.
	d := Plan(Input{SHA: "s1", Previous: prevResult(compat.StatusPass, "s1", runtimeA, compat.ModeArch), Runtime: runtimeA,
		Target: compat.TargetCPU, Mode: compat.ModeAuto, Devices: cpu2, Model: readiness.Shard{NeedBytes: 60 * mib, Heads: 4, KVHeads: 2}})
	if d.Retest || d.Devices != 0 {
		t.Errorf("unchanged model: retest %v devices %d", d.Retest, d.Devices)
	}
}

// TestPlanShardBudget: a sharded probe's budget on an accelerator is its
// devices' together, and the mode is chosen against it; on cpu the ranks
// share the host, whose budget stays.
func TestPlanShardBudget(t *testing.T) {
	// A 40 GiB checkpoint holds at most 2^34·5/... : 40 GiB / 2 bytes = 20 Gi params;
	// on tpu × 2 bytes × 1.2 + 512 MiB = 48.5 GiB: over one v6e's 32 GiB, within four's 128.
	ckpt := Weights{Files: []string{"model-00001-of-00009.safetensors", "model.safetensors.index.json"}, Bytes: 40 * gb}
	model := readiness.Shard{NeedBytes: 40 * gb, Heads: 32, KVHeads: 8}
	v6e := Devices{Count: 8, Memory: 32 * gb, Of: "v6e HBM", Slices: []int{1, 4, 8}}
	d := Plan(Input{SHA: "s1", Runtime: runtimeA, Target: compat.TargetTPU, Mode: compat.ModeAuto, Weights: ckpt,
		Budget: 32 * gb, BudgetOf: "tpu: device memory", Devices: v6e, Model: model})
	if d.Devices != 4 || d.Budget != 128*gb || d.Mode != compat.ModeFull || !strings.Contains(d.ModeReason, "4 devices' tpu: device memory") {
		t.Errorf("tpu: devices %d budget %d mode %s (%s), want 4, 128 GiB, full", d.Devices, d.Budget, d.Mode, d.ModeReason)
	}
	one := Plan(Input{SHA: "s1", Runtime: runtimeA, Target: compat.TargetTPU, Mode: compat.ModeAuto, Weights: ckpt,
		Budget: 32 * gb, BudgetOf: "tpu: device memory", Devices: Devices{Count: 1, Memory: 32 * gb}, Model: model})
	if one.Devices != 1 || one.Budget != 32*gb || one.Mode != compat.ModeArch || strings.Contains(one.ModeReason, "devices'") {
		t.Errorf("one device: devices %d budget %d mode %s (%s), want 1, 32 GiB, arch against one device's budget", one.Devices, one.Budget, one.Mode, one.ModeReason)
	}
	// Sharded, with no budget known: there is none to multiply, and the
	// reason names the budget's source as it is.
	unknown := Plan(Input{SHA: "s1", Runtime: runtimeA, Target: compat.TargetTPU, Mode: compat.ModeAuto, Weights: ckpt,
		BudgetOf: "tpu: device memory unknown", Devices: v6e, Model: model})
	if unknown.Devices != 4 || unknown.Budget != 0 || unknown.Mode != compat.ModeArch || unknown.ModeReason != "auto -> arch: tpu: device memory unknown" {
		t.Errorf("tpu, budget unknown: devices %d budget %d mode %s (%q), want 4, 0, arch for want of a budget", unknown.Devices, unknown.Budget, unknown.Mode, unknown.ModeReason)
	}
	cpu := Plan(Input{SHA: "s1", Runtime: runtimeA, Target: compat.TargetCPU, Mode: compat.ModeAuto, Weights: ckpt,
		Budget: 16 * gb, BudgetOf: "cpu", Devices: Devices{Count: 2, Memory: 32 * gb}, Model: model})
	if cpu.Devices != 2 || cpu.Budget != 16*gb {
		t.Errorf("cpu: devices %d budget %d, want 2 and the host's 16 GiB", cpu.Devices, cpu.Budget)
	}
}

// TestDevicesOf: one device's memory comes from --device-memory, else the
// TPU generation's HBM, else what the harness reported; a cpu host has
// none of its own; a TPU shards over its topologies' slices.
func TestDevicesOf(t *testing.T) {
	gib := func(f float64) *float64 { return &f }
	tests := []struct {
		name   string
		target compat.Target
		rt     compat.Runtime
		host   Host
		mem    int64
		of     string
		slices []int
	}{
		{"cpu has no device memory", compat.TargetCPU, compat.Runtime{Device: "Intel Xeon", DeviceMemGB: gib(64)}, Host{Probes: 2}, 0, "cpu: no device memory", nil},
		{"cpu with --device-memory", compat.TargetCPU, compat.Runtime{}, Host{Probes: 2, DeviceMemory: 48 << 20}, 48 << 20, "--device-memory", nil},
		{"v6e: its HBM", compat.TargetTPU, compat.Runtime{Device: "TPU v6e", DeviceMemGB: gib(31.2)}, Host{Probes: 8}, 32 * gb, "v6e HBM", []int{1, 4, 8}},
		{"v6e with --device-memory", compat.TargetTPU, compat.Runtime{Device: "TPU v6e"}, Host{Probes: 8, DeviceMemory: 30 * gb}, 30 * gb, "--device-memory", []int{1, 4, 8}},
		{"v7: a device is half a chip", compat.TargetTPU, compat.Runtime{Device: "TPU v7"}, Host{Probes: 8}, 96 * gb, "v7x HBM", []int{2, 4, 8}},
		{"an unknown TPU", compat.TargetTPU, compat.Runtime{Device: "TPU v9", DeviceMemGB: gib(50)}, Host{Probes: 4}, 50 * gb, "tpu: device memory", []int{1}},
		{"cuda: reported memory", compat.TargetCUDA, compat.Runtime{Device: "NVIDIA H200", DeviceMemGB: gib(140)}, Host{Probes: 2}, 140 * gb, "cuda: device memory", nil},
		{"cuda: unknown", compat.TargetCUDA, compat.Runtime{Device: "NVIDIA H200"}, Host{Probes: 2}, 0, "unknown", nil},
	}
	for _, tt := range tests {
		d := DevicesOf(tt.target, tt.rt, tt.host)
		if d.Memory != tt.mem || !strings.Contains(d.Of, tt.of) || !slices.Equal(d.Slices, tt.slices) || d.Count != tt.host.Probes {
			t.Errorf("%s: %+v, want memory %d (%s), slices %v, count %d", tt.name, d, tt.mem, tt.of, tt.slices, tt.host.Probes)
		}
	}
}

// size writes whole MiB below 1 GiB and GiB from 1 GiB on.
func TestSize(t *testing.T) {
	for b, want := range map[int64]string{
		48 << 20:  "48 MiB",
		1<<30 - 1: "1023 MiB",
		1 << 30:   "1.00 GiB",
		3 << 29:   "1.50 GiB",
		0:         "0 MiB",
		1<<30 + 1: "1.00 GiB",
		40 << 30:  "40.00 GiB",
	} {
		if got := size(b); got != want {
			t.Errorf("size(%d) = %q, want %q", b, got, want)
		}
	}
}

// TestShardBudget: a probe over several accelerator devices holds each
// one's memory; on cpu, over one device, or with no budget known, the
// budget is the one probe's.
func TestShardBudget(t *testing.T) {
	for _, c := range []struct {
		target  compat.Target
		budget  int64
		devices int
		want    int64
	}{
		{compat.TargetTPU, 10, 4, 40}, {compat.TargetCUDA, 10, 2, 20}, {compat.TargetTPU, 10, 1, 10},
		{compat.TargetTPU, 10, 0, 10}, {compat.TargetCPU, 10, 4, 10}, {compat.TargetTPU, 0, 4, 0},
	} {
		if got := shardBudget(c.target, c.budget, c.devices); got != c.want {
			t.Errorf("shardBudget(%s, %d, %d) = %d, want %d", c.target, c.budget, c.devices, got, c.want)
		}
	}
}
