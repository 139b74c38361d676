package compat

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google-pytorch/torchtpu-scanner/internal/termsafe"
)

// This file is the one rule for what a Result may carry before it is
// recorded, whoever made it (the local runner, a worker of the fleet, an
// import): Validate refuses what is not the contract's, with the field
// named; Clean strips the free text of what could act on a terminal or a
// page, within its cap. The store cleans and validates every result it
// records; the fleet validates a worker's before it takes it.

// ErrInvalidResult is wrapped by every refusal of Validate.
var ErrInvalidResult = errors.New("invalid result")

// FieldError names the field a check refused and why.
type FieldError struct {
	Field   string // as the JSON names it: "metrics.mfu", "stages[2].duration_s"
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// Unwrap makes every FieldError an ErrInvalidResult.
func (e *FieldError) Unwrap() error { return ErrInvalidResult }

func refuse(field, format string, a ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, a...)}
}

// Caps of the strings a result carries, in bytes. Labels (ids, versions,
// names) over their cap are refused; free text is cut to its cap by Clean.
const (
	MaxVersionBytes  = 64   // each version of Runtime (torch, harness, …)
	MaxDeviceBytes   = 128  // Runtime.Device
	MaxRevisionBytes = 128  // a commit sha (40 hex) with room to spare
	MaxTaskBytes     = 128  // a pipeline tag
	MaxOpBytes       = 512  // an op name
	MaxSigBytes      = 1024 // a failure signature
	MaxHostBytes     = 253  // a worker's host (a DNS name's limit)
	MaxReproBytes    = 2048
	MaxStages        = 64
	MaxMessageBytes  = 16 << 10 // the start of the message is kept
	MaxLogTailBytes  = 64 << 10 // the end of the log is kept
	MaxNoteBytes     = 4 << 10  // a stage's or the efficiency's note
	MaxContinuation  = 8 << 10  // a continuation's prompt and text, each
)

// The ranges of the figures. Times are ≥ 0 and at most maxSeconds (the
// longest any probe may run, with room); fractions are 0..1; an error
// figure (a difference, a perplexity) may be as large as the difference of
// two float32s, the precision it is measured in; every figure is finite.
const (
	maxSeconds   = 1e7 // 115 days
	maxRate      = 1e12
	maxBytes     = 1 << 60
	maxCount     = 1 << 53
	maxError     = 2 * math.MaxFloat32
	maxFLOPS     = 1e21
	cosineSlack  = 1e-5 // a cosine computed in float32 may round past ±1
	maxDevices   = 1 << 16
	maxDeviceGiB = 1 << 20
)

// The instants a result's time may name: what the store can hold as
// nanoseconds since 1970 without wrapping (time.UnixNano is defined up to
// 2262-04-11), and no earlier than that epoch.
var (
	minTestedAt = time.Unix(0, 0).UTC()
	maxTestedAt = time.Unix(0, math.MaxInt64).UTC()
)

// InTimeRange reports whether t is an instant the store can record (see
// minTestedAt).
func InTimeRange(t time.Time) bool { return !t.Before(minTestedAt) && !t.After(maxTestedAt) }

