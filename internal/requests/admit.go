// Package requests is the scanner's front desk for tests anyone may ask
// for (POST /api/v1/requests, the "Request a test" form): it checks a
// model with the Hub before it joins the queue (Admit decides, from the
// Hub's answer, whether it may), keeps one open request per model and the
// queue within its cap, asks the Hub at most once per id (refusals are
// remembered), and hands the queue to the scan service, which runs it when
// it is idle (Claim, Done).
//
// The per-client limit is the web server's (it knows the client); the
// rules of what may be tested are probe.Preflight's and the Hub client's
// size caps, applied here to the Hub's model info.
package requests

import (
	"errors"
	"fmt"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/preflight"
)

// Reasons a request is refused, the API's "reason".
const (
	ReasonInvalidID      = "invalid_id"
	ReasonNotFound       = "not_found" // missing on the Hub, or private and out of the scanner's reach
	ReasonPrivate        = "private"
	ReasonGated          = "gated"
	ReasonDisabled       = "disabled"
	ReasonRemoteCode     = "remote_code"
	ReasonLibrary        = "unsupported_library"
	ReasonTask           = "unsupported_task"
	ReasonTooLarge       = "too_large"
	ReasonAlreadyTested  = "already_tested"
	ReasonQueueFull      = "queue_full"
	ReasonHubUnavailable = "hub_unavailable"
)

// Sentinel errors of a refused request: a *Refusal matches one of them
// (errors.Is), which the web server maps to an HTTP status.
var (
	ErrInvalid        = errors.New("not a Hub model id")                         // 400
	ErrRefused        = errors.New("the model cannot be tested")                 // 422
	ErrAlreadyTested  = errors.New("the model already has a result")             // 409
	ErrQueueFull      = errors.New("the request queue is full")                  // 429
	ErrHubUnavailable = errors.New("the Hub could not be asked about the model") // 503
)

// Refusal is why a request was not queued: a reason code, a sentence for
// people, and the sentinel error it matches.
type Refusal struct {
	Reason  string
	Message string
	kind    error
}

func (r *Refusal) Error() string { return r.Message }
func (r *Refusal) Unwrap() error { return r.kind }

// ReasonOf is the reason code of a refusal anywhere in err's chain, "" if none.
func ReasonOf(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}

func refuse(kind error, reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...), kind: kind}
}

// Caps are the size caps of what the scanner downloads (the Hub client's:
// hub.DefaultMaxFileBytes and hub.DefaultMaxModelBytes); a file or model
// of exactly its cap is within it, and a cap of 0 is none.
type Caps struct {
	MaxFileBytes  int64
	MaxModelBytes int64
}

// Admit decides whether a model the Hub described may be queued for a
// test: nil when it may, else the refusal. The rules, in order: public
// (not private), not disabled, not gated; preflight's verdict on the Hub's
// description (no custom code, a transformers model, a task the harness
// tests: probe.Preflight); and safetensors weights within the caps, each
// file and all of them.
func Admit(info hub.ModelInfo, caps Caps) *Refusal {
	switch {
	case info.Private:
		return refuse(ErrRefused, ReasonPrivate, "%s is private on the Hub: the scanner tests public models only", info.ID)
	case info.Disabled:
		return refuse(ErrRefused, ReasonDisabled, "%s is disabled on the Hub", info.ID)
	case info.Gated:
		return refuse(ErrRefused, ReasonGated, "%s is gated on the Hub (its terms must be accepted first): the scanner tests public, ungated models only", info.ID)
	}
	if res := preflight.Preflight(preflight.Listed(info, false)); res != nil {
		reason := string(compat.ReasonUnsupportedTask)
		if res.Reason != nil {
			reason = string(*res.Reason)
		}
		msg := "the harness cannot test it"
		if res.Message != nil {
			msg = *res.Message
		}
		return refuse(ErrRefused, reason, "%s: %s", info.ID, msg)
	}
	files, total := hub.WeightFiles(info.Siblings)
	for _, s := range info.Siblings {
		for _, f := range files {
			if s.Name == f && hub.IsWeightFile(f) && caps.MaxFileBytes > 0 && s.Size > caps.MaxFileBytes {
				return refuse(ErrRefused, ReasonTooLarge, "%s: its weight file %s is %s, over the scanner's %s cap per file",
					info.ID, f, gib(s.Size), gib(caps.MaxFileBytes))
			}
		}
	}
	if caps.MaxModelBytes > 0 && total > caps.MaxModelBytes {
		return refuse(ErrRefused, ReasonTooLarge, "%s: its weights are %s, over the scanner's %s cap per model",
			info.ID, gib(total), gib(caps.MaxModelBytes))
	}
	return nil
}

func gib(n int64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }
