package scan

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// Requests is the queue of tests people asked for (requests.Desk is the
// real one). The service runs them when it is idle: after the scheduled
// scan's models, never while a scan waits in its queue, a few models per
// scan, through the same scan (local or on the fleet) as any other. A scan
// that comes to wait while they run starts within one probe's time (they
// give way between probes: Options.Yield), and their share of the
// device's time is at most RequestShare.
type Requests interface {
	// Claim takes up to n queued requests (they are running from now on)
	// and returns their ids and models; none when the queue is empty.
	Claim(ctx context.Context, n int) (ids []int64, models []string, err error)
	// Done records how the scan of claimed requests ended; again says
	// that the scan could not run (the Hub or the fleet was unreachable,
	// or the service stopped) and the requests go back to the queue.
	Done(ctx context.Context, ids []int64, models []string, sc store.Scan, runErr error, again bool)
}

// Defaults of the request runner.
const (
	defaultRequestPoll  = time.Minute
	defaultRequestBatch = 8
)

// requestShare is RequestShare, or its default when unset.
func (s *Service) requestShare() float64 {
	if s.RequestShare > 0 && s.RequestShare <= 1 {
		return s.RequestShare
	}
	return config.DefaultRequestShare
}

// ServeRequests makes the service run the requests of r when it is idle;
// call it before Run.
func (s *Service) ServeRequests(r Requests) { s.requests = r }

// NotifyRequest says a request may be waiting; it never blocks.
func (s *Service) NotifyRequest() {
	select {
	case s.nudge <- struct{}{}:
	default:
	}
}

func (s *Service) requestPoll() time.Duration {
	if s.RequestPoll > 0 {
		return s.RequestPoll
	}
	return defaultRequestPoll
}

// runRequests scans queued requests, a batch at a time, until the queue
// is empty or a scan waits in the service's own queue.
func (s *Service) runRequests(ctx context.Context) {
	batch := s.RequestBatch
	if batch <= 0 {
		batch = defaultRequestBatch
	}
	for ctx.Err() == nil && len(s.queue) == 0 {
		s.mu.Lock()
		paused := time.Now().Before(s.pauseUntil) || time.Now().Before(s.shareUntil)
		s.mu.Unlock()
		if paused {
			return
		}
		ids, models, err := s.requests.Claim(ctx, batch)
		if err != nil {
			s.log.Error("test requests: claiming", "err", err)
			return
		}
		if len(ids) == 0 {
			return
		}
		opts := s.defaults
		opts.Trigger, opts.Source, opts.Models, opts.Limit = "request", "hub", models, len(models)
		// A scan that waits (scheduled, asked by the admin) starts within
		// one probe's time: the requested probes give way between probes,
		// and the requests not probed keep their place.
		var yielded atomic.Bool
		opts.Yield = func() bool {
			if len(s.queue) > 0 {
				yielded.Store(true)
			}
			return yielded.Load()
		}
		start := time.Now()
		sc, runErr := s.runScan(ctx, opts)
		outage := errors.Is(runErr, ErrHub) || errors.Is(runErr, fleet.ErrNoWorkers)
		again := ctx.Err() != nil || outage || yielded.Load()
		if yielded.Load() {
			s.log.Info("test requests give way to a waiting scan; those not tested keep their place", "scan_id", sc.ID)
		}
		s.mu.Lock()
		// Their share of the device is bounded: after a batch that held it
		// for d, requests wait d × (1 − share) / share.
		if share := s.requestShare(); share < 1 {
			wait := time.Duration(float64(time.Since(start)) * (1 - share) / share)
			s.shareUntil = time.Now().Add(wait)
			time.AfterFunc(wait, s.NotifyRequest) // then the next batch, not at the next poll
		}
		if outage && ctx.Err() == nil {
			s.pauseFor = nextRetryWait(s.pauseFor, s.firstRetry())
			s.pauseUntil = time.Now().Add(s.pauseFor)
			s.log.Info("test requests wait: the scan could not run", "for", s.pauseFor.String())
		} else if runErr == nil {
			s.pauseFor = 0
		}
		s.mu.Unlock()
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		s.requests.Done(dctx, ids, models, sc, runErr, again)
		cancel()
	}
}

// firstRetry is the first wait after a scan could not reach the Hub.
func (s *Service) firstRetry() time.Duration {
	if s.RetryAfter > 0 {
		return s.RetryAfter
	}
	return firstHubRetry
}
