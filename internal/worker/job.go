package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
)

// runJob runs one leased job on device slot: fetch, probe (rerun to
// confirm a change), post the result. hard ends when the worker's grace
// after SIGTERM is over; a probe cut short then gives its lease back.
func (w *Worker) runJob(hard context.Context, slot int, l fleet.Lease) {
	ctx, cancel := context.WithCancel(hard)
	defer cancel()
	h := &heldLease{lease: l, cancel: cancel}
	w.mu.Lock()
	w.held[l.ID] = h
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.held, l.ID)
		w.mu.Unlock()
	}()
	w.running.Add(1)
	defer w.running.Add(-1)
	log := w.log.With("model", l.Job.ModelID, "lease_id", l.ID, "attempt", l.Attempt, "device", slot)
	log.Info("job leased")

	if err := checkJob(l.Job, w.self.Target); err != nil {
		// Not runnable here: say so, and let the server record it as the
		// scanner's error (never the model's).
		w.post(h, w.scannerError(l.Job, err), false)
		return
	}
	res, flaky := w.execute(ctx, slot, l.Job)
	switch {
	case h.lost.Load():
		log.Info("job dropped: its lease was lost")
		return
	case hard.Err() != nil && res.Status == compat.StatusError:
		// Stopped by shutdown: says nothing about the model.
		w.giveBack(l, "worker stopping")
		return
	}
	w.post(h, res, flaky)
}

// checkJob refuses a job this worker cannot run as asked.
func checkJob(j fleet.Job, target compat.Target) error {
	if err := compat.ValidateModelID(j.ModelID); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	switch {
	case j.Revision == "":
		return errors.New("job without a revision")
	case j.Target != target:
		return errors.New("job for target " + string(j.Target) + " leased to a " + string(target) + " worker")
	case j.Mode != compat.ModeFull && j.Mode != compat.ModeArch:
		return errors.New("job mode " + string(j.Mode) + ": want full or arch")
	}
	return nil
}

// execute fetches the job's files and probes it on device slot; a status
// change is confirmed by a rerun (flaky: the rerun disagreed, and the first
// result is returned).
func (w *Worker) execute(ctx context.Context, slot int, j fleet.Job) (compat.Result, bool) {
	dir, err := w.fetch.Download(ctx, j.ModelID, j.Revision, j.Files)
	if err != nil {
		if ctx.Err() != nil {
			return w.scannerError(j, err), false
		}
		res := w.cfg.FetchFailed(j, err)
		w.complete(j, &res)
		return res, false
	}
	timeout := w.cfg.Timeout
	if jt := time.Duration(j.TimeoutS * float64(time.Second)); jt > 0 && jt < timeout {
		timeout = jt
	}
	note := j.PlanNote
	if w.cfg.FetchInputs != nil && len(j.InputFiles) > 0 {
		if missed := w.cfg.FetchInputs(ctx, j); missed != "" {
			note += "; " + missed
		}
	}
	req := probe.Request{
		ModelID: j.ModelID, Revision: j.Revision, SnapshotDir: dir, Task: j.Task,
		Target: j.Target, Mode: j.Mode, Timeout: timeout, MemoryBudgetBytes: j.MemoryBudgetBytes, PlanNote: note,
	}
	p := w.probers[slot]
	res := p.Probe(ctx, req)
	w.complete(j, &res)
	if j.Previous == "" || !w.cfg.WouldChange(j.Previous, res.Status) || ctx.Err() != nil {
		return res, false
	}
	again := p.Probe(ctx, req)
	w.complete(j, &again)
	if ctx.Err() != nil && again.Status == compat.StatusError {
		return again, false // interrupted: the caller gives the lease back
	}
	if again.Status != res.Status {
		w.log.Warn("flaky result: status change not confirmed by a rerun", "model", j.ModelID,
			"kept", j.Previous, "first", res.Status, "rerun", again.Status)
		return res, true
	}
	return again, false
}

// complete fills what the runner leaves to its caller.
func (w *Worker) complete(j fleet.Job, res *compat.Result) {
	if res.Target == "" {
		res.Target = j.Target
	}
	if res.Revision == "" {
		res.Revision = j.Revision
	}
	if res.Task == "" {
		res.Task = j.Task
	}
	if res.TestedAt.IsZero() {
		res.TestedAt = time.Now().UTC()
	}
	if res.Repro == "" {
		res.Repro = compat.Repro(j.ModelID, j.Revision, j.Target, j.Mode)
	}
	if res.Runtime == (compat.Runtime{}) {
		// Decided without a probe (a fetch failure): the runtime this
		// worker registered, as a local scan stamps its own.
		res.Runtime = w.self.Runtime
	}
}

func (w *Worker) scannerError(j fleet.Job, err error) compat.Result {
	res := compat.Result{
		Status: compat.StatusError, Stage: compat.Ptr(compat.StageEnv), FailureClass: compat.Ptr(compat.ClassOther),
		Message: compat.Ptr("worker " + w.cfg.Host + ": " + err.Error()),
	}
	w.complete(j, &res)
	return res
}

// post sends the result until the server takes it, refuses it, or the
// lease is lost; network failures and server restarts are retried with
// backoff (the heartbeats keep the lease meanwhile).
func (w *Worker) post(h *heldLease, res compat.Result, flaky bool) {
	l := h.lease
	req := fleet.ResultRequest{LeaseID: l.ID, WorkerID: w.cfg.ID, ModelID: l.Job.ModelID, Result: res, Flaky: flaky}
	// Posting outlives the probe's context: a result that was measured is
	// delivered during shutdown too, within the worker's budget.
	pctx := w.final
	for n := 0; ; n++ {
		err := w.api.result(pctx, req)
		switch {
		case err == nil:
			w.seen(true)
			w.done.Add(1)
			w.log.Info("result accepted", "model", l.Job.ModelID, "status", res.Status, "flaky", flaky)
			return
		case errors.Is(err, ErrConflict):
			w.seen(true)
			w.log.Warn("result refused: the lease expired and the job went to another worker", "model", l.Job.ModelID, "err", err)
			return
		case errors.Is(err, ErrRejected):
			w.seen(true)
			w.log.Error("result rejected as invalid; its lease will expire", "model", l.Job.ModelID, "err", err)
			return
		}
		w.seen(false)
		if h.lost.Load() || pctx.Err() != nil {
			w.log.Error("result not delivered", "model", l.Job.ModelID, "err", err)
			return
		}
		w.log.Warn("result: server not reachable; retrying", "model", l.Job.ModelID, "err", err, "attempt", n+1)
		if sleep(pctx, fleet.Backoff(n, rand.Float64())) != nil {
			return
		}
	}
}

// giveBack releases a lease whose probe was stopped, so that another
// worker takes the job at once instead of after the lease's TTL.
func (w *Worker) giveBack(l fleet.Lease, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), fleet.ReleaseTimeout)
	defer cancel()
	err := w.api.release(ctx, fleet.ReleaseRequest{WorkerID: w.cfg.ID, LeaseID: l.ID, Reason: reason})
	if err != nil {
		w.log.Warn("lease not given back; it expires on its own", "model", l.Job.ModelID, "err", err)
		return
	}
	w.log.Info("lease given back", "model", l.Job.ModelID, "reason", reason)
}
