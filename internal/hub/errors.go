package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// Sentinel errors. An *Error matches them with errors.Is, so callers can
// write errors.Is(err, hub.ErrGated) whatever wrapping the error went through.
var (
	// ErrGated: the repo is gated and the configured token (if any) has no
	// access (X-Error-Code: GatedRepo).
	ErrGated = errors.New("hub: gated repo")
	// ErrNotFound: the repo, revision or file does not exist, or is private
	// (RepoNotFound, RevisionNotFound, EntryNotFound, or an anonymous 401 on
	// a repo URL, which the Hub sends for missing and private repos alike).
	ErrNotFound = errors.New("hub: not found")
	// ErrDisabled: the Hub disabled access to the repo.
	ErrDisabled = errors.New("hub: repo disabled")
	// ErrRateLimited: HTTP 429, still there after the retries.
	ErrRateLimited = errors.New("hub: rate limited")
	// ErrUnauthorized: 401 or 403 that says nothing about the model: an
	// invalid token, a token without the right scope.
	ErrUnauthorized = errors.New("hub: unauthorized")

	// ErrTooLarge: a file or a model is over Options.MaxFileBytes or
	// Options.MaxModelBytes. Nothing was written to the snapshot.
	ErrTooLarge = errors.New("hub: over the size limit")
	// ErrIntegrity: a downloaded file did not match the hash or size the Hub
	// announced. The partial blob was deleted; nothing was linked.
	ErrIntegrity = errors.New("hub: integrity check failed")
	// ErrEndlessListing: a listing kept linking to more pages without
	// bringing the models asked for (empty or repeated pages, or far more
	// pages than the limit needs).
	ErrEndlessListing = errors.New("hub: the model listing does not end")
	// ErrNotAllowed: Download was asked for a file outside AllowedFile.
	ErrNotAllowed = errors.New("hub: file not on the download allowlist")
)

// X-Error-Code values the Hub sends (see huggingface_hub hf_raise_for_status).
const (
	CodeGatedRepo        = "GatedRepo"
	CodeRepoNotFound     = "RepoNotFound"
	CodeEntryNotFound    = "EntryNotFound"
	CodeRevisionNotFound = "RevisionNotFound"
)

// disabledMessage is the X-Error-Message of a disabled repo, matched exactly
// by huggingface_hub (DisabledRepoError).
const disabledMessage = "Access to this resource is disabled."

// invalidCredentials is the message of a 401 caused by the token itself;
// huggingface_hub does not turn it into RepositoryNotFoundError.
const invalidCredentials = "Invalid credentials in Authorization header"

// Error is an HTTP error answer from the Hub (or its CDN).
type Error struct {
	Status    int    // HTTP status
	Code      string // X-Error-Code header, e.g. "GatedRepo"; "" when absent
	Message   string // X-Error-Message header, else the body's "error"; never carries the token
	URL       string // the request URL, never with credentials (a CDN's signed query is dropped)
	Method    string // HTTP method
	RequestID string // X-Request-Id (or X-Amzn-Trace-Id), for reports to the Hub

	repoURL bool // the URL names one repo (/api/models/{id}..., /{id}/resolve/...)
}

// Error returns e.g. `HEAD https://huggingface.co/x/resolve/…/config.json:
// 401 Unauthorized (GatedRepo): Access to model x is restricted…`; the
// package's functions wrap it with their own "hub: …" prefix.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Method != "" {
		b.WriteString(e.Method)
		b.WriteByte(' ')
	}
	b.WriteString(e.URL)
	fmt.Fprintf(&b, ": %d %s", e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request id %s]", e.RequestID)
	}
	return b.String()
}

func (e *Error) disabled() bool {
	if strings.EqualFold(strings.TrimSpace(e.Message), disabledMessage) {
		return true
	}
	m := strings.ToLower(e.Message)
	return (e.Status == http.StatusForbidden || e.Status == http.StatusUnavailableForLegalReasons) &&
		(strings.Contains(m, "disabled") || strings.Contains(m, "legal reasons"))
}

