package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// Env runs the harness with --env-only (and --target) and reports where a
// probe for target would run and with what software: auto resolves to tpu
// when Google's torch_tpu and a TPU are present, else cpu. The runtime is
// the retest key's source (compat.Runtime.RetestKey). A target whose device is
// not usable here (tpu on a host without one) returns that target, the
// host's runtime as far as the harness got, and an error wrapping
// ErrDeviceUnavailable. Runtime.Harness is HarnessDigest() when the harness
// reports no version. Probe reuses what Env found to label the results it
// makes up itself (timeouts, crashes), and to resolve auto.
func (r *Runner) Env(ctx context.Context, target compat.Target) (compat.Target, compat.Runtime, error) {
	if target == "" {
		target = compat.TargetAuto
	}
	if _, err := compat.ParseTarget(string(target)); err != nil {
		return "", compat.Runtime{}, fmt.Errorf("env: %w", err)
	}
	res, err := r.envResult(ctx, target, false)
	if err != nil {
		return "", compat.Runtime{}, err
	}
	rt := res.Runtime
	rt.Harness = r.harnessVersion(rt.Harness)
	msg := "no message"
	if res.Message != nil {
		msg = *res.Message
	}
	if res.Status == compat.StatusError {
		if res.FailureClass != nil && *res.FailureClass == compat.ClassDeviceUnavail && target != compat.TargetAuto {
			if !res.noChip() && r.usableUnconfined(ctx, target) {
				return target, rt, fmt.Errorf("env: target %s: %w: %w: the harness sees the device without Landlock "+
					"but not inside it (%s); its driver needs files the confinement does not name: run with "+
					"--landlock=false [SCANNER_LANDLOCK=false] on this host", target, ErrDeviceUnavailable, ErrConfinedDevice, msg)
			}
			return target, rt, fmt.Errorf("env: target %s: %w: %s", target, ErrDeviceUnavailable, msg)
		}
		return "", compat.Runtime{}, fmt.Errorf("env: harness reports an error: %s", msg)
	}
	got := res.Target
	if err := target.Admits(got); err != nil {
		return "", compat.Runtime{}, fmt.Errorf("env: harness reports %w", err)
	}

	if target == compat.TargetAuto && got == compat.TargetCPU {
		if res.googleTPU && !res.noChip() && r.usableUnconfined(ctx, compat.TargetTPU) {
			r.log.Warn("probe: target auto resolved to cpu, but the harness sees the TPU without Landlock: its runtime "+
				"needs files the confinement does not name; run with --landlock=false [SCANNER_LANDLOCK=false] to probe "+
				"on it, or --target tpu to fail instead of falling back", "why", res.note)
		} else {
			r.log.Info("probe: target auto runs on cpu", "why", res.note)
		}
	}

	r.found.mu.Lock()
	if r.found.envs == nil {
		r.found.envs = map[compat.Target]compat.Runtime{}
	}
	r.found.envs[got] = rt
	if target == compat.TargetAuto {
		r.found.auto = got
	}
	r.found.mu.Unlock()
	r.log.Info("probe env", "requested", target, "target", got, "device", rt.Device, "device_count", rt.DeviceCount,
		"torch", rt.Torch, "torch_tpu", rt.TorchTPU, "libtpu", rt.LibTPU, "transformers", rt.Transformers, "harness", rt.Harness,
		"tcmalloc", rt.TCMalloc != nil && *rt.TCMalloc)
	return got, rt, nil
}

// autoTarget is what the last Env(auto) resolved to, "" before one.
func (r *Runner) autoTarget() compat.Target {
	r.found.mu.Lock()
	defer r.found.mu.Unlock()
	return r.found.auto
}

// cachedRuntime is the runtime the last Env found for target.
func (r *Runner) cachedRuntime(target compat.Target) (compat.Runtime, bool) {
	r.found.mu.Lock()
	defer r.found.mu.Unlock()
	rt, ok := r.found.envs[target]
	return rt, ok
}

// ErrConfinedDevice: the target's device works for the harness only
// without Landlock (first seen with CUDA on an H200 VM: cuInit error 304
// under the confinement, fine without it).
var ErrConfinedDevice = errors.New("device unusable under Landlock")

// usableUnconfined reports whether an --env-only run without Landlock
// finds target's device: asked only after a confined run did not, where
// Landlock is in force, for an accelerator. It runs the harness's own
// code on no model files.
func (r *Runner) usableUnconfined(ctx context.Context, target compat.Target) bool {
	if r.confine.off || landlockABI() <= 0 || target == compat.TargetCPU {
		return false
	}
	res, err := r.envResult(ctx, target, true)
	usable := err == nil && res.Status == compat.StatusPass && res.Target == target
	r.log.Info("probe: asked the harness again without Landlock", "target", target, "usable", usable)
	return usable
}

// envReply is the harness's --env-only answer: a Result, and the extra
// fields of env_only in harness.py that the runner uses.
type envReply struct {
	compat.Result
	// googleTPU: Google's torch_tpu is installed (the run may still have
	// found no usable TPU).
	googleTPU bool
	// note says why auto resolved as it did.
	note string
	// tpuChips is the count of the harness's PCI scan (TPU chips torch_tpu
	// can use), nil when it did not scan (cpu, cuda, no torch_tpu).
	tpuChips *int
}

// noChip: the harness's PCI scan found no TPU chip. Landlock hides no PCI
// device (the harness may read /sys and stat /dev), so asking again
// without it would find none either.
func (e envReply) noChip() bool { return e.tpuChips != nil && *e.tpuChips == 0 }

// envResult runs the harness with --env-only for target, confined unless
// unconfined, and reads its result.
func (r *Runner) envResult(ctx context.Context, target compat.Target, unconfined bool) (envReply, error) {
	wd, err := r.newWorkDir("env")
	if err != nil {
		return envReply{}, fmt.Errorf("env: %w", err)
	}
	defer wd.remove()

	ectx, cancel := context.WithTimeout(ctx, r.cfg.EnvTimeout)
	defer cancel()
	spec := r.spec(ctx, wd, "", []string{"--env-only", "--result-file", wd.result, "--target", string(target)}, nil)
	if unconfined {
		spec.policy = nil
	}
	out := runProc(ectx, spec)
	switch {
	case out.startErr != nil:
		return envReply{}, fmt.Errorf("env: cannot start %s: %w", r.python, out.startErr)
	case out.killed && ctx.Err() != nil:
		return envReply{}, fmt.Errorf("env: %w", ctx.Err())
	case out.killed:
		return envReply{}, fmt.Errorf("env: harness --env-only ran past %s", r.cfg.EnvTimeout)
	}
	res, err := readResult(wd.result)
	if errors.Is(err, os.ErrNotExist) {
		how := fmt.Sprintf("exit status %d", out.state.ExitCode())
		if sig, ok := signalOf(out.state); ok {
			how = "killed by " + signalName(sig)
		}
		return envReply{}, fmt.Errorf("env: harness --env-only wrote no result (%s); last stderr: %s", how, lastLine(out.stderrTail))
	}
	if err != nil {
		return envReply{}, fmt.Errorf("env: invalid result: %w", err)
	}
	var extra struct {
		GoogleTPU bool   `json:"google_torch_tpu"`
		Note      string `json:"note"`
		TPUChips  *int   `json:"tpu_chips"`
	}
	if data, err := os.ReadFile(wd.result); err == nil { // readResult bounded its size
		_ = json.Unmarshal(nanToNull(data), &extra) // it parsed as a Result: these are optional
	}
	return envReply{Result: res, googleTPU: extra.GoogleTPU, note: extra.Note, tpuChips: extra.TPUChips}, nil
}