// Validate checks r against the contract: the vocabulary (status, target,
// stage, failure class, reason, mode), a tested_at the store can hold,
// every label within its cap and free of control characters, every figure
// finite and within its range. The error is a *FieldError (wrapping
// ErrInvalidResult) naming the first field refused.
func (r Result) Validate() error {
	switch {
	case !r.Status.Valid() || r.Status == StatusUntested:
		return refuse("status", "%q is not a result status", clip(string(r.Status)))
	case !slices.Contains(Targets, r.Target):
		return refuse("target", "%q: want tpu, cpu or cuda", clip(string(r.Target)))
	case r.TestedAt.IsZero():
		return refuse("tested_at", "missing")
	case !InTimeRange(r.TestedAt):
		return refuse("tested_at", "%s is outside %d–%d", r.TestedAt.Format(time.RFC3339), minTestedAt.Year(), maxTestedAt.Year())
	case r.WorkerTestedAt != nil && !InTimeRange(*r.WorkerTestedAt):
		return refuse("worker_tested_at", "%s is outside %d–%d", r.WorkerTestedAt.Format(time.RFC3339), minTestedAt.Year(), maxTestedAt.Year())
	case r.Stage != nil && !r.Stage.Valid():
		return refuse("stage", "%q is not a contract stage", clip(string(*r.Stage)))
	case r.FailureClass != nil && !r.FailureClass.Valid():
		return refuse("failure_class", "%q is not a contract failure class", clip(string(*r.FailureClass)))
	case r.Reason != nil && !r.Reason.Valid():
		return refuse("reason", "%q is not a contract reason", clip(string(*r.Reason)))
	case r.Status == StatusSkipped && r.Reason == nil:
		return refuse("reason", "status skipped without a reason")
	case r.Mode != nil && *r.Mode != ModeFull && *r.Mode != ModeArch:
		return refuse("mode", "%q: want full or arch", clip(string(*r.Mode)))
	case len(r.Stages) > MaxStages:
		return refuse("stages", "%d entries, over %d", len(r.Stages), MaxStages)
	case r.DevicesUsed < 0 || r.DevicesUsed > maxDevices:
		return refuse("devices_used", "%d: want 0 to %d", r.DevicesUsed, maxDevices)
	case r.Sharding != nil && !r.Sharding.Valid():
		return refuse("sharding", "%q: want tp or fsdp", clip(string(*r.Sharding)))
	case r.Sharding != nil && r.DevicesUsed < 2:
		return refuse("sharding", "%q on %d devices", *r.Sharding, r.DevicesUsed)
	}
	labels := []struct {
		field string
		s     *string
		max   int
	}{
		{"revision", &r.Revision, MaxRevisionBytes}, {"task", &r.Task, MaxTaskBytes},
		{"op", r.Op, MaxOpBytes}, {"signature", r.Signature, MaxSigBytes},
		{"repro", &r.Repro, MaxReproBytes}, {"worker", &r.Worker, MaxHostBytes},
	}
	for _, l := range labels {
		if l.s != nil {
			if err := CheckLabel(l.field, *l.s, l.max); err != nil {
				return err
			}
		}
	}
	if strings.ContainsAny(r.Revision, " \t") {
		return refuse("revision", "has a space")
	}
	if err := r.Runtime.Validate(); err != nil {
		return err
	}
	if err := checkSeconds("duration_s", r.DurationS); err != nil {
		return err
	}
	for i, s := range r.Stages {
		if !s.Stage.Valid() {
			return refuse(fmt.Sprintf("stages[%d].stage", i), "%q is not a contract stage", clip(string(s.Stage)))
		}
		if err := checkSeconds(fmt.Sprintf("stages[%d].duration_s", i), s.DurationS); err != nil {
			return err
		}
	}
	if err := r.Metrics.validate(); err != nil {
		return err
	}
	if r.TPUOps != nil {
		if r.Target == TargetTPU {
			return refuse("tpu_ops", "a prediction on a tpu result (a tpu run is measured, not predicted)")
		}
		if err := r.TPUOps.validate(); err != nil {
			return err
		}
	}
	if r.OpsTraced != nil {
		if r.Target == TargetTPU {
			return refuse("ops_traced", "a trace on a tpu result (a tpu run is measured, not predicted)")
		}
		if err := r.OpsTraced.validate(); err != nil {
			return err
		}
	}
	return r.validateMatrix()
}

// Validate checks the runtime a result or a worker reports: each version
// at most MaxVersionBytes of printable ASCII without spaces or "|" (the
// retest key's separator), the device name a label of MaxDeviceBytes, the
// counts and memory within their ranges. Empty fields are allowed (not
// reported, or not present).
func (rt Runtime) Validate() error {
	versions := []struct{ field, s string }{
		{"runtime.python", rt.Python}, {"runtime.torch", rt.Torch}, {"runtime.transformers", rt.Transformers},
		{"runtime.torch_tpu", rt.TorchTPU}, {"runtime.harness", rt.Harness}, {"runtime.libtpu", rt.LibTPU},
	}
	for _, v := range versions {
		if err := CheckLabel(v.field, v.s, MaxVersionBytes); err != nil {
			return err
		}
		if i := strings.IndexFunc(v.s, func(r rune) bool { return r > unicode.MaxASCII || r == ' ' || r == '|' }); i >= 0 {
			return refuse(v.field, "%q: a version is printable ASCII without spaces or '|'", clip(v.s))
		}
	}
	if err := CheckPrintable("runtime.device", rt.Device, MaxDeviceBytes); err != nil {
		return err
	}
	if rt.DeviceCount < 0 || rt.DeviceCount > maxDevices {
		return refuse("runtime.device_count", "%d: want 0 to %d", rt.DeviceCount, maxDevices)
	}
	return checkRange("runtime.device_memory_gib", rt.DeviceMemGB, 0, maxDeviceGiB)
}

