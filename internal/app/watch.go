package app

import (
	"context"
	"fmt"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/requests"
	"github.com/google-pytorch/torchtpu-scanner/internal/scan"
	"github.com/google-pytorch/torchtpu-scanner/internal/watch"
	"github.com/google-pytorch/torchtpu-scanner/internal/webhook"
	"github.com/google-pytorch/torchtpu-scanner/web"
)

// watch wires what serve adds for watching, asking and knowing: the known
// issues and the test requests' desk into the web server's config, the
// desk into the scan service (which runs requests when idle), and the
// webhooks' sender (nil without webhooks), which Serve runs and stops.
func (a *App) watch(ctx context.Context, wcfg *web.Config) (*webhook.Sender, error) {
	wcfg.KnownIssues = *a.known.Load()
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
		a.Service.RequestShare = a.cfg.RequestShare
		wcfg.Requests = desk
	}
	if a.cfg.WebhooksFile != "" || len(a.cfg.Webhooks) > 0 {
		// A recorded result may be a change: the sender looks at once (it
		// also looks every few seconds, for the fleet's results and a
		// restart). The sender of the moment: a reload replaces it.
		a.Scanner.Hooks.Progress = chainProgress(a.Scanner.Hooks.Progress, func(scan.Progress) { a.hooks.notify() })
		wcfg.Webhooks = &a.hooks // GET /api/v1/webhooks asks the sender of the moment
	}
	if len(a.cfg.Webhooks) == 0 {
		return nil, nil
	}
	if a.cfg.PublicURL == "" {
		a.log.Warn("webhooks without --public-url: the links in their payloads are paths")
	}
	sender, err := a.newSender(a.cfg.Webhooks)
	if err != nil {
		return nil, err
	}
	a.log.Info("webhooks on", "webhooks", labels(a.cfg.Webhooks))
	return sender, nil
}

// newSender prepares the webhooks' sender, at start and on a reload; nil
// for no webhooks.
func (a *App) newSender(hooks []watch.Webhook) (*webhook.Sender, error) {
	if len(hooks) == 0 {
		return nil, nil
	}
	sender, err := webhook.New(webhook.Config{
		Webhooks: hooks, Store: a.Store, BaseURL: a.cfg.PublicURL, Known: a.knownIssue,
		Metrics: a.Metrics, Logger: a.log, Version: a.version,
	})
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	return sender, nil
}

// knownIssue is where a signature is tracked, by the known issues in use.
func (a *App) knownIssue(sig string) *compat.KnownIssue { return a.known.Load().Match(sig) }

func labels(hooks []watch.Webhook) []string {
	var out []string
	for _, w := range hooks {
		out = append(out, w.Label())
	}
	return out
}

func chainProgress(a, b func(scan.Progress)) func(scan.Progress) {
	if a == nil {
		return b
	}
	return func(p scan.Progress) { a(p); b(p) }
}
