package scan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/scanlock"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// ErrQueued is returned by Request when a scan is already waiting to run.
var ErrQueued = errors.New("a scan is already queued")

// ErrStopped is returned by Request after the service stopped.
var ErrStopped = errors.New("scan service stopped")

// State is where the service stands, for the website and /metrics.
type State struct {
	Running    bool
	ScanID     int64 // the running scan, else the last one
	Foreign    bool  // the running scan is another process's (scanner scan on the same database)
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
	// LockPoll is how often a scan waiting for another process's scan of
	// the same database tries again (default 5 s).
	LockPoll time.Duration
	waiting  bool    // a scan waits for another process's to end
	resume   []int64 // scans left to their queued jobs by an earlier process
	// resumed signals Run that Resume added scans (buffered, one).
	resumed chan struct{}
	foreign foreignCheck
	// after is the timer of retryLater's wait (time.After; tests replace it).
	after func(time.Duration) <-chan time.Time
	done  chan struct{}
	stop  sync.Once

	// Test requests (requests.go): run when the service is idle.
	requests   Requests
	nudge      chan struct{}
	pauseUntil time.Time     // no request scan before (the Hub or the fleet was unreachable)
	pauseFor   time.Duration // the last such pause
	// RequestPoll is how often the service looks for queued requests
	// besides being told (NotifyRequest); default 1 minute.
	RequestPoll time.Duration
	// RequestBatch is how many requests one scan takes; default 8.
	RequestBatch int
	// RequestShare is the most of the device's time requested probes may
	// take, over 0 to 1 (1: no bound); default config.DefaultRequestShare.
	RequestShare float64
	shareUntil   time.Time // no request scan before (their share was used)
}

// foreignCheck remembers, for a second, whether another process holds
// the database's scan lock: State is asked on every page view.
type foreignCheck struct {
	mu     sync.Mutex
	at     time.Time
	holder scanlock.Holder
	held   bool
}

func (f *foreignCheck) get(db string, log *slog.Logger) (scanlock.Holder, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.at) < time.Second {
		return f.holder, f.held
	}
	h, held, err := scanlock.Check(db)
	if err != nil {
		log.Warn("scan lock", "err", err)
	}
	f.at, f.holder, f.held = time.Now(), h, held
	return h, held
}

