package app

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/google-pytorch/torchtpu-scanner/internal/webhook"
	"github.com/google-pytorch/torchtpu-scanner/web"
)

// This file is serve's reload (SIGHUP): the known-issues and webhooks
// files are read again; a file that fails its checks is refused, logged,
// and the one in use kept.

// Reload reads the --known-issues and --webhooks files again, each on its
// own: a new known-issues table is shown at once on every page, answer and
// webhook payload; new webhooks replace the sender (the old one stops as
// at shutdown, a POST in flight given its grace; the deliveries it queued
// stay in the database). A file that fails its checks, or cannot be read,
// is refused and logged, and what is in use stays. Reloads take turns.
// Before Serve is serving, nothing is reloaded (logged).
func (a *App) Reload(ctx context.Context) {
	a.reloading.Lock()
	defer a.reloading.Unlock()
	srv := a.srv.Load()
	if srv == nil {
		a.log.Warn("reload: not serving yet, nothing reloaded")
		return
	}
	if a.cfg.KnownIssuesFile == "" && a.cfg.WebhooksFile == "" {
		a.log.Info("reload: no --known-issues or --webhooks file to read again")
	}
	if a.cfg.KnownIssuesFile != "" {
		if t, err := a.cfg.ReadKnownIssues(); err != nil {
			a.log.Error("reload: known issues refused, the ones in use are kept", "err", err)
		} else {
			a.known.Store(&t)
			srv.SetKnownIssues(ctx, t)
			a.log.Info("reload: known issues read again", "entries", t.Len(), "file", a.cfg.KnownIssuesFile)
		}
	}
	if a.cfg.WebhooksFile != "" {
		hooks, err := a.cfg.ReadWebhooks()
		var sender *webhook.Sender
		if err == nil {
			sender, err = a.newSender(hooks)
		}
		if err != nil {
			a.log.Error("reload: webhooks refused, the ones in use are kept", "err", err)
		} else if a.hooks.run(sender) {
			a.log.Info("reload: webhooks read again", "webhooks", labels(hooks), "file", a.cfg.WebhooksFile)
		}
	}
}

// hookRunner runs the webhooks' sender in the background until closed,
// and replaces it on a reload.
type hookRunner struct {
	mu     sync.Mutex
	cur    atomic.Pointer[webhook.Sender] // read by notify, which never waits
	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

// run stops the sender running (waiting for it), takes the metrics series
// of its webhooks that s lacks off /metrics, and starts s (nil: none);
// false once closed, when it starts nothing.
func (h *hookRunner) run(s *webhook.Sender) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	old := h.cur.Load()
	h.stopLocked()
	if old != nil {
		old.Forget(s)
	}
	if s == nil {
		return true
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	h.cur.Store(s)
	h.cancel, h.done = cancel, done
	return true
}

// close stops the sender and waits for it; nothing runs after.
func (h *hookRunner) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	h.stopLocked()
}

func (h *hookRunner) stopLocked() {
	if h.cancel == nil {
		return
	}
	h.cur.Store(nil)
	h.cancel()
	<-h.done
	h.cancel, h.done = nil, nil
}

// notify tells the sender of the moment that new events may be there.
func (h *hookRunner) notify() {
	if s := h.cur.Load(); s != nil {
		s.Notify()
	}
}

// Status is the webhooks' deliveries as the sender of the moment reports
// them (GET /api/v1/webhooks); none while no sender runs.
func (h *hookRunner) Status(ctx context.Context) ([]webhook.Status, error) {
	if s := h.cur.Load(); s != nil {
		return s.Status(ctx)
	}
	return nil, nil
}

// serving records the web server Reload gives new known issues to.
func (a *App) serving(srv *web.Server) { a.srv.Store(srv) }
