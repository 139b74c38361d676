package scan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/config"
)

// Options are one scan's parameters.
type Options struct {
	Trigger string        // "cli", "schedule", "manual", "startup"
	Source  string        // "hub" (default) or "cache"
	Limit   int           // how many popular models
	Sort    string        // downloads, likes, trending
	Tasks   []string      // pipeline tags to include (all when empty)
	Models  []string      // exactly these ids (overrides the listing)
	Target  compat.Target // requested target (auto resolves once per scan)
	Mode    compat.Mode   // requested mode (Plan decides full or arch per model)
	Timeout time.Duration // per probe
	Force   bool          // retest even when nothing changed
	Devices int           // the host's devices: one probe each, a sharded probe several
	// DeviceMemory is one device's memory for the plan (--device-memory,
	// bytes; 0: the device's own), see DevicesOf.
	DeviceMemory int64
	// ScanTimeout is the whole scan's deadline (0: none); a scan past it
	// ends interrupted with ErrScanTimeout.
	ScanTimeout time.Duration
	// Yield, when set, is asked before each probe starts: once it says
	// true, the scan starts no more probes, lets those running finish, and
	// ends (the service's requested probes give way to a waiting scan).
	Yield func() bool `json:"-"`
}

// withDefaults fills what the caller left zero from config.Defaults (the
// app passes the configured options whole; tests and a resumed scan's
// stored options may leave some out).
func withDefaults(o Options) Options {
	d := config.Defaults()
	if o.Trigger == "" {
		o.Trigger = "cli"
	}
	if o.Source == "" {
		o.Source = d.Source
	}
	if o.Limit <= 0 {
		o.Limit = d.Limit
	}
	if o.Sort == "" {
		o.Sort = d.Sort
	}
	if o.Target == "" {
		o.Target = d.Target
	}
	if o.Mode == "" {
		o.Mode = d.Mode
	}
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.Devices <= 0 {
		o.Devices = d.Devices
	}
	return o
}

// ErrScanTimeout ends a scan that ran past Options.ScanTimeout; it also
// matches context.DeadlineExceeded, so the scan is recorded interrupted.
var ErrScanTimeout = errors.New("the scan ran past its deadline")

// scanTimeout is the error of a scan cut by its deadline: it reads as
// its cause (which names the flag) and matches both ErrScanTimeout and
// context.DeadlineExceeded.
type scanTimeout struct{ cause error }

func (e scanTimeout) Error() string   { return e.cause.Error() }
func (e scanTimeout) Unwrap() []error { return []error{e.cause, context.DeadlineExceeded} }

// withDeadline bounds ctx by opts.ScanTimeout, whose expiry is the cause.
func withDeadline(ctx context.Context, opts Options) (context.Context, context.CancelFunc) {
	return withDeadlineFrom(ctx, time.Now(), opts)
}

// withDeadlineFrom bounds ctx by opts.ScanTimeout counted from start (a
// resumed scan's deadline runs from its first start).
func withDeadlineFrom(ctx context.Context, start time.Time, opts Options) (context.Context, context.CancelFunc) {
	if opts.ScanTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithDeadlineCause(ctx, start.Add(opts.ScanTimeout),
		fmt.Errorf("%w (--scan-timeout %s): what was measured is saved, and the next scan tests the rest", ErrScanTimeout, opts.ScanTimeout))
}

// timedOut turns err into a scanTimeout when ctx ended by its deadline.
func timedOut(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, ErrScanTimeout) {
		return scanTimeout{cause}
	}
	return err
}
