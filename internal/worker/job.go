package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/chips"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
	"github.com/google-pytorch/torchtpu-scanner/internal/probestep"
)

// hold registers a lease as held (the heartbeats renew it; a lost one is
// cancelled).
func (w *Worker) hold(l fleet.Lease, cancel context.CancelFunc) *heldLease {
	h := &heldLease{lease: l, cancel: cancel}
	w.mu.Lock()
	w.held[l.ID] = h
	w.mu.Unlock()
	return h
}

func (w *Worker) unhold(l fleet.Lease) {
	w.mu.Lock()
	delete(w.held, l.ID)
	w.mu.Unlock()
}

// runJob runs one leased job on the devices ticket brings (the lease is
// held, and renewed, while it waits for them): fetch, probe (rerun to
// confirm a change), post the result. hard ends when the worker's grace
// after SIGTERM is over; a probe cut short, or still waiting for its
// devices, then gives its lease back.
func (w *Worker) runJob(hard context.Context, pool *chips.Pool, ticket *chips.Ticket, l fleet.Lease) {
	ctx, cancel := context.WithCancel(hard)
	defer cancel()
	h := w.hold(l, cancel)
	defer w.unhold(l)
	held, err := ticket.Wait(ctx)
	if err != nil {
		if !h.lost.Load() {
			w.giveBack(l, "worker stopping")
		}
		return
	}
	defer pool.Release(held)
	w.running.Add(1)
	defer w.running.Add(-1)
	log := w.log.With("model", l.Job.ModelID, "lease_id", l.ID, "attempt", l.Attempt, "devices", held)
	log.Info("job leased")

	if err := checkJob(l.Job, w.self.Target); err != nil {
		// Not runnable here: say so, and let the server record it as the
		// scanner's error (never the model's).
		w.post(h, w.scannerError(l.Job, err), false, nil)
		return
	}
	out, dir := w.execute(ctx, held, l.Job)
	switch {
	case h.lost.Load():
		log.Info("job dropped: its lease was lost")
		return
	case out.Interrupted:
		// Stopped by shutdown: says nothing about the model.
		w.giveBack(l, "worker stopping")
		return
	}
	w.post(h, out.Result, out.Flaky, w.serve(ctx, h, dir, l.Job, out.Result))
}

// serve runs the serving probe (Config.ServeProbe) after the probe of a
// job that asks for it, on the snapshot dir that probe read and the
// devices it still holds; nil when none ran, it could not start, or it was
// cut by shutdown or a lost lease (a verdict the cut made is not posted;
// the result is).
func (w *Worker) serve(ctx context.Context, h *heldLease, dir string, j fleet.Job, res compat.Result) *compat.ServingMeasured {
	if !j.Serve || w.cfg.ServeProbe == nil || dir == "" || res.Mode == nil || *res.Mode != compat.ModeFull {
		return nil
	}
	m, err := w.cfg.ServeProbe(ctx, dir, res)
	switch {
	case ctx.Err() != nil || h.lost.Load():
		return nil
	case err != nil:
		w.log.Warn("serving probe", "model", j.ModelID, "err", err)
		return nil
	}
	w.log.Info("serving probe", "model", j.ModelID, "status", m.Status, "runtime", m.Runtime.Key())
	return &m
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

// execute fetches the job's files and runs the probe step on the devices
// held (probestep.Probe: a status change is confirmed by a rerun): a
// one-device job with that device's prober, a sharded one with the host's,
// which pins each rank itself (probe.Request.Chips). It returns the
// snapshot folder the probe read ("" when the files did not come).
func (w *Worker) execute(ctx context.Context, held []int, j fleet.Job) (probestep.Outcome, string) {
	req := w.stepRequest(j)
	prober := w.env
	if len(held) == 1 {
		prober = w.probers[held[0]]
	} else {
		req.Devices, req.Chips = len(held), held
	}
	dir, err := w.fetch.Download(ctx, j.ModelID, j.Revision, j.Files)
	if err != nil {
		if ctx.Err() != nil {
			return probestep.Outcome{Result: w.scannerError(j, err), Interrupted: true}, ""
		}
		res := probestep.FetchFailed(err)
		req.Fill(&res, time.Now())
		return probestep.Outcome{Result: res}, ""
	}
	req.SnapshotDir = dir
	if missed := probestep.FetchInputs(ctx, w.fetch, w.log, j.ModelID, j.Revision, j.InputFiles); missed != "" {
		req.PlanNote += "; " + missed
	}
	return probestep.Probe(ctx, prober, req, w.log), dir
}

// stepRequest is the probe step of a job, without its snapshot: its
// timeout is the job's when shorter than this worker's, and a result
// decided without a probe is stamped with the runtime this worker
// registered, as a local scan stamps its own.
func (w *Worker) stepRequest(j fleet.Job) probestep.Request {
	timeout := w.cfg.Timeout
	if jt := time.Duration(j.TimeoutS * float64(time.Second)); jt > 0 && jt < timeout {
		timeout = jt
	}
	return probestep.Request{Request: probe.Request{
		ModelID: j.ModelID, Revision: j.Revision, Task: j.Task, Target: j.Target, Mode: j.Mode,
		Timeout: timeout, MemoryBudgetBytes: j.MemoryBudgetBytes, PlanNote: j.PlanNote, NoTrain: j.NoTrain,
	}, Previous: j.Previous, Runtime: w.self.Runtime}
}

// scannerError is the result of a job that failed on this worker, for a
// reason that is the scanner's, never the model's.
func (w *Worker) scannerError(j fleet.Job, err error) compat.Result {
	res := probestep.ScannerError(compat.StageEnv, fmt.Errorf("worker %s: %w", w.cfg.Host, err))
	w.stepRequest(j).Fill(&res, time.Now())
	return res
}

// post sends the result until the server takes it, refuses it, or the
// lease is lost; network failures and server restarts are retried with
// backoff (the heartbeats keep the lease meanwhile).
func (w *Worker) post(h *heldLease, res compat.Result, flaky bool, serving *compat.ServingMeasured) {
	l := h.lease
	req := fleet.ResultRequest{LeaseID: l.ID, WorkerID: w.cfg.ID, ModelID: l.Job.ModelID, Result: res, Flaky: flaky, Serving: serving}
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
		if h.lost.Load() || pctx.Err() != nil {
			w.seen(false)
			w.log.Error("result not delivered", "model", l.Job.ModelID, "err", err)
			return
		}
		w.failed(pctx, "result of "+l.Job.ModelID, err, n)
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
