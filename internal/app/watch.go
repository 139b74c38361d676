package app

import (
	"context"
	"fmt"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/requests"
	"github.com/google-pytorch/torchtpu-scanner/internal/scan"
	"github.com/google-pytorch/torchtpu-scanner/internal/webhook"
	"github.com/google-pytorch/torchtpu-scanner/web"
)

// watch wires what serve adds for watching, asking and knowing: the known
// issues and the test requests' desk into the web server's config, the
// desk into the scan service (which runs requests when idle), and the
// webhooks' sender (nil without webhooks), which Serve runs and stops.
func (a *App) watch(ctx context.Context, wcfg *web.Config) (*webhook.Sender, error) {
	wcfg.KnownIssues = a.cfg.KnownIssues
	if n := a.cfg.KnownIssues.Len(); n > 0 {
		a.log.Info("known issues on", "entries", n, "file", a.cfg.KnownIssuesFile)
	}
	wcfg.RequestRate = a.cfg.RequestRate // 0: no per-client limit
	if a.cfg.RequestQueue > 0 {
		desk, err := requests.New(requests.Config{
			Store: a.Store, Hub: a.Hub, QueueCap: a.cfg.RequestQueue, Notify: a.Service.NotifyRequest,
			Caps:    requests.Caps{MaxFileBytes: hub.DefaultMaxFileBytes, MaxModelBytes: hub.DefaultMaxModelBytes},
			Metrics: a.Metrics, Logger: a.log,
		})
		if err != nil {
			return nil, fmt.Errorf("test requests: %w", err)
		}
		// Requests a dead server left running go back to the queue (only
		// serve runs them: a `scanner scan` beside it must not).
		if n, err := a.Store.RequeueRequests(ctx); err != nil {
			return nil, fmt.Errorf("requeue test requests: %w", err)
		} else if n > 0 {
			a.log.Info("test requests left running by an earlier process are queued again", "requests", n)
		}
		a.Service.ServeRequests(desk)
		wcfg.Requests = desk
	}
	if len(a.cfg.Webhooks) == 0 {
		return nil, nil
	}
	if a.cfg.PublicURL == "" {
		a.log.Warn("webhooks without --public-url: the links in their payloads are paths")
	}
	sender, err := webhook.New(webhook.Config{
		Webhooks: a.cfg.Webhooks, Store: a.Store, BaseURL: a.cfg.PublicURL, Known: a.cfg.KnownIssues.Match,
		Metrics: a.Metrics, Logger: a.log, Version: a.version,
	})
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	// A recorded result may be a change: the sender looks at once (it
	// also looks every few seconds, for the fleet's results and a restart).
	a.Scanner.Hooks.Progress = chainProgress(a.Scanner.Hooks.Progress, func(scan.Progress) { sender.Notify() })
	var labels []string
	for _, w := range a.cfg.Webhooks {
		labels = append(labels, w.Label())
	}
	a.log.Info("webhooks on", "webhooks", labels)
	wcfg.Webhooks = sender
	return sender, nil
}

func chainProgress(a, b func(scan.Progress)) func(scan.Progress) {
	if a == nil {
		return b
	}
	return func(p scan.Progress) { a(p); b(p) }
}
