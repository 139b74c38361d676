// Package probestep is the one probe step of the scanner, written once for
// a local scan (internal/scan) and a fleet worker (internal/worker): probe a
// model, confirm a change of its status by a rerun, and fill in what the
// runner leaves to its caller. It owns the rules around the step too: what a
// failed download means for the model (FetchFailed), and which of its input
// files did not come (FetchInputs).
//
// The seams: a Request (the harness request, the model's previous status on
// the target and the runtime to stamp) goes in; an Outcome comes out (the
// result that stands, whether it is flaky, whether shutdown cut the step
// short, and every probe run with its time). WouldChange decides the rerun;
// a rerun that disagrees with the first run makes the outcome flaky.
package probestep

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
)

// Prober runs the smoke test on one device; *probe.Runner is the real one.
type Prober interface {
	Probe(ctx context.Context, req probe.Request) compat.Result
}

// Request is one step: what the harness runs, and what its result is
// compared with and stamped with.
type Request struct {
	probe.Request
	// Previous is the model's current status on the target ("" for none):
	// a result that would change it (WouldChange) is confirmed by a rerun.
	Previous compat.Status
	// Runtime is stamped on a result that carries none (one decided without
	// a probe: a failed download, a scanner error).
	Runtime compat.Runtime
}

// Outcome is what a step found.
type Outcome struct {
	// Result is what stands: the first run's, or the rerun's when it
	// confirmed the change. Flaky, it is the first run's.
	Result compat.Result
	// Flaky: the rerun did not confirm the change. The result is recorded
	// as a flaky event and the previous status stays.
	Flaky bool
	// Interrupted: shutdown cut short the probe, or the rerun a change
	// needed; the step says nothing about the model and nothing is recorded.
	Interrupted bool
	// Runs are the probe runs in order: one, or two with a rerun.
	Runs []Run
}

// Run is one probe run and how long it held its device.
type Run struct {
	Result compat.Result
	Held   time.Duration
}

// Probe runs the step on p: one probe, and a rerun when its status would
// change the model's (WouldChange). Every result is filled in from req.
func Probe(ctx context.Context, p Prober, req Request, log *slog.Logger) Outcome {
	var out Outcome
	first := out.run(ctx, p, req)
	out.Result = first
	if interrupted(ctx, first) {
		log.Info("probe interrupted", "model", req.ModelID)
		out.Interrupted = true
		return out
	}
	if !WouldChange(req.Previous, first.Status) {
		return out
	}
	again := out.run(ctx, p, req)
	switch {
	case interrupted(ctx, again):
		log.Info("rerun interrupted; the change stays unconfirmed", "model", req.ModelID)
		out.Interrupted = true
	case again.Status != first.Status:
		log.Warn("flaky result: status change not confirmed by a rerun", "model", req.ModelID,
			"kept", req.Previous, "first", first.Status, "rerun", again.Status)
		out.Flaky = true
	default:
		out.Result = again
	}
	return out
}

// run probes once, fills the result in and notes the run. A result that
// compat.Result.Validate refuses (an absurd figure, an oversized string)
// could be recorded nowhere: it becomes the scanner's error, naming the
// field, never held against the model.
func (o *Outcome) run(ctx context.Context, p Prober, req Request) compat.Result {
	start := time.Now()
	res := p.Probe(ctx, req.Request)
	held := time.Since(start)
	req.Fill(&res, time.Now())
	if err := res.Validate(); err != nil {
		stage := compat.StageEnv
		if res.Stage != nil && res.Stage.Valid() {
			stage = *res.Stage
		}
		res = ScannerError(stage, fmt.Errorf("the harness reported a result the scanner cannot record: %w", err))
		req.Fill(&res, time.Now())
	}
	o.Runs = append(o.Runs, Run{Result: res, Held: held})
	return res
}

// interrupted reports whether a probe's error came from the shutdown that
// ended ctx: it then says nothing about the model.
func interrupted(ctx context.Context, res compat.Result) bool {
	return ctx.Err() != nil && res.Status == compat.StatusError
}

// WouldChange reports whether a new status would change what the model
// shows, so that a rerun confirms it first. Errors (the scanner's
// environment) never count as a change worth confirming, and neither do
// skips; a model without a verdict yet has nothing to change.
func WouldChange(old, new compat.Status) bool {
	if old == new || new == compat.StatusError || new == compat.StatusSkipped {
		return false
	}
	return old == compat.StatusPass || old.HeldAgainstModel()
}

// Fill fills in what res lacks from the request: the target, revision and
// task asked for, the time (now), the repro command of the request's mode,
// req.Runtime, and one device used. The runner fills all of these for a probe it ran; a
// result decided without one gets them here.
func (req Request) Fill(res *compat.Result, now time.Time) {
	if res.Target == "" {
		res.Target = req.Target
	}
	if res.Revision == "" {
		res.Revision = req.Revision
	}
	if res.Task == "" {
		res.Task = req.Task
	}
	if res.TestedAt.IsZero() {
		res.TestedAt = now.UTC()
	}
	if res.Repro == "" {
		res.Repro = compat.Repro(req.ModelID, req.Revision, req.Target, req.Mode)
	}
	if res.Runtime == (compat.Runtime{}) {
		res.Runtime = req.Runtime
	}
	if res.DevicesUsed == 0 { // decided without a probe: no device was sharded over
		res.DevicesUsed = 1
	}
}
