package scan

import (
	"context"
	"sync"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
	"github.com/google-pytorch/torchtpu-scanner/internal/probestep"
)

const (
	// lookahead is how many prepared models may wait for each device.
	lookahead = 2
	// fetchers is how many models are prepared (planned, fetched,
	// preflighted) at once.
	fetchers = 4
)

// pipeline fetches files for upcoming models while earlier ones hold the
// devices: several fetchers prepare models ahead (in a bounded window), the
// models reach a queue in popularity order, and Devices probe workers drain
// it; one recorder writes every outcome.
func (r *run) pipeline(ctx context.Context, models []hub.ModelInfo) error {
	// Outcomes are written by one recorder goroutine, off the devices' path;
	// the hand-off is unbuffered, so a crash loses at most the models in
	// flight. Writes use a context that shutdown does not cancel: a result
	// that was measured is kept.
	wctx := context.WithoutCancel(ctx)
	records := make(chan func())
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		for write := range records {
			write()
		}
	}()
	queue := make(chan *entry, lookahead*r.opts.Devices)
	var wg sync.WaitGroup
	for w := range r.opts.Devices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				if ctx.Err() != nil {
					continue // stopping: take no more work, drain the queue
				}
				if write := r.probe(ctx, wctx, r.s.proberFor(w), j); write != nil {
					records <- write
				}
			}
		}()
	}
	slots, window, fetched := r.fetchAhead(ctx, models)
feed:
	for i, m := range models {
		var j *entry
		select {
		case j = <-slots[i]:
		case <-ctx.Done():
			break feed
		}
		<-window
		switch {
		case j == nil: // unchanged
			records <- func() { r.finishModel(wctx, m.ID, nil, false) }
		case j.result != nil:
			records <- func() { r.record(wctx, j, *j.result, false) }
		default:
			select {
			case queue <- j:
			case <-ctx.Done():
				break feed
			}
		}
	}
	fetched()
	close(queue)
	wg.Wait()
	close(records)
	<-recorded
	return ctx.Err()
}

// fetchAhead prepares models with several fetchers at once, so slow
// downloads overlap each other as well as the probes. Model i's job (nil:
// unchanged) arrives on slots[i], so the models still reach the devices in
// popularity order. At most fetchers + lookahead per device models are
// prepared before their turn: the caller receives from window each time it
// takes a slot's job. wait returns once every fetcher has stopped.
func (r *run) fetchAhead(ctx context.Context, models []hub.ModelInfo) (slots []chan *entry, window chan struct{}, wait func()) {
	slots = make([]chan *entry, len(models))
	for i := range slots {
		slots[i] = make(chan *entry, 1)
	}
	window = make(chan struct{}, fetchers+lookahead*r.opts.Devices)
	todo := make(chan int)
	var wg sync.WaitGroup
	for range fetchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range todo {
				if ctx.Err() != nil {
					continue
				}
				slots[i] <- r.prepare(ctx, models[i])
			}
		}()
	}
	go func() {
		defer close(todo)
		for i := range models {
			select {
			case window <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case todo <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	return slots, window, wg.Wait
}

// proberFor is the prober of device i.
func (s *Scanner) proberFor(i int) Prober {
	if i < len(s.DeviceProbers) && s.DeviceProbers[i] != nil {
		return s.DeviceProbers[i]
	}
	return s.Prober
}

// probe runs the probe step for one model on a device (a rerun confirms a
// change of status) and returns the write of what stands, for the
// recorder; nil when shutdown left nothing to write.
func (r *run) probe(ctx, wctx context.Context, p Prober, j *entry) func() {
	out := probestep.Probe(ctx, p, r.stepRequest(j), r.s.log())
	for _, run := range out.Runs {
		r.mu.Lock()
		r.busy += run.Held
		r.mu.Unlock()
		if r.hooks.ProbeDone != nil {
			r.hooks.ProbeDone(run.Result, run.Held)
		}
	}
	switch {
	case out.Interrupted:
		return nil
	case out.Flaky:
		return func() { r.recordFlaky(wctx, j, out.Result) }
	}
	return func() { r.record(wctx, j, out.Result, true) }
}

// stepRequest is the probe step of an entry: its planned mode, budget and
// note, against its previous status, stamped with the scan's runtime.
func (r *run) stepRequest(j *entry) probestep.Request {
	req := probestep.Request{Request: probe.Request{
		ModelID: j.info.ID, Revision: j.info.SHA, SnapshotDir: j.snapshot, Task: j.info.PipelineTag,
		Target: r.target, Mode: j.plan.Mode, Timeout: r.opts.Timeout,
		MemoryBudgetBytes: j.plan.Budget, PlanNote: planNote(j),
	}, Runtime: r.runtime}
	if j.previous != nil {
		req.Previous = j.previous.Status
	}
	return req
}

// planNote is what the probe is told of its plan, for its config stage's
// note: why it is retested, why in this mode, and which input files did
// not come.
func planNote(j *entry) string {
	note := j.plan.Reason + "; " + j.plan.ModeReason
	if j.inputsNote != "" {
		note += "; " + j.inputsNote
	}
	return note
}
