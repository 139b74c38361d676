package scan

import (
	"context"
	"sync"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/chips"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
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
// models reach a queue in popularity order, and a scheduler hands each the
// devices it needs (internal/chips: one, or a sharded probe's several; a
// probe waiting for several is not overtaken by one-device probes) and
// probes it on them; one recorder writes every outcome.
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
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.schedule(ctx, queue, func(write func()) { records <- write })
	}()
	// The fetchers stop at once when the scan yields (opts.Yield); the
	// probes running finish.
	fctx, stopFetching := context.WithCancel(ctx)
	defer stopFetching()
	slots, window, fetched := r.fetchAhead(fctx, models)
feed:
	for i, m := range models {
		var j *entry
		select {
		case j = <-slots[i]:
		case <-fctx.Done():
			break feed
		}
		<-window
		switch {
		case j == nil: // unchanged
			records <- func() { r.finishModel(wctx, m.ID, nil, false) }
		case j.result != nil:
			records <- func() { r.record(wctx, j, *j.result, false) }
		case r.yields():
			stopFetching()
			break feed
		default:
			select {
			case queue <- j:
			case <-ctx.Done():
				break feed
			}
		}
	}
	stopFetching()
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

// schedule probes the jobs of queue, each on the devices the pool gives it,
// in queue order (chips.Assign); at most twice the host's devices of jobs
// are asked for or running at once, so that later jobs can fill devices a
// waiting sharded probe does not need, without taking the whole queue. It
// returns once every job it took is done (stopping, it takes no more).
func (r *run) schedule(ctx context.Context, queue <-chan *entry, record func(func())) {
	pool := chips.NewPool(r.opts.Devices)
	inflight := make(chan struct{}, 2*r.opts.Devices)
	var wg sync.WaitGroup
	defer wg.Wait()
	wctx := context.WithoutCancel(ctx)
	for j := range queue {
		if ctx.Err() != nil || r.yields() {
			continue // stopping or giving way: take no more work, drain the queue
		}
		inflight <- struct{}{}
		ticket, err := pool.Ask(max(j.plan.Devices, 1))
		if err != nil { // the plan never asks for more devices than the host has
			<-inflight
			res := *r.scannerError(j, compat.StageEnv, err).result
			record(func() { r.record(wctx, j, res, false) })
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-inflight }()
			held, err := ticket.Wait(ctx)
			if err != nil {
				return // stopping
			}
			defer pool.Release(held)
			if r.yields() {
				return // giving way: the devices go back unused
			}
			if write := r.probe(ctx, wctx, held, j); write != nil {
				record(write)
			}
		}()
	}
}

// yields reports whether the scan gives way (opts.Yield): from the first
// true on, it starts no more probes.
func (r *run) yields() bool {
	if r.yielded.Load() {
		return true
	}
	if r.opts.Yield != nil && r.opts.Yield() {
		r.yielded.Store(true)
		return true
	}
	return false
}

// proberFor is the prober of a probe on devices held: a one-device probe's
// device's (pinned to it), else the host's, which pins each rank of a
// sharded probe itself (probe.Request.Chips).
func (s *Scanner) proberFor(held []int) Prober {
	if len(held) == 1 && held[0] < len(s.DeviceProbers) && s.DeviceProbers[held[0]] != nil {
		return s.DeviceProbers[held[0]]
	}
	return s.Prober
}

// probe runs the probe step for one model on the devices held (a rerun
// confirms a change of status) and returns the write of what stands, for
// the recorder; nil when shutdown left nothing to write.
func (r *run) probe(ctx, wctx context.Context, held []int, j *entry) func() {
	req := r.stepRequest(j)
	if len(held) > 1 {
		req.Devices, req.Chips = len(held), held
	}
	out := probestep.Probe(ctx, r.s.proberFor(held), req, r.s.log())
	for _, run := range out.Runs {
		r.mu.Lock()
		r.busy += run.Held * time.Duration(len(held))
		r.mu.Unlock()
		if r.hooks.ProbeDone != nil {
			r.hooks.ProbeDone(run.Result, run.Held)
		}
	}
	if out.Interrupted {
		return nil
	}
	measured := r.serveProbe(ctx, held, j, out.Result)
	if out.Flaky {
		return func() { r.recordFlaky(wctx, j, out.Result); r.putServing(wctx, j, measured) }
	}
	return func() { r.record(wctx, j, out.Result, true); r.putServing(wctx, j, measured) }
}

// stepRequest is the probe step of an entry: its planned mode, budget and
// note, against its previous status, stamped with the scan's runtime.
func (r *run) stepRequest(j *entry) probestep.Request {
	req := probestep.Request{Request: probe.Request{
		ModelID: j.info.ID, Revision: j.info.SHA, SnapshotDir: j.snapshot, Task: j.info.PipelineTag,
		Target: r.target, Mode: j.plan.Mode, Timeout: r.opts.Timeout,
		MemoryBudgetBytes: j.plan.Budget, PlanNote: planNote(j), NoTrain: j.plan.NoTrain,
	}, Runtime: r.runtime}
	if j.previous != nil {
		req.Previous = j.previous.Status
	}
	return req
}

// planNote is what the probe is told of its plan, for its config stage's
// note: why it is retested, why in this mode, how it is sharded, and which
// input files did not come.
func planNote(j *entry) string {
	note := j.plan.Reason + "; " + j.plan.ModeReason
	if j.plan.ShardReason != "" {
		note += "; " + j.plan.ShardReason
	}
	if j.inputsNote != "" {
		note += "; " + j.inputsNote
	}
	return note
}