// NewService wraps a scanner; defaults are the options of every scan it
// runs. The scanner's own Hooks still observe them.
func NewService(s *Scanner, defaults Options, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{scanner: s, defaults: defaults, log: log, queue: make(chan string, 1), done: make(chan struct{}), after: time.After,
		nudge: make(chan struct{}, 1), resumed: make(chan struct{}, 1)}
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
		// A scan that waited for another process's runs once it holds the
		// lock: until then State reports the other's scan (runWhenFree).
		Locked: func(string) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.state.Running, s.waiting = true, false
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

// retryLater queues a scan after a growing wait, so a Hub outage (or a
// fleet not up yet) at start does not leave the site empty until the next
// scheduled scan.
func (s *Service) retryLater(ctx context.Context, cause error) {
	s.mu.Lock()
	first := s.RetryAfter
	if first <= 0 {
		first = firstHubRetry
	}
	s.retryIn = nextRetryWait(s.retryIn, first)
	wait := s.retryIn
	s.mu.Unlock()
	s.log.Info("retrying the scan later", "in", wait.String(), "cause", hub.Brief(cause))
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

// Resume hands the service scans that another server process left to
// their queued jobs (store.ResumeScans: one that stopped, or fell silent):
// Run waits for them to drain, and finishes their records, before it runs
// any new scan; handed while Run runs, after the scan in flight.
func (s *Service) Resume(ids []int64) {
	if len(ids) == 0 {
		return
	}
	s.mu.Lock()
	s.resume = append(s.resume, ids...)
	s.mu.Unlock()
	select {
	case s.resumed <- struct{}{}:
	default: // Run will see them
	}
}

// resumeAll finishes the scans handed to Resume, one at a time.
func (s *Service) resumeAll(ctx context.Context) {
	s.mu.Lock()
	ids := s.resume
	s.resume = nil
	s.mu.Unlock()
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		s.state.Running, s.state.ScanID = true, id
		s.mu.Unlock()
		sc, err := s.scanner.Resume(ctx, id, s.hooks())
		s.mu.Lock()
		s.state.Running = false
		s.mu.Unlock()
		if err != nil {
			s.logEnd(ctx, "resumed scan", sc, err)
			continue
		}
		s.log.Info("resumed scan finished", "scan_id", sc.ID, "models", sc.Planned, "probed", sc.Probed)
	}
}

// State returns a snapshot of the service's state. A scan that another
// process runs on the same database (scanner scan) counts as running,
// with Foreign set.
func (s *Service) State() State {
	s.mu.Lock()
	st, waiting := s.state, s.waiting
	s.mu.Unlock()
	if st.Running || s.scanner.ScanLock == "" {
		return st // while this service scans, it holds the lock itself
	}
	if h, held := s.foreign.get(s.scanner.ScanLock, s.log); held {
		st.Running, st.Foreign, st.Queued = true, true, st.Queued || waiting
		if h.ScanID > 0 {
			st.ScanID = h.ScanID
		}
	}
	return st
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
	s.resumeAll(ctx)
	var poll <-chan time.Time
	if s.requests != nil {
		t := time.NewTicker(s.requestPoll())
		defer t.Stop()
		poll = t.C
		s.NotifyRequest() // requests left queued by an earlier process
	}
	for {
		select {
		case <-ctx.Done():
			s.stop.Do(func() { close(s.done) })
			return
		case trigger := <-s.queue:
			s.runOne(ctx, trigger)
			if s.requests != nil {
				s.NotifyRequest() // the scheduled scan's models are done: requests next
			}
		case <-s.nudge:
			s.runRequests(ctx)
		case <-poll:
			s.runRequests(ctx)
		case <-s.resumed:
			s.resumeAll(ctx)
		}
	}
}

func (s *Service) runOne(ctx context.Context, trigger string) {
	opts := s.defaults
	opts.Trigger = trigger
	sc, err := s.runScan(ctx, opts)
	if err != nil {
		if (errors.Is(err, ErrHub) || errors.Is(err, fleet.ErrNoWorkers)) && ctx.Err() == nil {
			s.retryLater(ctx, err)
		}
		return
	}
	s.mu.Lock()
	s.retryIn = 0
	s.mu.Unlock()
	s.log.Info("scan finished", "scan_id", sc.ID, "trigger", trigger, "models", sc.Planned, "probed", sc.Probed, "unchanged", sc.Unchanged)
}

// runScan runs one scan with opts, keeping the service's state; a failed
// scan is logged (and returned).
func (s *Service) runScan(ctx context.Context, opts Options) (sc store.Scan, err error) {
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
			err = fmt.Errorf("scan: panic: %v", p)
		}
	}()
	sc, err = s.runWhenFree(ctx, opts)
	s.mu.Lock()
	if sc.ID > 0 {
		s.state.ScanID = sc.ID
	}
	s.mu.Unlock()
	if err != nil {
		s.logEnd(ctx, "scan", sc, err, "trigger", opts.Trigger)
	}
	return sc, err
}

// logEnd logs a scan (what: "scan", "resumed scan") that ended with err:
// stopped by a shutdown (the service's ctx ended) it was interrupted, not
// failed (Info); past its deadline or stalled it was interrupted (Warn);
// anything else failed (Error).
func (s *Service) logEnd(ctx context.Context, what string, sc store.Scan, err error, kv ...any) {
	kv = append([]any{"scan_id", sc.ID, "status", sc.Status, "err", err}, kv...)
	switch {
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		s.log.Info(what+" interrupted by shutdown", kv...)
	case errors.Is(err, ErrScanTimeout) || errors.Is(err, fleet.ErrStalled):
		s.log.Warn(what+" interrupted", kv...)
	default:
		s.log.Error(what+" failed", kv...)
	}
}

// runWhenFree runs a scan, first waiting (polling every LockPoll) while
// another process scans the same database.
func (s *Service) runWhenFree(ctx context.Context, opts Options) (store.Scan, error) {
	poll := s.lockPoll()
	for logged := false; ; logged = true {
		// While it retries, the state stays "waiting" (another's scan
		// running, ours queued) until the Locked hook says it runs.
		sc, err := s.scanner.Run(ctx, opts, s.hooks())
		if !errors.Is(err, scanlock.ErrHeld) {
			s.mu.Lock()
			s.waiting = false
			s.mu.Unlock()
			return sc, err
		}
		if !logged {
			s.log.Info("another process is scanning this database; this scan starts when it ends", "holder", err.Error())
		}
		s.mu.Lock()
		s.state.Running, s.waiting = false, true
		s.mu.Unlock()
		t := time.NewTimer(poll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		if ctx.Err() != nil {
			s.mu.Lock()
			s.waiting = false
			s.mu.Unlock()
			return store.Scan{}, ctx.Err()
		}
	}
}

// defaultLockPoll is how often a scan waiting for another process's scan
// tries again when Service.LockPoll is not set.
const defaultLockPoll = 5 * time.Second

func (s *Service) lockPoll() time.Duration {
	if s.LockPoll > 0 {
		return s.LockPoll
	}
	return defaultLockPoll
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
