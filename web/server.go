// Package web is the scanner's public face: the server-rendered
// compatibility table and model pages, SVG and shields.io badges, the JSON
// API, the JSON Feed, the CSV export, health checks and Prometheus metrics.
//
// Every route is listed in routes.go, which wires one handler per
// audience: the pages and the test requests' form (web/pages), the JSON
// API and the CSV exports (web/api), the feeds and the webhooks' view
// (web/feeds), the badges (web/badge), the worker fleet's routes
// (web/work). Each handler keeps its own caches of answers; what they all
// read is web/internal/data's, kept per data version. Errors are mapped
// to HTTP statuses in one place (errors.go, with web/internal/httpx's
// statuses). New prepares every handler (the pages' templates and assets
// included) and fails if any of them is broken.
package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/knownissues"
	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/internal/sweep"
	"github.com/google-pytorch/torchtpu-scanner/web/api"
	"github.com/google-pytorch/torchtpu-scanner/web/badge"
	"github.com/google-pytorch/torchtpu-scanner/web/feeds"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
	"github.com/google-pytorch/torchtpu-scanner/web/pages"
	"github.com/google-pytorch/torchtpu-scanner/web/work"
)

// ErrScanQueued is returned by ScanControl.RequestScan when a scan is
// already waiting to run; the API answers 409.
var ErrScanQueued = httpx.ErrScanQueued

// ScanState is what the scheduler is doing now (web/internal/data).
type ScanState = data.ScanState

// ScanControl is the part of the scheduler the web server drives.
type ScanControl = data.ScanControl

// Store is what the web server reads from the database (web/internal/data).
type Store = data.Store

// RequestDesk takes test requests (web/internal/data).
type RequestDesk = data.RequestDesk

// WebhookStatus reports the outgoing webhooks' deliveries (web/feeds).
type WebhookStatus = feeds.WebhookStatus

// WorkControl is the server's side of the worker fleet (web/work).
type WorkControl = work.Control

// Config is everything the web server depends on.
type Config struct {
	// Store is the scanner's database (required).
	Store Store
	// Scans drives the scheduler; nil means no POST /api/v1/scans and no
	// live scan state on pages.
	Scans ScanControl
	// AdminToken guards write routes (Authorization: Bearer …); empty turns
	// them off (403 with a JSON explanation).
	AdminToken string
	// HubEndpoint is the Hub's base URL for model links; default https://huggingface.co.
	HubEndpoint string
	// Metrics is the registry served at /metrics; nil means a private one.
	Metrics *metrics.Registry
	// Logger receives errors and warnings; nil means slog.Default().
	Logger *slog.Logger
	// Version is shown in the footer and /healthz.
	Version string
	// PublicURL is the site's external base URL, for badge snippets and feed
	// ids (e.g. https://compat.example.org); default: derived from each request.
	PublicURL string

	// APIRate is the sustained requests per second one client (IP) may make
	// to /api/; 0 means 20, negative turns the limit off.
	APIRate float64
	// APIBurst is how many requests a client may make at once; 0 means 120.
	APIBurst int
	// BodyLimit caps request bodies in bytes; 0 means 64 KiB.
	BodyLimit int
	// IPv6ClientPrefix is how many leading bits of an IPv6 address name
	// one client for every per-client limit (clientKey): 0 means
	// config.DefaultIPv6ClientPrefix (64), else config.MinIPv6ClientPrefix
	// to 128. An IPv4 address is always a client of its own.
	IPv6ClientPrefix int
	// TrustedProxies are the IPs and CIDRs of the proxies in front of the
	// server: only their X-Forwarded-For, -Host and -Proto are believed
	// (the client's IP for the rate limit, the base URL of feed ids and
	// badge snippets). Empty: the connection decides (httpx.Clients).
	TrustedProxies []string

	// Work is the worker fleet (serve --dispatch workers); nil means no
	// work routes and an empty /api/v1/workers.
	Work WorkControl
	// WorkerToken guards /api/v1/work/… (Authorization: Bearer …); empty
	// turns those routes off (404).
	WorkerToken string

	// KnownIssues maps failure signatures to where they are tracked
	// (--known-issues); the zero table knows none.
	KnownIssues knownissues.Table
	// Requests takes test requests (requests.Desk); nil turns POST
	// /api/v1/requests, the request pages and the "Request a test" form off.
	Requests RequestDesk
	// RequestRate is how many test requests one client (IP) may make per
	// hour (--request-rate); 0 or less: no limit.
	RequestRate int
	// Webhooks reports the webhooks' deliveries (GET /api/v1/webhooks,
	// admin token); nil: none configured (an empty list).
	Webhooks WebhookStatus
}

