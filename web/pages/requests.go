package pages

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
func (h *Handler) form(id string) *requestForm {
	if h.asks.Desk == nil {
		return nil
	}
	stamp, token := h.formToken.issue(id)
	return &requestForm{Model: id, Stamp: stamp, Token: token}
}

// Request serves GET /requests/{id}: a request's state and place in
// the queue, reloading itself while it is open.
func (h *Handler) Request(c *fiber.Ctx) error {
	req, err := h.asks.Request(c)
	if err != nil {
		return err
	}
	v := requestView{ModelID: req.ModelID, Request: &req}
	v.Canonical = show.RequestPath(req.ID)
	if req.State == store.RequestQueued || req.State == store.RequestRunning {
		v.Refresh = 30
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return h.render(c, "request", v)
}

// FormAsk serves POST /requests, the "Request a test" form: it works
// without JavaScript and refuses posts from other sites (Sec-Fetch-Site,
// Origin, and a token the page signed for this model). A queued request
// redirects to its page; a refusal is a page saying why.
func (h *Handler) FormAsk(c *fiber.Ctx) error {
	model := strings.TrimSpace(c.FormValue("model"))
	if err := h.sameSite(c); err != nil {
		return h.formAnswer(c, model, err)
	}
	if !h.formToken.valid(model, c.FormValue("t"), c.FormValue("token")) {
		return h.formAnswer(c, model, fmt.Errorf("%w: this form has expired; reload the model's page and ask again", httpx.ErrForbidden))
	}
	if err := h.asks.Allowed(c); err != nil {
		return h.formAnswer(c, model, err)
	}
	req, _, err := h.asks.Desk.Ask(c.UserContext(), model)
	if err != nil {
		return h.formAnswer(c, model, err)
	}
	return c.Redirect(show.RequestPath(req.ID), fiber.StatusSeeOther)
}

// formAnswer is the page of a form post that queued nothing, with the
// status its error maps to (a server error goes to the error handler).
func (h *Handler) formAnswer(c *fiber.Ctx, model string, err error) error {
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
	return h.render(c, "request", v)
}

// sameSite refuses a post that a browser says came from another site: by
// Sec-Fetch-Site (cross-site, same-site), or by an Origin that is not this
// site's. Clients that send neither (curl) pass; the form's token still
// has to be right.
func (h *Handler) sameSite(c *fiber.Ctx) error {
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
	if err == nil && u.Host != "" && (strings.EqualFold(u.Host, c.Hostname()) || strings.EqualFold(u.Scheme+"://"+u.Host, h.Clients.Base(c))) {
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
func (h *Handler) requestFor(ctx context.Context, id string) (*store.TestRequest, error) {
	if h.asks.Desk == nil {
		return nil, nil
	}
	r, err := h.asks.Desk.Open(ctx, id)
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
func (h *Handler) unknownModel(c *fiber.Ctx, id string) error {
	open, err := h.requestFor(c.UserContext(), id)
	if err != nil {
		return err
	}
	v := requestView{ModelID: id, Unknown: true, Request: open}
	if open == nil {
		v.Form = h.form(id)
	}
	c.Status(fiber.StatusNotFound)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return h.render(c, "request", v)
}
