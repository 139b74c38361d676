// Package check is the client side of `scanner check MODEL --server URL`: a
// CI gate that asks a running scanner's JSON API whether a model passes.
package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// Exit codes of `scanner check`, as the contract defines them.
const (
	ExitPass        = 0 // the model passes on the target
	ExitNotPassing  = 1 // the current result is not pass, or the newest change is a regression
	ExitUntested    = 2 // unknown model, no result on the target, or no verdict (scanner error)
	ExitUnreachable = 3 // network error, 5xx, or an answer that is not the API's
)

// maxBody bounds how much of the server's answer is read.
const maxBody = 8 << 20

// modelDetail is the part of GET /api/v1/models/{id} that the check reads.
type modelDetail struct {
	compat.Model
	Events  []compat.Event  `json:"events"`
	History []compat.Result `json:"history"` // newest first
}

// Check asks the scanner at serverURL about modelID on target and returns
// the process exit code and a one-line reason, for example
//
//	Qwen/Qwen3-0.6B: pass on tpu (full, 2026-11-30, torch_tpu 0.2.0)
//
// target "" or auto means the model's most recent result on any target.
// With since (a runtime key, see compat.RuntimeRef.Key) it is also exit 1
// when the model regressed since that runtime (see sinceVerdict); "" asks
// nothing of the past. mode "train" gates on the train verdict of the
// result's matrix instead of the model's status (trainVerdict), "serve" on
// the model's serving cell (serveVerdict); "" or "inference" on the status. A nil httpClient means a client with a 30 s
// timeout. The context bounds the whole request.
func Check(ctx context.Context, serverURL, modelID string, target compat.Target, since, mode string, httpClient *http.Client) (code int, line string) {
	target, err := compat.ParseTargetFilter(string(target))
	if err != nil {
		return ExitUnreachable, fmt.Sprintf("%s: %v", modelID, err)
	}
	var ref *compat.RuntimeRef
	if since != "" {
		r, err := sinceTarget(since, &target)
		if err != nil {
			return ExitUntested, fmt.Sprintf("%s: %v", modelID, err)
		}
		ref = &r
	}
	d, code, line := fetch(ctx, serverURL, modelID, target, httpClient)
	if code >= 0 {
		return code, line
	}
	switch mode {
	case compat.ModeTrain:
		return trainVerdict(d, target)
	case compat.ModeServe:
		return serveVerdict(d)
	}
	code, line = verdict(d, target)
	if ref != nil {
		code, line = sinceVerdict(d, *ref, code, line)
	}
	return code, line
}

