package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
)

// How the server answered, beyond success. Anything else (a refused
// connection, a 5xx, a garbled answer) is worth retrying.
var (
	// ErrConflict (409): the lease is not current; the work is lost.
	ErrConflict = errors.New("lease no longer current")
	// ErrRejected (400): the server refuses this request as it is;
	// sending it again cannot help.
	ErrRejected = errors.New("request rejected")
	// ErrUnauthorized (401, 403): the worker token is missing or wrong;
	// errNoToken and errWrongToken say which.
	ErrUnauthorized = errors.New("worker token refused")
	errNoToken      = fmt.Errorf("%w: none was sent", ErrUnauthorized)
	errWrongToken   = fmt.Errorf("%w: it is not the server's", ErrUnauthorized)
	// ErrDisabled (404): the server has no work routes (no
	// SCANNER_WORKER_TOKEN, or --dispatch local).
	ErrDisabled = errors.New("server has no work routes")
)

// client speaks the fleet protocol to one server.
type client struct {
	base  string // the server's URL, without a trailing slash
	token string
	http  *http.Client
}

func newClient(server, token string, hc *http.Client) *client {
	if hc == nil {
		hc = &http.Client{}
	}
	return &client{base: strings.TrimRight(server, "/"), token: token, http: hc}
}

func (c *client) register(ctx context.Context, w fleet.Worker) (fleet.RegisterResponse, error) {
	var out fleet.RegisterResponse
	err := c.post(ctx, fleet.PathRegister, w, &out, 30*time.Second)
	return out, err
}

// lease long-polls for up to max jobs.
func (c *client) lease(ctx context.Context, w fleet.Worker, max int, wait time.Duration) ([]fleet.Lease, error) {
	var out fleet.LeaseResponse
	req := fleet.LeaseRequest{Worker: w, Max: max, WaitS: wait.Seconds()}
	// The server holds the request up to wait: allow for that, and then some.
	err := c.post(ctx, fleet.PathLease, req, &out, wait+30*time.Second)
	return out.Leases, err
}

func (c *client) heartbeat(ctx context.Context, workerID string, leases []string) (fleet.HeartbeatResponse, error) {
	var out fleet.HeartbeatResponse
	err := c.post(ctx, fleet.PathHeartbeat, fleet.HeartbeatRequest{WorkerID: workerID, Leases: leases}, &out, 30*time.Second)
	return out, err
}

func (c *client) result(ctx context.Context, req fleet.ResultRequest) error {
	return c.post(ctx, fleet.PathResult, req, nil, 60*time.Second)
}

func (c *client) release(ctx context.Context, req fleet.ReleaseRequest) error {
	return c.post(ctx, fleet.PathRelease, req, nil, fleet.ReleaseTimeout)
}

func (c *client) leave(ctx context.Context, workerID string) error {
	return c.post(ctx, fleet.PathLeave, fleet.LeaveRequest{WorkerID: workerID}, nil, fleet.ReleaseTimeout)
}

// dispatchMode asks the server's public fleet listing how it dispatches
// ("local" or "workers"); "" when the answer is not a scanner's.
func (c *client) dispatchMode(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+fleet.PathWorkers+"?limit=1", nil)
	if err != nil {
		return ""
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var body struct {
		Dispatch string `json:"dispatch"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, fleet.MaxBodyBytes)).Decode(&body) != nil {
		return ""
	}
	return body.Dispatch
}

// post sends body as JSON and decodes a 200 answer into out (when not nil).
func (c *client) post(ctx context.Context, path string, body, out any, timeout time.Duration) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("worker: %s: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("worker: %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("worker: %s: %w", path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, fleet.MaxBodyBytes))
	if err != nil {
		return fmt.Errorf("worker: %s: read answer: %w", path, err)
	}
	if err := statusError(resp.StatusCode); err != nil {
		return fmt.Errorf("worker: %s: %w (%d: %s)", path, err, resp.StatusCode, brief(answer))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("worker: %s: answer: %w", path, err)
	}
	return nil
}

// statusError maps a status to the protocol's errors; nil for success.
func statusError(code int) error {
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusConflict:
		return ErrConflict
	case code == http.StatusUnauthorized:
		return errNoToken
	case code == http.StatusForbidden:
		return errWrongToken
	case code == http.StatusNotFound:
		return ErrDisabled
	case code == http.StatusBadRequest || code == http.StatusRequestEntityTooLarge:
		return ErrRejected
	}
	return fmt.Errorf("server answered %d", code)
}

func brief(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
