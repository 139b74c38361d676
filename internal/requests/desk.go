package requests

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// Store is what the desk reads and writes; *store.SQLite is the real one.
// Every "not found" is an error wrapping store.ErrNotFound.
type Store interface {
	AddRequest(ctx context.Context, modelID string, limit int) (store.TestRequest, bool, error)
	GetRequest(ctx context.Context, id int64) (store.TestRequest, error)
	OpenRequest(ctx context.Context, modelID string) (store.TestRequest, error)
	ClaimRequests(ctx context.Context, n int) ([]store.TestRequest, error)
	FinishRequest(ctx context.Context, id int64, f store.RequestFinish) error
	OpenRequests(ctx context.Context) (int, error)
	GetModel(ctx context.Context, id string, target compat.Target) (compat.Model, error)
	LatestResult(ctx context.Context, id string, target compat.Target) (compat.Result, error)
}

var _ Store = (*store.SQLite)(nil)

// Hub is the part of the Hub client the desk asks; *hub.Client is the
// real one.
type Hub interface {
	ModelInfo(ctx context.Context, id, revision string) (hub.ModelInfo, error)
}

// Defaults of Config.
const (
	DefaultRefusals       = 100_000
	DefaultRefusalTTL     = 24 * time.Hour
	DefaultHubConcurrency = 4
	// DefaultHubTimeout bounds one question to the Hub, its retries
	// included (the Hub client's backoff alone is 15 s when the Hub is
	// unreachable): the asker gets 503 hub_unavailable within it.
	DefaultHubTimeout = 4 * time.Second
)

// Config is what a Desk needs.
type Config struct {
	Store Store
	Hub   Hub
	Caps  Caps
	// QueueCap is the most open (queued or running) requests (required:
	// --request-queue).
	QueueCap int
	// Notify is told of each new request (the scan service's wake-up); nil: none.
	Notify  func()
	Metrics *metrics.Registry // nil: a private one
	Logger  *slog.Logger      // nil: slog.Default()
	// The zero values take the defaults above.
	Refusals       int           // refusals remembered
	RefusalTTL     time.Duration // how long one is
	HubConcurrency int           // Hub questions at once
	HubTimeout     time.Duration // one question, its retries included
	Now            func() time.Time
}

// Desk takes test requests. Create it with New; it is safe for
// concurrent use.
type Desk struct {
	cfg Config
	log *slog.Logger
	now func() time.Time
	sem chan struct{}

	mu       sync.Mutex
	refused  map[string]refusal // lower-cased id → why
	order    []string           // refused's keys, oldest first
	inFlight map[string]*call   // Hub questions being asked

	outcomes  *metrics.CounterVec
	hubChecks metrics.Counter
}

type refusal struct {
	r  *Refusal
	at time.Time
}

// call is one Hub question that others asking about the same id wait for.
type call struct {
	done chan struct{}
	info hub.ModelInfo
	err  error
}

// Outcomes of Ask, the metric's label.
var outcomes = []string{"queued", "existing", "refused", "already_tested", "queue_full", "hub_unavailable", "invalid"}

// New prepares a desk.
func New(cfg Config) (*Desk, error) {
	if cfg.Store == nil || cfg.Hub == nil || cfg.QueueCap <= 0 {
		return nil, errors.New("requests: Config.Store, Config.Hub and a positive Config.QueueCap are required")
	}
	if cfg.Refusals <= 0 {
		cfg.Refusals = DefaultRefusals
	}
	if cfg.RefusalTTL <= 0 {
		cfg.RefusalTTL = DefaultRefusalTTL
	}
	if cfg.HubConcurrency <= 0 {
		cfg.HubConcurrency = DefaultHubConcurrency
	}
	if cfg.HubTimeout <= 0 {
		cfg.HubTimeout = DefaultHubTimeout
	}
	d := &Desk{cfg: cfg, log: cfg.Logger, now: cfg.Now, sem: make(chan struct{}, cfg.HubConcurrency),
		refused: map[string]refusal{}, inFlight: map[string]*call{}}
	if d.log == nil {
		d.log = slog.Default()
	}
	if d.now == nil {
		d.now = time.Now
	}
	reg := cfg.Metrics
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	d.outcomes = reg.Counter("scanner_test_requests_total", "Test requests asked for, by outcome.", "outcome")
	d.outcomes.Declare(metrics.Each(outcomes...)...)
	d.hubChecks = reg.Counter("scanner_test_request_hub_checks_total", "Questions to the Hub about requested models.").With()
	return d, nil
}

// QueueCap is the most open requests.
func (d *Desk) QueueCap() int { return d.cfg.QueueCap }