// fetch reads the model's detail; code is -1 when it did, else the exit
// code and line to give.
func fetch(ctx context.Context, serverURL, modelID string, target compat.Target, httpClient *http.Client) (d modelDetail, code int, line string) {
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 30 * time.Second}
	}
	u, err := detailURL(serverURL, modelID, target)
	if err != nil {
		return d, ExitUnreachable, fmt.Sprintf("%s: %v", modelID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return d, ExitUnreachable, fmt.Sprintf("%s: %v", modelID, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return d, ExitUnreachable, fmt.Sprintf("%s: server unreachable: %v", modelID, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return d, ExitUnreachable, fmt.Sprintf("%s: reading the server's answer: %v", modelID, err)
	}

	switch {
	case resp.StatusCode == http.StatusNotFound:
		return d, ExitUntested, fmt.Sprintf("%s: unknown to the scanner at %s", modelID, serverURL)
	case resp.StatusCode != http.StatusOK:
		return d, ExitUnreachable, fmt.Sprintf("%s: server answered %s%s", modelID, resp.Status, apiError(body))
	}
	if err := json.Unmarshal(body, &d); err != nil || d.ID == "" {
		if err == nil {
			err = errors.New("no model id")
		}
		return d, ExitUnreachable, fmt.Sprintf("%s: the server's answer is not a scanner model: %v", modelID, err)
	}
	return d, -1, ""
}

// detailURL builds {server}/api/v1/models/{id}?target=….
func detailURL(serverURL, modelID string, target compat.Target) (string, error) {
	base, err := url.Parse(strings.TrimRight(serverURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return "", fmt.Errorf("invalid --server URL %q (want http://host:port)", serverURL)
	}
	if modelID == "" || strings.Contains(modelID, "..") {
		return "", fmt.Errorf("invalid model id %q", modelID)
	}
	parts := strings.Split(modelID, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	s := base.String() + "/api/v1/models/" + strings.Join(parts, "/")
	if target != "" {
		s += "?target=" + url.QueryEscape(string(target))
	}
	return s, nil
}

// apiError extracts {"error": "..."} from an API error body, as ": ...".
func apiError(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return ": " + oneLine(e.Error, 200)
	}
	return ""
}

// verdict maps a model's current result to an exit code and a line.
func verdict(d modelDetail, target compat.Target) (int, string) {
	r := d.Result
	if r == nil || r.Status == compat.StatusUntested {
		return untested(d.ID, target)
	}
	line := fmt.Sprintf("%s: %s on %s%s (%s)", d.ID, r.Status, r.Target, detail(*r), facts(*r))

	// The newest status change on this target tells regressions apart (a
	// change to or from the scanner's own error is none).
	var newest *compat.Event
	for i := range d.Events {
		if d.Events[i].Target == r.Target && d.Events[i].AboutVerdicts() && !d.Events[i].Train() && !d.Events[i].Serving() {
			newest = &d.Events[i]
			break
		}
	}
	switch r.Status {
	case compat.StatusPass:
		if newest != nil && newest.Kind == compat.EventRegression {
			return ExitNotPassing, line + " — but the newest change is a regression"
		}
		return ExitPass, line
	case compat.StatusError:
		return ExitUntested, line + " — no verdict: the scanner's own error, not the model's"
	}
	if newest != nil && newest.Kind == compat.EventRegression {
		line += fmt.Sprintf(" — regression since %s (was %s)", newest.At.UTC().Format(time.DateOnly), newest.FromStatus)
	}
	return ExitNotPassing, line
}

// trainVerdict maps the train verdict of a model's current result to an
// exit code and a line, as verdict does the status: pass is 0; any other
// train verdict (failure, out of memory, timeout, crash, skipped) is 1; no
// train verdict (untested, a result from before the matrix or one that
// stopped before it) and the scanner's own error are 2.
func trainVerdict(d modelDetail, target compat.Target) (int, string) {
	r := d.Result
	if r == nil || r.Status == compat.StatusUntested {
		return untested(d.ID, target)
	}
	tr := r.Train()
	if tr == nil {
		return ExitUntested, fmt.Sprintf("%s: no train verdict on %s (inference %s; the result predates the train step "+
			"or stopped before it) (%s)", d.ID, r.Target, r.Status, facts(*r))
	}
	line := fmt.Sprintf("%s: train %s on %s%s (%s)", d.ID, tr.Status, r.Target, trainDetail(*tr), facts(*r))
	switch tr.Status {
	case compat.StatusPass:
		return ExitPass, line
	case compat.StatusError:
		return ExitUntested, line + " — no verdict: the scanner's own error, not the model's"
	}
	return ExitNotPassing, line // as the inference rule: a skipped train step does not pass either
}

// trainDetail is " at backward: <signature>" for a train step that did not
// pass, the reason of a skipped one, the losses of a pass.
func trainDetail(v compat.Verdict) string {
	switch {
	case v.Status == compat.StatusPass:
		var s []string
		if l := v.Metrics.Losses; len(l) > 0 && l[0] != nil && l[len(l)-1] != nil {
			s = append(s, fmt.Sprintf("loss %.4g → %.4g", *l[0], *l[len(l)-1]))
		}
		if v.Metrics.StepMS != nil {
			s = append(s, fmt.Sprintf("step %.1f ms", *v.Metrics.StepMS))
		}
		if len(s) == 0 {
			return ""
		}
		return ": " + strings.Join(s, ", ")
	case v.Status == compat.StatusSkipped:
		if v.Message != nil {
			return ": " + oneLine(*v.Message, 120)
		}
		return ""
	}
	s := ""
	if v.Stage != nil {
		s = " at " + *v.Stage
	}
	switch {
	case v.Signature != nil && *v.Signature != "":
		s += ": " + oneLine(*v.Signature, 120)
	case v.Message != nil:
		s += ": " + oneLine(*v.Message, 120)
	}
	return s
}

// untested is the answer for a model without a result on target.
func untested(id string, target compat.Target) (int, string) {
	on := ""
	if target != "" {
		on = " on " + string(target)
	}
	return ExitUntested, fmt.Sprintf("%s: untested%s", id, on)
}

// detail says where and why a result did not pass: " at forward: unsupported_op aten::foo".
func detail(r compat.Result) string {
	var s string
	if r.Status != compat.StatusPass && r.Stage != nil {
		s = " at " + string(*r.Stage)
	}
	var why []string
	if r.FailureClass != nil {
		why = append(why, string(*r.FailureClass))
	}
	if r.Op != nil && *r.Op != "" {
		why = append(why, *r.Op)
	}
	if r.Reason != nil {
		why = append(why, string(*r.Reason))
	}
	if len(why) == 0 && r.Status != compat.StatusPass && r.Message != nil {
		why = append(why, oneLine(*r.Message, 120))
	}
	if len(why) > 0 && r.Status != compat.StatusPass {
		s += ": " + strings.Join(why, " ")
	}
	return s
}

// facts is "full, 2026-11-30, torch_tpu 0.2.0".
func facts(r compat.Result) string {
	var f []string
	if r.Mode != nil {
		f = append(f, string(*r.Mode))
	}
	if !r.TestedAt.IsZero() {
		f = append(f, r.TestedAt.UTC().Format(time.DateOnly))
	}
	switch {
	case r.Runtime.TorchTPU != "":
		f = append(f, "torch_tpu "+r.Runtime.TorchTPU)
	case r.Runtime.Torch != "":
		f = append(f, "torch "+r.Runtime.Torch)
	}
	return strings.Join(f, ", ")
}

// oneLine keeps the first line of s, at most n runes.
func oneLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// serveVerdict maps a model's serving cell (vLLM-TorchTPU) to an exit code
// and a line: served is 0, not served 1, unknown (no registry read by the
// server yet, no architectures in the model's config) 2. The line names the
// evidence: declared means the release's vLLM registry lists the
// architecture, nothing was run.
func serveVerdict(d modelDetail) (int, string) {
	c := d.Serving
	if c == nil {
		return ExitUntested, fmt.Sprintf("%s: serving with vLLM-TorchTPU unknown (the server has not read the release's "+
			"model registry, or the model's config.json names no architecture)", d.ID)
	}
	if r := c.Measured; r != nil && r.Judged() { // the measured verdict outranks the declared one; one that judged nothing does not
		line := fmt.Sprintf("%s: %s serving with %s %s (measured %s, runtime %s", d.ID, r.Status, c.Package,
			orQuestion(r.Runtime.VLLMTorchTPU), r.MeasuredAt.UTC().Format(time.DateOnly), r.Runtime.Key())
		if r.Metrics.AgreedTokens != nil {
			line += fmt.Sprintf(", %d tokens agree with the CPU reference", *r.Metrics.AgreedTokens)
		}
		if l := r.LatestAttempt; l != nil { // a later probe that judged nothing: the judged verdict stands
			line += fmt.Sprintf("; the latest probe, %s, judged nothing: %s", l.MeasuredAt.UTC().Format(time.DateOnly), l.Status)
			if l.Reason != nil {
				line += " " + *l.Reason
			}
		}
		line += ")"
		if pass, _ := c.Verdict(); pass {
			if c.Command != nil {
				line += ": " + *c.Command
			}
			return ExitPass, line
		}
		if r.Signature != nil {
			line += ": " + *r.Signature
		}
		return ExitNotPassing, line
	}
	if !c.Served {
		return ExitNotPassing, fmt.Sprintf("%s: not served by %s %s (%s: its vLLM's registry lists none of %s)",
			d.ID, c.Package, c.Version, c.Evidence, strings.Join(c.Architectures, ", "))
	}
	line := fmt.Sprintf("%s: served by %s %s as %s (%s, %s)", d.ID, c.Package, c.Version, deref(c.Kind), c.Evidence, deref(c.Architecture))
	if c.Command != nil {
		line += ": " + *c.Command
	}
	return ExitPass, line
}

// orQuestion is *p, or "?" for nil or "".
func orQuestion(p *string) string {
	if p == nil || *p == "" {
		return "?"
	}
	return *p
}

// deref is *p, or "" for nil.
func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}
