package web

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/show"
)

// This file is "ask for a model": POST /api/v1/requests and GET
// /api/v1/requests/{id}, the "Request a test" form (POST /requests) and a
// request's page (GET /requests/{id}). What may be tested, the queue and
// its cap are the desk's (internal/requests); the per-client limit and the
// form's protection against cross-site posts are the web server's.

// RequestDesk takes test requests; *requests.Desk is the real one. Every
// "not found" is an error wrapping store.ErrNotFound.
type RequestDesk interface {
	// Ask queues a test of the model id after checking it with the Hub,
	// or returns the model's open request (created false). Its error is a
	// refusal with a reason (requests.ReasonOf) or a database failure.
	Ask(ctx context.Context, id string) (store.TestRequest, bool, error)
	// Get is one request, with its place in the queue.
	Get(ctx context.Context, id int64) (store.TestRequest, error)
	// Open is the model's open (queued or running) request.
	Open(ctx context.Context, modelID string) (store.TestRequest, error)
}

// requestJSON is a test request as the API shows it.
type requestJSON struct {
	ID    int64  `json:"id"`
	Model string `json:"model"`
	// State is queued, running, done or failed.
	State string `json:"state"`
	// Position is the place in the queue while queued (1: next), else null.
	Position   *int       `json:"position"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	ScanID     *int64     `json:"scan_id"`
	// Status is the model's result once done, else null.
	Status   *compat.Status `json:"status"`
	Message  *string        `json:"message"`
	URL      string         `json:"url"`       // the request's page
	ModelURL string         `json:"model_url"` // the model's page (404 until it is tested)
}

func newRequestJSON(base string, r store.TestRequest) requestJSON {
	out := requestJSON{ID: r.ID, Model: r.ModelID, State: string(r.State), CreatedAt: r.CreatedAt, ScanID: r.ScanID,
		URL: base + testRequestPath(r.ID), ModelURL: base + show.ModelPath(r.ModelID)}
	if r.State == store.RequestQueued {
		out.Position = &r.Position
	}
	if !r.StartedAt.IsZero() {
		out.StartedAt = &r.StartedAt
	}
	if !r.FinishedAt.IsZero() {
		out.FinishedAt = &r.FinishedAt
	}
	if r.Status != "" {
		out.Status = &r.Status
	}
	if r.Message != "" {
		out.Message = &r.Message
	}
	return out
}

func testRequestPath(id int64) string { return "/requests/" + strconv.FormatInt(id, 10) }

// askAllowed applies the per-client limit of test requests.
func (s *Server) askAllowed(c *fiber.Ctx) error {
	if s.askLimit == nil {
		return nil
	}
	ok, wait := s.askLimit.Allow(s.clients.Key(c))
	if ok {
		return nil
	}
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	return fmt.Errorf("%w: at most %d test requests an hour from one client; try again in %s",
		httpx.ErrRateLimited, s.askLimit.Burst(), wait.Round(time.Minute))
}

// apiAsk serves POST /api/v1/requests {"model": ID}: 202 and the request
// (a new one, or the model's open one), or 4xx with the reason. The body
// must be JSON (application/json), which a cross-site form cannot send
// without a preflight that this API does not grant.
func (s *Server) apiAsk(c *fiber.Ctx) error {
	if ct := strings.ToLower(strings.TrimSpace(strings.Split(c.Get(fiber.HeaderContentType), ";")[0])); ct != fiber.MIMEApplicationJSON {
		return fiber.NewError(fiber.StatusUnsupportedMediaType, `send the request as JSON: Content-Type: application/json, {"model": "org/name"}`)
	}
	var body struct {
		Model string `json:"model"`
	}
	dec := json.NewDecoder(bytes.NewReader(c.Body()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return fmt.Errorf(`%w: want {"model": "org/name"}`, httpx.ErrBadRequest)
	}
	if err := s.askAllowed(c); err != nil {
		return err
	}
	req, _, err := s.requests.Ask(c.UserContext(), body.Model)
	if err != nil {
		return err
	}
	base := s.clients.Base(c)
	c.Set(fiber.HeaderLocation, base+"/api/v1/requests/"+strconv.FormatInt(req.ID, 10))
	return c.Status(fiber.StatusAccepted).JSON(newRequestJSON(base, req))
}

// apiRequest serves GET /api/v1/requests/{id}: its state and place.
func (s *Server) apiRequest(c *fiber.Ctx) error {
	req, err := s.request(c)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(newRequestJSON(s.clients.Base(c), req))
}

// request reads the :id parameter and the request it names.
func (s *Server) request(c *fiber.Ctx) (store.TestRequest, error) {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return store.TestRequest{}, fmt.Errorf("%w: no test request %s", httpx.ErrNotFound, httpx.QuoteShort(c.Params("id")))
	}
	req, err := s.requests.Get(c.UserContext(), id)
	if errors.Is(err, store.ErrNotFound) {
		return req, fmt.Errorf("%w: no test request %d", httpx.ErrNotFound, id)
	}
	return req, err
}

// requestView is the data of templates/request.html: a request's page,
// the answer to the form, or the page of a model the scanner does not
// know (404) with the form.
type requestView struct {
	layout
	ModelID string
	Request *store.TestRequest
	// Refusal is why the form's request was not queued.
	Refusal string
	// Unknown: the model is not in the table (yet).
	Unknown bool
	Form    *requestForm
}

// requestForm is the "Request a test" form of one model.
type requestForm struct {
	Model, Stamp, Token string
}

// form is the request form for model id (nil when requests are off).
func (s *Server) form(id string) *requestForm {
	if s.requests == nil {
		return nil
	}
	stamp, token := s.formToken.issue(id)
	return &requestForm{Model: id, Stamp: stamp, Token: token}
}

// requestPage serves GET /requests/{id}: a request's state and place in
// the queue, reloading itself while it is open.
func (s *Server) requestPage(c *fiber.Ctx) error {
	req, err := s.request(c)
	if err != nil {
		return err
	}
	v := requestView{ModelID: req.ModelID, Request: &req}
	v.Canonical = testRequestPath(req.ID)
	if req.State == store.RequestQueued || req.State == store.RequestRunning {
		v.Refresh = 30
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return s.render(c, "request", v)
}

// formAsk serves POST /requests, the "Request a test" form: it works
// without JavaScript and refuses posts from other sites (Sec-Fetch-Site,
// Origin, and a token the page signed for this model). A queued request
// redirects to its page; a refusal is a page saying why.
func (s *Server) formAsk(c *fiber.Ctx) error {
	model := strings.TrimSpace(c.FormValue("model"))
	if err := s.sameSite(c); err != nil {
		return s.formAnswer(c, model, err)
	}
	if !s.formToken.valid(model, c.FormValue("t"), c.FormValue("token")) {
		return s.formAnswer(c, model, fmt.Errorf("%w: this form has expired; reload the model's page and ask again", httpx.ErrForbidden))
	}
	if err := s.askAllowed(c); err != nil {
		return s.formAnswer(c, model, err)
	}
	req, _, err := s.requests.Ask(c.UserContext(), model)
	if err != nil {
		return s.formAnswer(c, model, err)
	}
	return c.Redirect(testRequestPath(req.ID), fiber.StatusSeeOther)
}

// formAnswer is the page of a form post that queued nothing, with the
// status its error maps to (a server error goes to the error handler).
func (s *Server) formAnswer(c *fiber.Ctx, model string, err error) error {
	status := httpx.Status(err)
	if status == fiber.StatusInternalServerError {
		return err
	}
	v := requestView{ModelID: model, Refusal: httpx.PublicMessage(err, status)}
	if compat.ValidateModelID(model) != nil {
		v.ModelID = ""
	}
	c.Status(status)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return s.render(c, "request", v)
}

// sameSite refuses a post that a browser says came from another site: by
// Sec-Fetch-Site (cross-site, same-site), or by an Origin that is not this
// site's. Clients that send neither (curl) pass; the form's token still
// has to be right.
func (s *Server) sameSite(c *fiber.Ctx) error {
	switch site := c.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return fmt.Errorf("%w: a test request must come from this site's own form (Sec-Fetch-Site: %s)", httpx.ErrForbidden, httpx.QuoteShort(site))
	}
	origin := c.Get(fiber.HeaderOrigin)
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err == nil && u.Host != "" && (strings.EqualFold(u.Host, c.Hostname()) || strings.EqualFold(u.Scheme+"://"+u.Host, s.clients.Base(c))) {
		return nil
	}
	return fmt.Errorf("%w: a test request must come from this site's own form (Origin: %s)", httpx.ErrForbidden, httpx.QuoteShort(origin))
}

// formTokens sign the request form per model and hour with a key made at
// start: a token is good for a day, for its model only, on this process.
type formTokens struct {
	key []byte
	now func() time.Time
}

// formTokenLife is how long a form stays good.
const formTokenLife = 24 * time.Hour

func newFormTokens(now func() time.Time) formTokens {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24+)
	return formTokens{key: key, now: now}
}

func (f formTokens) sign(model, stamp string) string {
	m := hmac.New(sha256.New, f.key)
	m.Write([]byte("request\x00" + strings.ToLower(model) + "\x00" + stamp))
	return hex.EncodeToString(m.Sum(nil))
}

// issue returns the stamp and token of a form for model, now.
func (f formTokens) issue(model string) (stamp, token string) {
	stamp = strconv.FormatInt(f.now().Unix(), 10)
	return stamp, f.sign(model, stamp)
}

// valid reports whether token is this process's for model at stamp, and
// stamp within formTokenLife.
func (f formTokens) valid(model, stamp, token string) bool {
	sec, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil || len(token) != 64 {
		return false
	}
	if age := f.now().Sub(time.Unix(sec, 0)); age < -time.Minute || age > formTokenLife {
		return false
	}
	return hmac.Equal([]byte(token), []byte(f.sign(model, stamp)))
}

// requestFor is the model's open request, for its page; nil when it has
// none or requests are off.
func (s *Server) requestFor(ctx context.Context, id string) (*store.TestRequest, error) {
	if s.requests == nil {
		return nil, nil
	}
	r, err := s.requests.Open(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("web: open request: %w", err)
	}
	return &r, nil
}

// unknownModel is the 404 page of a model the scanner does not know: with
// requests on, it shows the model's open request or the form.
func (s *Server) unknownModel(c *fiber.Ctx, id string) error {
	open, err := s.requestFor(c.UserContext(), id)
	if err != nil {
		return err
	}
	v := requestView{ModelID: id, Unknown: true, Request: open}
	if open == nil {
		v.Form = s.form(id)
	}
	c.Status(fiber.StatusNotFound)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return s.render(c, "request", v)
}