// Ask queues a test of the model id, after checking it with the Hub. It
// returns the request and whether it is new: a model with an open request
// gets that one. The error is a *Refusal (matching ErrInvalid, ErrRefused,
// ErrAlreadyTested, ErrQueueFull or ErrHubUnavailable) or a failure of the
// database.
func (d *Desk) Ask(ctx context.Context, id string) (store.TestRequest, bool, error) {
	req, created, err := d.ask(ctx, strings.TrimSpace(id))
	outcome := "queued"
	switch {
	case err == nil && !created:
		outcome = "existing"
	case errors.Is(err, ErrInvalid):
		outcome = "invalid"
	case errors.Is(err, ErrRefused):
		outcome = "refused"
	case errors.Is(err, ErrAlreadyTested):
		outcome = "already_tested"
	case errors.Is(err, ErrQueueFull):
		outcome = "queue_full"
	case errors.Is(err, ErrHubUnavailable):
		outcome = "hub_unavailable"
	case err != nil:
		return req, false, err
	}
	d.outcomes.With(outcome).Inc()
	if created {
		d.log.Info("test requested", "model", req.ModelID, "request_id", req.ID)
		if d.cfg.Notify != nil {
			d.cfg.Notify()
		}
	}
	return req, created, err
}

func (d *Desk) ask(ctx context.Context, id string) (store.TestRequest, bool, error) {
	if err := compat.ValidateModelID(id); err != nil {
		return store.TestRequest{}, false, refuse(ErrInvalid, ReasonInvalidID, "%v", err)
	}
	// What the database knows answers without the Hub: an open request,
	// a result, a refusal remembered.
	if r, err := d.cfg.Store.OpenRequest(ctx, id); err == nil {
		return r, false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return r, false, err
	}
	if err := d.tested(ctx, id); err != nil {
		return store.TestRequest{}, false, err
	}
	if r := d.remembered(id); r != nil {
		return store.TestRequest{}, false, r
	}
	// A full queue is refused before the Hub is asked: a flood of
	// requests costs the Hub nothing once the queue is full.
	if n, err := d.cfg.Store.OpenRequests(ctx); err != nil {
		return store.TestRequest{}, false, err
	} else if n >= d.cfg.QueueCap {
		return store.TestRequest{}, false, queueFull(n)
	}
	info, err := d.modelInfo(ctx, id)
	if err != nil {
		if reason := hub.ReasonOf(err); reason != "" {
			r := hubRefusal(id, reason)
			d.remember(id, r)
			return store.TestRequest{}, false, r
		}
		d.log.Warn("test request: the Hub could not be asked", "model", id, "err", err)
		return store.TestRequest{}, false, refuse(ErrHubUnavailable, ReasonHubUnavailable,
			"the Hub could not be asked about %s just now; try again later", id)
	}
	if r := Admit(info, d.cfg.Caps); r != nil {
		d.remember(id, r)
		return store.TestRequest{}, false, r
	}
	if info.ID != id { // renamed on the Hub: the request is for its id now
		if err := d.tested(ctx, info.ID); err != nil {
			return store.TestRequest{}, false, err
		}
	}
	req, created, err := d.cfg.Store.AddRequest(ctx, info.ID, d.cfg.QueueCap)
	if errors.Is(err, store.ErrQueueFull) {
		return req, false, queueFull(d.cfg.QueueCap)
	}
	return req, created, err
}

func queueFull(n int) *Refusal {
	return refuse(ErrQueueFull, ReasonQueueFull, "the request queue is full (%d requests waiting): try again later", n)
}

// tested refuses a model that has a result already.
func (d *Desk) tested(ctx context.Context, id string) error {
	m, err := d.cfg.Store.GetModel(ctx, id, "")
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	case m.Result != nil:
		return refuse(ErrAlreadyTested, ReasonAlreadyTested,
			"%s already has a result (see its page); it is tested again when its revision or the runtime changes", m.ID)
	}
	return nil
}

// hubRefusal is the refusal of a model the Hub answered for (missing,
// private, gated, disabled).
func hubRefusal(id string, reason compat.Reason) *Refusal {
	switch reason {
	case compat.ReasonGated:
		return refuse(ErrRefused, ReasonGated, "%s is gated on the Hub (its terms must be accepted first): the scanner tests public, ungated models only", id)
	case compat.ReasonDisabled:
		return refuse(ErrRefused, ReasonDisabled, "%s is disabled on the Hub", id)
	}
	return refuse(ErrRefused, ReasonNotFound, "the Hub has no public model %s", id)
}