// Reason maps the error to the contract's skip reason, in the order
// huggingface_hub's hf_raise_for_status uses: X-Error-Code first, then the
// disabled message, then the status. It returns "" for errors that say
// nothing about the model (rate limits, server errors, a bad token).
func (e *Error) Reason() compat.Reason {
	switch e.Code {
	case CodeGatedRepo:
		return compat.ReasonGated
	case CodeRevisionNotFound, CodeEntryNotFound:
		return compat.ReasonNotFound
	}
	if e.disabled() {
		return compat.ReasonDisabled
	}
	if e.Code == CodeRepoNotFound {
		return compat.ReasonNotFound
	}
	if e.repoURL {
		switch {
		case e.Status == http.StatusUnauthorized && !strings.Contains(e.Message, invalidCredentials):
			// The Hub answers 401 for missing, private, and (anonymous)
			// disabled repos alike.
			return compat.ReasonNotFound
		case e.Status == http.StatusNotFound:
			return compat.ReasonNotFound
		}
	}
	return ""
}

// Is lets errors.Is match the package's sentinel errors.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrGated:
		return e.Reason() == compat.ReasonGated
	case ErrNotFound:
		return e.Reason() == compat.ReasonNotFound
	case ErrDisabled:
		return e.Reason() == compat.ReasonDisabled
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests
	case ErrUnauthorized:
		return (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden) && e.Reason() == ""
	}
	return false
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// newError builds an *Error from an answer with status >= 400 and closes its
// body. redact removes the token from anything the server echoed.
func (c *Client) newError(method string, u *url.URL, resp *http.Response) *Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	e := &Error{
		Status:    resp.StatusCode,
		Code:      strings.TrimSpace(resp.Header.Get("X-Error-Code")),
		Method:    method,
		URL:       c.safeURL(u),
		RequestID: firstHeader(resp.Header, "X-Request-Id", "X-Amzn-Trace-Id", "X-Amz-Cf-Id"),
		repoURL:   isRepoPath(u.Path),
	}
	e.Message = c.redact(serverMessage(resp.Header, body))
	e.RequestID = c.redact(e.RequestID)
	return e
}

// serverMessage extracts the Hub's explanation like huggingface_hub's
// _format: the X-Error-Message header, else the JSON body's "error" (a
// string or a list), "error_description" or "errors[].message", else a short
// non-HTML text body.
func serverMessage(h http.Header, body []byte) string {
	if m := strings.TrimSpace(h.Get("X-Error-Message")); m != "" {
		return m
	}
	var data struct {
		Error            json.RawMessage `json:"error"`
		ErrorDescription string          `json:"error_description"`
		Errors           []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &data) == nil {
		var msgs []string
		var s string
		var list []string
		switch {
		case json.Unmarshal(data.Error, &s) == nil && s != "":
			msgs = append(msgs, s)
		case json.Unmarshal(data.Error, &list) == nil:
			msgs = append(msgs, list...)
		}
		if data.ErrorDescription != "" {
			msgs = append(msgs, data.ErrorDescription)
		}
		for _, e := range data.Errors {
			if e.Message != "" {
				msgs = append(msgs, e.Message)
			}
		}
		return truncate(strings.Join(msgs, "; "), 500)
	}
	if strings.Contains(strings.ToLower(h.Get("Content-Type")), "html") {
		return ""
	}
	return truncate(strings.TrimSpace(string(body)), 500)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func firstHeader(h http.Header, names ...string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// isRepoPath reports whether an endpoint path names one model repo, the
// condition under which huggingface_hub reads a bare 401 as "repository not
// found" (REPO_API_REGEX): /api/models/{id}…, /{id}/resolve/…, or the
// Hub's same-origin redirect target for small files,
// /api/resolve-cache/models/{id}/….
func isRepoPath(p string) bool {
	for _, prefix := range []string{"/api/models/", "/api/resolve-cache/models/"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			return rest != ""
		}
	}
	return strings.Contains(p, "/resolve/")
}

// queryInURL matches the query string of an http(s) URL inside an error
// message.
var queryInURL = regexp.MustCompile(`(https?://[^\s?"']+)\?[^\s"']*[^\s"':,.;)]`)

// Brief is err's message with every URL's query string shortened to "?…":
// a listing URL carries a dozen expand parameters, which belong in the log
// but drown the cause on a status banner.
func Brief(err error) string {
	if err == nil {
		return ""
	}
	return queryInURL.ReplaceAllString(err.Error(), "$1?…")
}
