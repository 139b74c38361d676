package probe

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// Env runs the harness with --env-only (and --target) and reports where a
// probe for target would run and with what software: auto resolves to tpu
// when Google's torch_tpu and a TPU are present, else cpu. The runtime is
// the retest key's source (compat.Runtime.Key). A target whose device is
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
	wd, err := r.newWorkDir("env")
	if err != nil {
		return "", compat.Runtime{}, fmt.Errorf("env: %w", err)
	}
	defer wd.remove()

	ectx, cancel := context.WithTimeout(ctx, r.cfg.EnvTimeout)
	defer cancel()
	out := runProc(ectx, r.spec(ctx, wd, "", []string{"--env-only", "--result-file", wd.result, "--target", string(target)}))
	switch {
	case out.startErr != nil:
		return "", compat.Runtime{}, fmt.Errorf("env: cannot start %s: %w", r.python, out.startErr)
	case out.killed && ctx.Err() != nil:
		return "", compat.Runtime{}, fmt.Errorf("env: %w", ctx.Err())
	case out.killed:
		return "", compat.Runtime{}, fmt.Errorf("env: harness --env-only ran past %s", r.cfg.EnvTimeout)
	}
	res, err := readResult(wd.result)
	if errors.Is(err, os.ErrNotExist) {
		how := fmt.Sprintf("exit status %d", out.state.ExitCode())
		if sig, ok := signalOf(out.state); ok {
			how = "killed by " + signalName(sig)
		}
		return "", compat.Runtime{}, fmt.Errorf("env: harness --env-only wrote no result (%s); last stderr: %s", how, lastLine(out.stderrTail))
	}
	if err != nil {
		return "", compat.Runtime{}, fmt.Errorf("env: invalid result: %w", err)
	}
	rt := res.Runtime
	rt.Harness = r.harnessVersion(rt.Harness)
	msg := "no message"
	if res.Message != nil {
		msg = *res.Message
	}
	if res.Status == compat.StatusError {
		if res.FailureClass != nil && *res.FailureClass == compat.ClassDeviceUnavail && target != compat.TargetAuto {
			return target, rt, fmt.Errorf("env: target %s: %w: %s", target, ErrDeviceUnavailable, msg)
		}
		return "", compat.Runtime{}, fmt.Errorf("env: harness reports an error: %s", msg)
	}
	got := res.Target
	if err := target.Admits(got); err != nil {
		return "", compat.Runtime{}, fmt.Errorf("env: harness reports %w", err)
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
		"torch", rt.Torch, "torch_tpu", rt.TorchTPU, "transformers", rt.Transformers, "harness", rt.Harness)
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