// modelInfo asks the Hub about id once, however many ask at the same
// time, and at most HubConcurrency questions at once.
func (d *Desk) modelInfo(ctx context.Context, id string) (hub.ModelInfo, error) {
	key := strings.ToLower(id)
	d.mu.Lock()
	if c, ok := d.inFlight[key]; ok {
		d.mu.Unlock()
		select {
		case <-c.done:
			return c.info, c.err
		case <-ctx.Done():
			return hub.ModelInfo{}, ctx.Err()
		}
	}
	c := &call{done: make(chan struct{})}
	d.inFlight[key] = c
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.inFlight, key)
		d.mu.Unlock()
		close(c.done)
	}()
	select {
	case d.sem <- struct{}{}:
		defer func() { <-d.sem }()
	case <-ctx.Done():
		c.err = ctx.Err()
		return c.info, c.err
	}
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.HubTimeout)
	defer cancel()
	d.hubChecks.Inc()
	c.info, c.err = d.cfg.Hub.ModelInfo(qctx, id, "main")
	return c.info, c.err
}

// remembered is the refusal of id remembered within its TTL, or nil.
func (d *Desk) remembered(id string) *Refusal {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.refused[strings.ToLower(id)]
	if !ok || d.now().Sub(e.at) > d.cfg.RefusalTTL {
		return nil
	}
	return e.r
}

// remember keeps a refusal, forgetting the oldest past Refusals.
func (d *Desk) remember(id string, r *Refusal) {
	key := strings.ToLower(id)
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.refused[key]; !ok {
		d.order = append(d.order, key)
	}
	d.refused[key] = refusal{r: r, at: d.now()}
	for len(d.order) > d.cfg.Refusals {
		delete(d.refused, d.order[0])
		d.order = d.order[1:]
	}
}

// Get is request id; an error wrapping store.ErrNotFound when unknown.
func (d *Desk) Get(ctx context.Context, id int64) (store.TestRequest, error) {
	return d.cfg.Store.GetRequest(ctx, id)
}

// Open is the open request for the model id; an error wrapping
// store.ErrNotFound when it has none.
func (d *Desk) Open(ctx context.Context, id string) (store.TestRequest, error) {
	return d.cfg.Store.OpenRequest(ctx, id)
}

// Claim marks up to n queued requests running for a scan and returns
// their ids and models, oldest first; none when the queue is empty.
func (d *Desk) Claim(ctx context.Context, n int) (ids []int64, models []string, err error) {
	reqs, err := d.cfg.Store.ClaimRequests(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range reqs {
		ids = append(ids, r.ID)
		models = append(models, r.ModelID)
	}
	return ids, models, nil
}

// Done records how the scan of claimed requests ended: a request whose
// model got a result in that scan is done with its status; when the scan
// could not run (again: the Hub or the fleet unreachable, the scanner
// stopping) the rest go back to the queue, in their places; any other
// failed, with why.
func (d *Desk) Done(ctx context.Context, ids []int64, models []string, sc store.Scan, runErr error, again bool) {
	for i, id := range ids {
		f := d.outcome(ctx, models[i], sc, runErr, again)
		if err := d.cfg.Store.FinishRequest(ctx, id, f); err != nil {
			d.log.Error("test request: recording its outcome", "request_id", id, "model", models[i], "err", err)
			continue
		}
		d.log.Info("test request finished", "request_id", id, "model", models[i], "state", f.State, "status", f.Status)
	}
}

func (d *Desk) outcome(ctx context.Context, model string, sc store.Scan, runErr error, again bool) store.RequestFinish {
	f := store.RequestFinish{ScanID: sc.ID}
	res, err := d.cfg.Store.LatestResult(ctx, model, "")
	if err == nil && res.ScanID != nil && *res.ScanID == sc.ID && sc.ID > 0 {
		f.State, f.Status = store.RequestDone, res.Status
		return f
	}
	if err == nil && res.ScanID != nil && !again && runErr == nil && sc.ID > 0 {
		// The scan ran and found the model unchanged: another scan tested
		// it since it was asked for (the operator's, which the requests
		// gave way to). That result answers the request.
		f.State, f.Status, f.ScanID = store.RequestDone, res.Status, *res.ScanID
		return f
	}
	if again {
		f.State, f.Message = store.RequestQueued, "not tested yet: "+cmp.Or(hub.Brief(runErr), "the scan did not run")+"; it keeps its place"
		return f
	}
	f.State = store.RequestFailed
	switch {
	case sc.Error != "":
		f.Message = "the scan could not test it: " + sc.Error
	case runErr != nil:
		f.Message = "the scan could not test it: " + hub.Brief(runErr)
	default:
		f.Message = "the scan recorded no result for it"
	}
	return f
}
