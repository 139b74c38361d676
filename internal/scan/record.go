package scan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
	"github.com/google-pytorch/torchtpu-scanner/internal/probestep"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// decided completes a result that preflight, the plan or a failed fetch
// produced, without a probe: its repro is the scan's requested mode.
func (r *run) decided(j *entry, res compat.Result) *entry {
	req := probestep.Request{Request: probe.Request{ModelID: j.info.ID, Revision: j.info.SHA, Task: j.info.PipelineTag,
		Target: r.target, Mode: r.opts.Mode}, Runtime: r.runtime}
	req.Fill(&res, r.s.now())
	j.result = &res
	return j
}

// declined is the skip of a mode the plan refused (--mode full without a
// safetensors checkpoint, or with one that does not fit).
func (r *run) declined(j *entry) *entry {
	return r.decided(j, compat.Result{
		Status:  compat.StatusSkipped,
		Reason:  compat.Ptr(j.plan.Decline),
		Message: compat.Ptr(j.plan.ModeReason),
		Mode:    compat.Ptr(j.plan.Mode),
	})
}

// fetchFailed is the result of a model whose files could not be fetched
// (probestep.FetchFailed).
func (r *run) fetchFailed(j *entry, err error) *entry {
	return r.decided(j, probestep.FetchFailed(err))
}

func (r *run) scannerError(j *entry, stage compat.Stage, err error) *entry {
	return r.decided(j, probestep.ScannerError(stage, err))
}

// record writes a result that stands.
func (r *run) record(ctx context.Context, j *entry, res compat.Result, probed bool) {
	res.ScanID = compat.Ptr(r.scan.ID)
	if _, err := r.s.Store.RecordResult(ctx, j.info.ID, res); err != nil {
		r.s.log().Error("record result", "model", j.info.ID, "err", err)
	}
	r.s.log().Info("model done", "model", j.info.ID, "status", res.Status, "stage", deref(res.Stage),
		"reason", deref(res.Reason), "mode", deref(res.Mode), "duration_s", res.DurationS)
	r.finishModel(ctx, j.info.ID, &res, probed)
}

// recordFlaky writes a status change that its rerun did not confirm: a
// flaky event, and the previous status stays.
func (r *run) recordFlaky(ctx context.Context, j *entry, res compat.Result) {
	if err := r.s.Store.RecordFlaky(ctx, j.info.ID, res, j.previous.Status); err != nil {
		r.s.log().Error("record flaky", "model", j.info.ID, "err", err)
	}
	r.finishModel(ctx, j.info.ID, &res, true)
}

func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// finishModel counts one model done and reports the scan's progress.
func (r *run) finishModel(ctx context.Context, id string, res *compat.Result, probed bool) {
	r.mu.Lock()
	r.done++
	if probed {
		r.probed++
	}
	if res == nil {
		r.unchanged++
	}
	p := r.progressLocked()
	p.ModelID, p.Result = id, res
	r.mu.Unlock()
	r.report(ctx, p)
}

// progressLocked is the scan's progress: the outcomes recorded here and,
// with a fleet, the jobs the workers finished. r.mu is held.
func (r *run) progressLocked() Progress {
	return Progress{ScanID: r.scan.ID, Planned: r.scan.Planned, Done: r.done + r.jobs.Done + r.jobs.Failed,
		Probed: r.probed + r.jobs.Done, Unchanged: r.unchanged}
}

// report writes the scan's progress and tells the hooks.
func (r *run) report(ctx context.Context, p Progress) {
	if err := r.s.Store.UpdateScanProgress(ctx, r.scan.ID, p.Planned, p.Done, p.Probed, p.Unchanged); err != nil && ctx.Err() == nil {
		r.s.log().Error("scan progress", "err", err)
	}
	if r.hooks.Progress != nil {
		r.hooks.Progress(p)
	}
}

// finish closes the scan record; it uses a fresh context so that a scan
// cancelled by shutdown is still recorded as interrupted.
func (r *run) finish(runErr error) (store.Scan, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r.leftQueued(runErr) {
		return r.leaveQueued(ctx, runErr)
	}
	if r.s.Fleet != nil && runErr != nil {
		// The scan ends here: its queued jobs must not outlive it. Those a
		// worker holds may finish (their results are recorded, once) or
		// expire; the next scan adopts a probe still in flight.
		if n, err := r.s.Fleet.Withdraw(ctx, r.scan.ID); err != nil {
			runErr = errors.Join(runErr, err)
		} else if n > 0 {
			r.s.log().Warn("queued jobs withdrawn with their scan", "scan_id", r.scan.ID, "jobs", n)
		}
	}
	f := store.ScanFinish{Status: store.ScanDone, Error: r.scan.Error}
	switch {
	case runErr == nil:
	case errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded) || errors.Is(runErr, fleet.ErrStalled):
		f.Status, f.Error = store.ScanInterrupted, "interrupted: "+hub.Brief(runErr)
	default:
		// The record is read on the page and the API; the log has the
		// full error (URL queries included).
		f.Status, f.Error = store.ScanFailed, hub.Brief(runErr)
	}
	wall := r.s.now().Sub(r.scan.StartedAt)
	r.mu.Lock()
	if wall > 0 && r.probed > 0 {
		frac := r.busy.Seconds() / (wall.Seconds() * float64(r.opts.Devices))
		f.DeviceBusy = compat.Ptr(min(frac, 1))
	}
	p := r.progressLocked()
	r.mu.Unlock()
	if err := r.s.Store.UpdateScanProgress(ctx, r.scan.ID, p.Planned, p.Done, p.Probed, p.Unchanged); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if err := r.s.Store.FinishScan(ctx, r.scan.ID, f); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("scan: finish: %w", err))
	}
	sc, err := r.s.Store.GetScan(ctx, r.scan.ID)
	if err != nil {
		sc = r.scan
	}
	if r.hooks.ScanDone != nil {
		r.hooks.ScanDone(sc)
	}
	return sc, runErr
}

// leaveQueued writes the progress of a scan whose jobs stay queued for the
// next server process, and leaves its record running.
func (r *run) leaveQueued(ctx context.Context, runErr error) (store.Scan, error) {
	r.mu.Lock()
	p := r.progressLocked()
	r.mu.Unlock()
	if err := r.s.Store.UpdateScanProgress(ctx, r.scan.ID, p.Planned, p.Done, p.Probed, p.Unchanged); err != nil {
		runErr = errors.Join(runErr, err)
	}
	r.s.log().Info("stopping: the scan's jobs stay queued for the next start", "scan_id", r.scan.ID,
		"done", p.Done, "planned", p.Planned)
	sc, err := r.s.Store.GetScan(ctx, r.scan.ID)
	if err != nil {
		sc = r.scan
	}
	return sc, runErr
}

func upserts(models []hub.ModelInfo) []store.ModelUpsert {
	out := make([]store.ModelUpsert, 0, len(models))
	for _, m := range models {
		out = append(out, store.ModelUpsert{
			ID: m.ID, Task: m.PipelineTag, Library: m.Library, Downloads: m.Downloads, Likes: m.Likes,
			Gated: m.Gated, SHA: m.SHA, Tags: m.Tags, LastModified: m.LastModified, Aliases: m.Aliases,
		})
	}
	return out
}