func (m Metrics) validate() error {
	type figure struct {
		field    string
		v        *float64
		min, max float64
	}
	figures := []figure{
		{"load_s", m.LoadS, 0, maxSeconds}, {"first_forward_s", m.FirstForwardS, 0, maxSeconds},
		{"forward_ms", m.ForwardMS, 0, maxSeconds * 1e3}, {"compile_s", m.CompileS, 0, maxSeconds},
		{"tokens_per_s", m.TokensPerS, 0, maxRate}, {"max_abs_diff", m.MaxAbsDiff, 0, maxError},
		{"top1_agreement", m.Top1Agreement, 0, 1}, {"mfu", m.MFU, 0, 1}, {"mbu", m.MBU, 0, 1},
		{"compiled_step_ms", m.CompiledStepMS, 0, maxSeconds * 1e3}, {"ttft_ms", m.TTFTMS, 0, maxSeconds * 1e3},
		{"perplexity", m.Perplexity, 0, maxError}, {"tolerance", m.Tolerance, 0, maxError},
		{"rel_error", m.RelError, 0, maxError},
		{"cosine_similarity", m.CosineSimilarity, -1 - cosineSlack, 1 + cosineSlack},
		{"peak_mem_bytes", intFigure(m.PeakMemBytes), 0, maxBytes}, {"param_count", intFigure(m.ParamCount), 0, maxCount},
	}
	if e := m.Efficiency; e != nil {
		figures = append(figures,
			figure{"efficiency.peak_bf16_flops", e.PeakBF16FLOPS, 0, maxFLOPS},
			figure{"efficiency.peak_hbm_bytes_per_s", e.PeakHBMBytesPerS, 0, maxFLOPS},
			figure{"efficiency.tokens", intFigure(e.Tokens), 0, maxCount},
			figure{"efficiency.flops_per_token", e.FLOPsPerToken, 0, maxFLOPS},
			figure{"efficiency.weight_bytes_per_token", e.WeightBytesPerToken, 0, maxBytes})
		for _, l := range []struct{ field, s string }{
			{"efficiency.device", e.Device}, {"efficiency.forward_timing", e.ForwardTiming}, {"efficiency.model", e.Model},
		} {
			if err := CheckLabel("metrics."+l.field, l.s, MaxVersionBytes); err != nil {
				return err
			}
		}
	}
	for _, f := range figures {
		if err := checkRange("metrics."+f.field, f.v, f.min, f.max); err != nil {
			return err
		}
	}
	return nil
}

func intFigure(v *int64) *float64 {
	if v == nil {
		return nil
	}
	f := float64(*v)
	return &f
}

func checkSeconds(field string, v float64) error { return checkRange(field, &v, 0, maxSeconds) }

// checkRange refuses a figure that is not finite or outside [min, max]; nil
// is "not measured" and passes.
func checkRange(field string, v *float64, min, max float64) error {
	if v == nil {
		return nil
	}
	if math.IsNaN(*v) || math.IsInf(*v, 0) || *v < min || *v > max {
		return refuse(field, "%g: want a finite figure from %g to %g", *v, min, max)
	}
	return nil
}

// CheckLabel is the rule for a short string from outside (a worker's id,
// host or version, a result's op or revision): at most max bytes of
// UTF-8 without control characters (C0, DEL, C1), bidirectional controls
// or other format characters. Whether it may be empty is the caller's
// rule. The error is a *FieldError naming field.
func CheckLabel(field, s string, max int) error {
	if len(s) > max {
		return refuse(field, "%d bytes, over %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return refuse(field, "not UTF-8")
	}
	if i := strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	}); i >= 0 {
		return refuse(field, "%q has a control character", clip(termsafe.Line(s)))
	}
	return nil
}

// CheckPrintable is the rule for a string a worker says about itself (its
// id, host and version, a device's name, why it gives a lease back):
// printable ASCII (space to '~') only, at most max bytes, which are then
// as many characters. The OpenAPI document states it as a pattern and a
// maxLength (web's openapi.json), which a rule on UTF-8 bytes and Unicode
// categories could not be. Whether it may be empty is the caller's rule.
func CheckPrintable(field, s string, max int) error {
	if len(s) > max {
		return refuse(field, "%d bytes, over %d", len(s), max)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r < ' ' || r > '~' }); i >= 0 {
		return refuse(field, "%q: printable ASCII only", clip(termsafe.Line(s)))
	}
	return nil
}

// clip keeps an error's quote of a refused value short.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	s = s[:64]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// Clean returns r with its free text (message, log tail, stage and
// efficiency notes, continuation) stripped of terminal escape sequences and
// control characters but line feeds and tabs (termsafe.Strip), each within
// its cap: the start of a message, the end of a log tail. What Validate
// judges (labels, figures) is left as it is. r is not changed.
func (r Result) Clean() Result {
	if r.Message != nil {
		r.Message = Ptr(head(termsafe.Strip(*r.Message), MaxMessageBytes))
	}
	r.LogTail = tail(termsafe.Strip(r.LogTail), MaxLogTailBytes)
	if len(r.Stages) > 0 {
		stages := make([]StageRun, len(r.Stages))
		for i, s := range r.Stages {
			s.Note = head(termsafe.Strip(s.Note), MaxNoteBytes)
			stages[i] = s
		}
		r.Stages = stages
	}
	if c := r.Continuation; c != nil {
		r.Continuation = &Continuation{Prompt: head(termsafe.Strip(c.Prompt), MaxContinuation),
			Text: head(termsafe.Strip(c.Text), MaxContinuation)}
	}
	if e := r.Metrics.Efficiency; e != nil {
		ce := *e
		ce.Note = head(termsafe.Strip(e.Note), MaxNoteBytes)
		r.Metrics.Efficiency = &ce
	}
	return r.cleanMatrix()
}

// head is the first max bytes of s, whole runes only.
func head(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// tail is the last max bytes of s, whole runes only.
func tail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}
