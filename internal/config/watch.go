package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/google-pytorch/torchtpu-scanner/internal/knownissues"
	"github.com/google-pytorch/torchtpu-scanner/internal/watch"
)

// Defaults of the test requests (serve).
const (
	DefaultRequestRate  = 5   // per client per hour
	DefaultRequestQueue = 100 // open requests
	maxRequestQueue     = 100_000
	// DefaultRequestShare is the most of the device's time requested
	// probes may take: after a batch that held it for d, the next waits d.
	DefaultRequestShare = 0.5
)

// watchFlags are serve's flags for watching (webhooks), asking (test
// requests) and knowing (known issues).
func (c *Config) watchFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.WebhooksFile, "webhooks", c.WebhooksFile, "JSON list of outgoing webhooks, [{\"url\", \"secret\", \"filters\"}]: each status change is POSTed, signed [SCANNER_WEBHOOKS]")
	fs.StringVar(&c.KnownIssuesFile, "known-issues", c.KnownIssuesFile, "JSON object mapping failure signatures (exact, or a prefix ending in *) to {\"title\", \"url\", \"state\"} [SCANNER_KNOWN_ISSUES]")
	fs.IntVar(&c.RequestRate, "request-rate", c.RequestRate, "test requests (POST /api/v1/requests, the \"Request a test\" form) one client may make per hour (0 = no limit)")
	fs.IntVar(&c.RequestQueue, "request-queue", c.RequestQueue, "the most test requests waiting at once (0 turns test requests off)")
	fs.Float64Var(&c.RequestShare, "request-share", c.RequestShare, "the most of the device's time test requests may take, over 0 to 1 (after requests held it for d, they wait d×(1−share)/share; 1: no bound)")
}

// loadWatchFiles reads and checks the webhooks and known-issues files; an
// error names the flag, the file and the entry at fault.
func (c *Config) loadWatchFiles() error {
	var errs []error
	if c.WebhooksFile != "" {
		var err error
		if c.Webhooks, err = c.ReadWebhooks(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.KnownIssuesFile != "" {
		var err error
		if c.KnownIssues, err = c.ReadKnownIssues(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ReadWebhooks reads and checks the --webhooks file, at start and when
// serve reloads it (SIGHUP); an error names the flag, the file and the
// entry at fault.
func (c Config) ReadWebhooks() ([]watch.Webhook, error) {
	b, err := readCapped(c.WebhooksFile, watch.MaxWebhooksFileBytes)
	var hooks []watch.Webhook
	if err == nil {
		hooks, err = watch.ParseWebhooks(b)
	}
	if err != nil {
		return nil, fmt.Errorf("--webhooks %s: %w", c.WebhooksFile, err)
	}
	return hooks, nil
}

// ReadKnownIssues reads and checks the --known-issues file, at start and
// when serve reloads it (SIGHUP); an error names the flag, the file and
// the entry at fault.
func (c Config) ReadKnownIssues() (knownissues.Table, error) {
	b, err := readCapped(c.KnownIssuesFile, knownissues.MaxFileBytes)
	var t knownissues.Table
	if err == nil {
		t, err = knownissues.Parse(b)
	}
	if err != nil {
		return knownissues.Table{}, fmt.Errorf("--known-issues %s: %w", c.KnownIssuesFile, err)
	}
	return t, nil
}

// readCapped reads a file of at most limit bytes.
func readCapped(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("over the %d-byte cap", limit)
	}
	return b, nil
}

// validateWatch checks the test requests' settings.
func (c *Config) validateWatch() []error {
	var errs []error
	if c.RequestRate < 0 {
		errs = append(errs, fmt.Errorf("--request-rate %d: want 0 (no limit) or more", c.RequestRate))
	}
	if !(c.RequestShare > 0 && c.RequestShare <= 1) {
		errs = append(errs, fmt.Errorf("--request-share %g: want more than 0, at most 1", c.RequestShare))
	}
	if c.RequestQueue < 0 || c.RequestQueue > maxRequestQueue {
		errs = append(errs, fmt.Errorf("--request-queue %d: want 0 (requests off) to %d", c.RequestQueue, maxRequestQueue))
	}
	return errs
}
