package scan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
)

// ErrQueued is returned by Request when a scan is already waiting to run.
var ErrQueued = errors.New("a scan is already queued")

// ErrStopped is returned by Request after the service stopped.
var ErrStopped = errors.New("scan service stopped")

// State is where the service stands, for the website and /metrics.
type State struct {
	Running    bool
	ScanID     int64 // the running scan, else the last one
	Queued     bool
	HubError   string // the last Hub failure; "" once the Hub answered again
	HubErrorAt time.Time
}

// Service runs scans one at a time from a queue of length one: manual
// requests, the cron schedule and the start-up scan all join it, and a
// request while one is already waiting is refused rather than stacked.
type Service struct {
	scanner  *Scanner
	defaults Options
	log      *slog.Logger

	queue chan string // triggers
	mu    sync.Mutex
	state State
	cron  *cron.Cron
	// RetryAfter is the first wait before a scan that failed to reach the
	// Hub is tried again; each further failure doubles it, up to 6 h.
	RetryAfter time.Duration
	retryIn    time.Duration
	// after is the timer of retryLater's wait (time.After; tests replace it).
	after func(time.Duration) <-chan time.Time
	done  chan struct{}
	stop  sync.Once
}

// NewService wraps a scanner; defaults are the options of every scan it
// runs. The scanner's own Hooks still observe them.
func NewService(s *Scanner, defaults Options, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{scanner: s, defaults: defaults, log: log, queue: make(chan string, 1), done: make(chan struct{}), after: time.After}
}

// hooks are the service's observers of the scans it runs: it follows the
// scan's id and the Hub's health for the website.
func (s *Service) hooks() Hooks {
	return Hooks{
		HubFailure: func(err error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if err != nil {
				s.state.HubError, s.state.HubErrorAt = hub.Brief(err), time.Now().UTC()
			} else {
				s.state.HubError, s.state.HubErrorAt = "", time.Time{}
			}
		},
		Progress: func(p Progress) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.state.ScanID = p.ScanID
		},
	}
}

// Request queues a scan. It never blocks.
func (s *Service) Request(trigger string) error {
	select {
	case <-s.done:
		return ErrStopped
	default:
	}
	select {
	case s.queue <- trigger:
		s.mu.Lock()
		s.state.Queued = true
		s.mu.Unlock()
		s.log.Info("scan queued", "trigger", trigger)
		return nil
	default:
		return ErrQueued
	}
}

// The waits before retrying a scan that could not reach the Hub: the first
// (unless Service.RetryAfter sets it), doubled after each further failure,
// up to the last.
const (
	firstHubRetry = 5 * time.Minute
	maxHubRetry   = 6 * time.Hour
)

// nextRetryWait is the wait after a failure to reach the Hub, given the
// previous wait (0 after a success) and the first one.
func nextRetryWait(prev, first time.Duration) time.Duration {
	if prev == 0 {
		return first
	}
	return min(2*prev, maxHubRetry)
}

// retryLater queues a scan after a growing wait, so a Hub outage at start
// does not leave the site empty until the next scheduled scan.
func (s *Service) retryLater(ctx context.Context) {
	s.mu.Lock()
	first := s.RetryAfter
	if first <= 0 {
		first = firstHubRetry
	}
	s.retryIn = nextRetryWait(s.retryIn, first)
	wait := s.retryIn
	s.mu.Unlock()
	s.log.Info("the Hub could not be reached; retrying the scan later", "in", wait.String())
	timer := s.after(wait)
	go func() {
		select {
		case <-timer:
			if err := s.Request("retry"); err != nil {
				s.log.Info("retry scan not queued", "reason", err)
			}
		case <-ctx.Done():
		}
	}()
}

// State returns a snapshot of the service's state.
func (s *Service) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Schedule starts the cron schedule (standard five-field spec); each tick
// requests a scan, which is dropped if one is already waiting.
func (s *Service) Schedule(spec string) error {
	c := cron.New(cron.WithChain(cron.Recover(cronLogger{s.log})))
	if _, err := c.AddFunc(spec, func() {
		if err := s.Request("schedule"); err != nil {
			s.log.Info("scheduled scan not queued", "reason", err)
		}
	}); err != nil {
		return fmt.Errorf("scan: schedule %q: %w", spec, err)
	}
	s.mu.Lock()
	s.cron = c
	s.mu.Unlock()
	c.Start()
	return nil
}

// Run executes queued scans until ctx is cancelled; the scan in flight is
// cancelled with it and recorded as interrupted. Run returns when the last
// scan has been recorded.
func (s *Service) Run(ctx context.Context) {
	defer s.stopSchedule()
	for {
		select {
		case <-ctx.Done():
			s.stop.Do(func() { close(s.done) })
			return
		case trigger := <-s.queue:
			s.runOne(ctx, trigger)
		}
	}
}

func (s *Service) runOne(ctx context.Context, trigger string) {
	opts := s.defaults
	opts.Trigger = trigger
	s.mu.Lock()
	s.state.Queued = len(s.queue) > 0
	s.state.Running = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.state.Running = false
		s.mu.Unlock()
	}()
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("scan panicked", "panic", p)
		}
	}()
	sc, err := s.scanner.Run(ctx, opts, s.hooks())
	s.mu.Lock()
	s.state.ScanID = sc.ID
	s.mu.Unlock()
	if err != nil {
		s.log.Error("scan failed", "scan_id", sc.ID, "trigger", trigger, "err", err)
		if errors.Is(err, ErrHub) && ctx.Err() == nil {
			s.retryLater(ctx)
		}
		return
	}
	s.mu.Lock()
	s.retryIn = 0
	s.mu.Unlock()
	s.log.Info("scan finished", "scan_id", sc.ID, "trigger", trigger, "models", sc.Planned, "probed", sc.Probed, "unchanged", sc.Unchanged)
}

func (s *Service) stopSchedule() {
	s.mu.Lock()
	c := s.cron
	s.cron = nil
	s.mu.Unlock()
	if c != nil {
		<-c.Stop().Done()
	}
}

type cronLogger struct{ log *slog.Logger }

func (l cronLogger) Info(msg string, kv ...any) { l.log.Debug("cron: "+msg, kv...) }
func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error("cron: "+msg, append(kv, "err", err)...)
}
