package worker

import (
	"context"
	"errors"
	"time"
)

// A worker that the server refuses (401, 403) or does not know (404) is
// misconfigured, not waiting out a restart: it says what is wrong, backs
// off as for any failure, and its /healthz fails once that lasted longer
// than Config.MisconfiguredAfter, for an operator (or a failing liveness
// probe) to see.

// defaultMisconfiguredAfter is Config.MisconfiguredAfter's default.
const defaultMisconfiguredAfter = 2 * time.Minute

// misconfig is what is wrong with the worker's setup, since when.
type misconfig struct {
	since  time.Time
	reason string
}

// diagnose names what a failed request says about the worker's setup; ok
// is false for a failure worth waiting out (the server down, restarting,
// answering 5xx).
func (w *Worker) diagnose(ctx context.Context, err error) (reason string, ok bool) {
	switch {
	case errors.Is(err, errNoToken):
		return "no worker token: the server wants SCANNER_WORKER_TOKEN (401)", true
	case errors.Is(err, errWrongToken):
		return "wrong worker token: SCANNER_WORKER_TOKEN is not the server's (403)", true
	case errors.Is(err, ErrDisabled):
		switch w.api.dispatchMode(ctx) {
		case "local":
			return "the server runs --dispatch local: it probes itself and leases nothing (404 on the work routes)", true
		case "workers":
			return "the server's work routes are off (404): it has no SCANNER_WORKER_TOKEN", true
		}
		return "not a scanner server (404 on the work routes, no scanner fleet listing): check --server " + w.cfg.Server, true
	}
	return "", false
}

// failed handles a request to the server that failed (attempt n, from 0):
// a setup the server refuses is logged as such and remembered for
// /healthz; anything else is a server not reachable, waited out.
func (w *Worker) failed(ctx context.Context, what string, err error, n int) {
	w.seen(false)
	if ctx.Err() != nil {
		return
	}
	if reason, ok := w.diagnose(ctx, err); ok {
		m := w.misconf.Load()
		if m == nil || m.reason != reason {
			w.misconf.Store(&misconfig{since: time.Now(), reason: reason})
		}
		w.log.Error(what+": "+reason+"; retrying", "err", err, "attempt", n+1)
		return
	}
	w.log.Warn(what+": server not reachable; retrying", "err", err, "attempt", n+1)
}

// misconfigured is what is wrong with the worker's setup once that lasted
// longer than Config.MisconfiguredAfter ("" otherwise).
func (w *Worker) misconfigured(now time.Time) string {
	if m := w.misconf.Load(); m != nil && now.Sub(m.since) > w.cfg.MisconfiguredAfter {
		return m.reason
	}
	return ""
}