// Defaults of Config.
const (
	DefaultHubEndpoint = "https://huggingface.co"
	DefaultAPIRate     = 20
	DefaultAPIBurst    = 120
	DefaultBodyLimit   = 64 << 10
)

// Server is the web server. Create it with New.
type Server struct {
	store       Store
	data        *data.Reader   // the reads the audiences share (web/internal/data)
	badges      *badge.Handler // the badges (web/badge)
	feeds       *feeds.Handler // the JSON Feed and Atom, the webhooks' view (web/feeds)
	api         *api.Handler   // the JSON API and the CSV exports (web/api)
	scans       ScanControl
	work        *work.Handler // the worker fleet's routes (web/work)
	adminToken  string
	hubEndpoint string
	hub         show.Hub // links to the Hub (hubEndpoint)
	version     string
	log         *slog.Logger
	reg         *metrics.Registry

	app     *fiber.App
	pages   *pages.Handler // the HTML pages, the test requests' form (web/pages)
	openapi []byte
	limiter *httpx.RateLimiter // nil when off
	clients httpx.Clients      // who the client is (its proxies, its IPv6 prefix) and the site's base URL

	httpReqs    *metrics.CounterVec
	httpTimes   *metrics.HistogramVec
	routeSeries sync.Map // routeCode → *routeSeries

	shutdownOnce sync.Once
	shutdownErr  error

	known *data.Known // the known-issues table; SetKnownIssues replaces it
	asks  data.Asks   // the test requests' desk and per-client limit
}

// New prepares a server: it parses the templates, hashes the assets and
// builds the route table, failing fast if any of them is broken.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("web: Config.Store is required")
	}
	s := &Server{
		store:       cfg.Store,
		scans:       cfg.Scans,
		work:        work.New(cfg.Work, cfg.WorkerToken),
		adminToken:  cfg.AdminToken,
		hubEndpoint: strings.TrimRight(cfg.HubEndpoint, "/"),
		version:     cfg.Version,
		log:         cfg.Logger,
		reg:         cfg.Metrics,
	}
	s.clients.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	s.asks = data.Asks{Desk: cfg.Requests, Clients: &s.clients}
	s.known = data.NewKnown(cfg.KnownIssues)
	s.store = s.known.Versioned(cfg.Store)
	if s.hubEndpoint == "" {
		s.hubEndpoint = DefaultHubEndpoint
	}
	for name, u := range map[string]string{"HubEndpoint": s.hubEndpoint, "PublicURL": s.clients.PublicURL} {
		if u == "" {
			continue
		}
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("web: Config.%s %q: want an absolute http(s) URL", name, u)
		}
	}
	s.hub = show.Hub(s.hubEndpoint)
	if s.log == nil {
		s.log = slog.Default()
	}
	var err error
	if s.clients.Proxies, err = httpx.ParseProxies(cfg.TrustedProxies); err != nil {
		return nil, err
	}
	sweepList, err := sweep.Load()
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	s.data = data.NewReader(s.store, sweepList)
	s.badges = badge.New(s.data, s.log)
	site := data.Site{Data: s.data, Known: s.known, Clients: &s.clients, Hub: s.hub}
	s.api = api.New(api.Config{Site: site, Scans: s.scans, Asks: &s.asks, Log: s.log})
	s.feeds = feeds.New(site, cfg.Webhooks)
	if s.reg == nil {
		s.reg = metrics.NewRegistry()
	}
	if s.version == "" {
		s.version = "dev"
	}
	s.httpReqs = s.reg.Counter("scanner_http_requests_total", "HTTP requests served, by route and status code.", "route", "code")
	s.httpTimes = s.reg.Histogram("scanner_http_request_duration_seconds", "Time to serve HTTP requests, by route.", nil, "route")

	if err := s.clientLimits(cfg); err != nil {
		return nil, err
	}

	if s.pages, err = pages.New(pages.Config{Site: site, Version: s.version, Scans: s.scans, Asks: &s.asks, Log: s.log}); err != nil {
		return nil, err
	}
	if s.openapi, err = loadOpenAPI(s.scans != nil, s.work.On(), s.asks.Desk != nil); err != nil {
		return nil, err
	}

	s.app = s.newApp(cfg)
	s.routes(s.app)
	s.parserErrors()
	s.unknownMethods()
	s.declareSeries()
	return s, nil
}

// clientLimits sets who is one client (an IPv6 address by its prefix) and
// the per-client limits: the API's rate and the test requests' per hour.
func (s *Server) clientLimits(cfg Config) error {
	switch s.clients.V6Bits = cfg.IPv6ClientPrefix; {
	case s.clients.V6Bits == 0:
		s.clients.V6Bits = config.DefaultIPv6ClientPrefix
	case s.clients.V6Bits < config.MinIPv6ClientPrefix || s.clients.V6Bits > 128:
		return fmt.Errorf("web: IPv6 client prefix /%d: want /%d to /128", s.clients.V6Bits, config.MinIPv6ClientPrefix)
	}
	rate, burst := cfg.APIRate, cfg.APIBurst
	if rate == 0 {
		rate = DefaultAPIRate
	}
	if burst <= 0 {
		burst = DefaultAPIBurst
	}
	if rate > 0 {
		s.limiter = httpx.NewRateLimiter(rate, burst, time.Now)
	}
	if perHour := cfg.RequestRate; perHour > 0 {
		s.asks.Limit = httpx.NewRateLimiter(float64(perHour)/3600, perHour, time.Now)
	}
	return nil
}

// newApp is the fiber app of the server's settings: its body limit (the
// work routes' larger one when they are on), timeouts and trusted proxies.
func (s *Server) newApp(cfg Config) *fiber.App {
	bodyLimit := cfg.BodyLimit
	if bodyLimit <= 0 {
		bodyLimit = DefaultBodyLimit
	}
	if s.work.On() {
		bodyLimit = max(bodyLimit, work.BodyLimit)
	}
	return fiber.New(fiber.Config{
		AppName:               "torchtpu-scanner",
		ErrorHandler:          s.handleError,
		BodyLimit:             bodyLimit,
		CaseSensitive:         true,
		DisableStartupMessage: true,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          60 * time.Second,
		IdleTimeout:           120 * time.Second,
		// X-Forwarded-Host and -Proto count only from TrustedProxies
		// (none: never); the client's IP is Server.clientIP's.
		EnableTrustedProxyCheck: true,
		TrustedProxies:          cfg.TrustedProxies,
		ReadBufferSize:          8192,
	})
}

// declareSeries exports the request counter of every GET route at 200 (and
// of unmatched paths at 404) from the start, at 0, so that rate() works
// before the first request.
func (s *Server) declareSeries() {
	seen := map[string]bool{}
	for _, r := range s.app.GetRoutes(true) {
		if r.Method != fiber.MethodGet || seen[r.Path] {
			continue
		}
		seen[r.Path] = true
		s.httpReqs.Declare([]string{r.Path, "200"})
		s.httpTimes.Declare([]string{r.Path})
	}
	s.httpReqs.Declare([]string{"unmatched", "404"})
}

// Listen serves HTTP on ln until Shutdown.
func (s *Server) Listen(ln net.Listener) error {
	if err := s.app.Listener(ln); err != nil {
		return fmt.Errorf("web: serve: %w", err)
	}
	return nil
}

// Shutdown stops accepting connections and waits for requests in flight,
// up to ctx's deadline. It is safe to call more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() {
		if err := s.app.ShutdownWithContext(ctx); err != nil {
			s.shutdownErr = fmt.Errorf("web: shutdown: %w", err)
		}
	})
	return s.shutdownErr
}

// SetKnownIssues replaces the known-issues table (serve reloads the file on
// SIGHUP). Every page, answer and ETag made with the old table is stale
// from then on: the data version the caches are keyed by moves forward.
func (s *Server) SetKnownIssues(ctx context.Context, t knownissues.Table) {
	s.known.Set(ctx, s.store, t)
}

// scanState is the scheduler's state, or the zero state without one.
func (s *Server) scanState() ScanState {
	if s.scans == nil {
		return ScanState{}
	}
	return s.scans.State()
}

// discard is a logger for tests that want silence.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))
