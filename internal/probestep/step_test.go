package probestep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestWouldChange: a rerun confirms a move between pass and a status held
// against the model, or between two of those; never a first verdict, an
// error or a skip.
func TestWouldChange(t *testing.T) {
	for _, tc := range []struct {
		old, new compat.Status
		want     bool
	}{
		{compat.StatusPass, compat.StatusFail, true},
		{compat.StatusPass, compat.StatusOOM, true},
		{compat.StatusFail, compat.StatusPass, true},
		{compat.StatusTimeout, compat.StatusCrash, true},
		{compat.StatusPass, compat.StatusPass, false},
		{compat.StatusFail, compat.StatusFail, false},
		{compat.StatusPass, compat.StatusError, false},
		{compat.StatusPass, compat.StatusSkipped, false},
		{"", compat.StatusFail, false},
		{compat.StatusUntested, compat.StatusPass, false},
		{compat.StatusError, compat.StatusPass, false},
		{compat.StatusSkipped, compat.StatusFail, false},
	} {
		if got := WouldChange(tc.old, tc.new); got != tc.want {
			t.Errorf("WouldChange(%q, %q) = %v, want %v", tc.old, tc.new, got, tc.want)
		}
	}
}

// script is a prober that answers the statuses in order; a status of
// "cancel" cancels the step's context and answers error, as the runner
// answers a probe stopped by shutdown.
type script struct {
	mu       sync.Mutex
	statuses []compat.Status
	cancel   context.CancelFunc
	reqs     []probe.Request
}

func (s *script) Probe(ctx context.Context, req probe.Request) compat.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	st := s.statuses[len(s.reqs)-1]
	if st == "cancel" {
		s.cancel()
		st = compat.StatusError
	}
	return compat.Result{Status: st, Message: compat.Ptr(fmt.Sprintf("run %d", len(s.reqs)))}
}

func TestProbeConfirmsOrMarksFlaky(t *testing.T) {
	for _, tc := range []struct {
		name        string
		previous    compat.Status
		statuses    []compat.Status
		runs        int
		stands      string // the message of the result that stands
		status      compat.Status
		flaky, intr bool
	}{
		{"first result, no rerun", "", []compat.Status{compat.StatusFail}, 1, "run 1", compat.StatusFail, false, false},
		{"unchanged, no rerun", compat.StatusPass, []compat.Status{compat.StatusPass}, 1, "run 1", compat.StatusPass, false, false},
		{"an error is no change", compat.StatusPass, []compat.Status{compat.StatusError}, 1, "run 1", compat.StatusError, false, false},
		{"confirmed regression: the rerun stands", compat.StatusPass, []compat.Status{compat.StatusFail, compat.StatusFail}, 2, "run 2", compat.StatusFail, false, false},
		{"confirmed fix", compat.StatusCrash, []compat.Status{compat.StatusPass, compat.StatusPass}, 2, "run 2", compat.StatusPass, false, false},
		{"flaky: the first stands, marked", compat.StatusPass, []compat.Status{compat.StatusCrash, compat.StatusPass}, 2, "run 1", compat.StatusCrash, true, false},
		{"flaky: a rerun of another failure", compat.StatusPass, []compat.Status{compat.StatusOOM, compat.StatusTimeout}, 2, "run 1", compat.StatusOOM, true, false},
		{"interrupted probe", compat.StatusPass, []compat.Status{"cancel"}, 1, "run 1", compat.StatusError, false, true},
		{"interrupted rerun: unconfirmed", compat.StatusPass, []compat.Status{compat.StatusFail, "cancel"}, 2, "run 1", compat.StatusFail, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := &script{statuses: tc.statuses, cancel: cancel}
			req := Request{Request: probe.Request{ModelID: "org/m", Revision: "abc", Target: compat.TargetCPU, Mode: compat.ModeArch},
				Previous: tc.previous}
			out := Probe(ctx, p, req, quiet)
			if len(out.Runs) != tc.runs || len(p.reqs) != tc.runs {
				t.Fatalf("%d runs noted, %d probes, want %d", len(out.Runs), len(p.reqs), tc.runs)
			}
			if deref(out.Result.Message) != tc.stands || out.Result.Status != tc.status || out.Flaky != tc.flaky || out.Interrupted != tc.intr {
				t.Errorf("stands %q %s flaky=%v interrupted=%v; want %q %s flaky=%v interrupted=%v", deref(out.Result.Message),
					out.Result.Status, out.Flaky, out.Interrupted, tc.stands, tc.status, tc.flaky, tc.intr)
			}
			for i, r := range out.Runs {
				if r.Result.Target != compat.TargetCPU || r.Result.Revision != "abc" || r.Held < 0 {
					t.Errorf("run %d not filled in: %+v", i, r)
				}
			}
		})
	}
}

// TestFill: what a result lacks comes from the request; what it has stays.
func TestFill(t *testing.T) {
	rt := compat.Runtime{Torch: "2.15.0", Harness: "0.1.0"}
	req := Request{Request: probe.Request{ModelID: "org/m", Revision: "abc", Task: "fill-mask", Target: compat.TargetTPU,
		Mode: compat.ModeFull}, Runtime: rt}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.FixedZone("x", 3600))

	var empty compat.Result
	req.Fill(&empty, now)
	if empty.Target != compat.TargetTPU || empty.Revision != "abc" || empty.Task != "fill-mask" ||
		!empty.TestedAt.Equal(now) || empty.TestedAt.Location() != time.UTC || empty.Runtime != rt ||
		empty.Repro != "scanner probe org/m --revision abc --target tpu --mode full" || empty.DevicesUsed != 1 {
		t.Errorf("filled: %+v", empty)
	}

	tested := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	own := compat.Result{Target: compat.TargetCPU, Revision: "def", Task: "text-generation", TestedAt: tested,
		Repro: "theirs", Runtime: compat.Runtime{Torch: "2.14.0"}, DevicesUsed: 4}
	want := own
	req.Fill(&own, now)
	if own.Target != want.Target || own.Revision != want.Revision || own.Task != want.Task || !own.TestedAt.Equal(tested) ||
		own.Repro != want.Repro || own.Runtime != want.Runtime || own.DevicesUsed != 4 {
		t.Errorf("a result's own fields changed: %+v, want %+v", own, want)
	}
}

func TestFetchFailed(t *testing.T) {
	gated := &hub.Error{Status: 403, Code: hub.CodeGatedRepo, Message: "restricted"}
	for _, tc := range []struct {
		name   string
		err    error
		status compat.Status
		reason compat.Reason
		class  compat.FailureClass
		msg    string
	}{
		{"config over its cap", fmt.Errorf("read: %w", &hub.CapError{File: "config.json", Size: 5 << 20, Cap: 4 << 20}),
			compat.StatusError, "", compat.ClassConfigError, "refused: config.json is 5 MiB"},
		{"weights over their cap: the scanner's limit", &hub.CapError{File: "model.safetensors", Size: 30 << 30, Cap: 20 << 30},
			compat.StatusError, "", compat.ClassOther, "fetch files: model.safetensors"},
		{"gated", fmt.Errorf("download: %w", gated), compat.StatusSkipped, compat.ReasonGated, "", "hub: "},
		{"network", errors.New("connection reset"), compat.StatusError, "", compat.ClassOther, "fetch files: connection reset"},
	} {
		res := FetchFailed(tc.err)
		if res.Status != tc.status || deref(res.Reason) != string(tc.reason) || deref(res.FailureClass) != string(tc.class) ||
			!strings.HasPrefix(deref(res.Message), tc.msg) {
			t.Errorf("%s: %s reason %q class %q message %q; want %s %q %q %q…", tc.name, res.Status, deref(res.Reason),
				deref(res.FailureClass), deref(res.Message), tc.status, tc.reason, tc.class, tc.msg)
		}
		if res.Status == compat.StatusError && deref(res.Stage) != string(compat.StageConfig) {
			t.Errorf("%s: stage %q, want config", tc.name, deref(res.Stage))
		}
	}
}

// refuser fails the downloads of the files it names.
type refuser map[string]error

func (r refuser) Download(_ context.Context, _, _ string, files []string) (string, error) {
	if err := r[files[0]]; err != nil {
		return "", err
	}
	return "/snapshot", nil
}

func TestFetchInputsNamesWhatDidNotCome(t *testing.T) {
	dl := refuser{
		"tokenizer.json":    fmt.Errorf("get: %w", hub.ErrTooLarge),
		"vocab.txt":         &hub.Error{Status: 404, Code: hub.CodeEntryNotFound},
		"special.json":      fmt.Errorf("get: %w", hub.ErrNotAllowed),
		"spiece.model":      fmt.Errorf("get: %w", hub.ErrIntegrity),
		"chat_template.txt": errors.New("reset"),
	}
	files := []string{"tokenizer_config.json", "tokenizer.json", "vocab.txt", "special.json", "spiece.model", "chat_template.txt"}
	got := FetchInputs(context.Background(), dl, quiet, "org/m", "abc", files)
	want := "input files not fetched: tokenizer.json (over its size cap), vocab.txt (the Hub answered 404), " +
		"special.json (not an allowed file type), spiece.model (failed its integrity check), chat_template.txt (download failed)"
	if got != want {
		t.Errorf("note\n %q\nwant\n %q", got, want)
	}
	if got := FetchInputs(context.Background(), dl, quiet, "org/m", "abc", []string{"tokenizer_config.json"}); got != "" {
		t.Errorf("every file came: note %q", got)
	}
}

func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// figures is a prober whose harness reports an absurd figure.
type figures struct{ mfu float64 }

func (f figures) Probe(ctx context.Context, req probe.Request) compat.Result {
	return compat.Result{Status: compat.StatusPass, Stage: compat.Ptr(compat.StageGenerate), Metrics: compat.Metrics{MFU: &f.mfu},
		Runtime: compat.Runtime{Torch: "2.15.0", Harness: "h"}}
}

// TestAnInvalidResultIsTheScannersError: a result the harness reported that
// compat.Result.Validate refuses (mfu 1e300) would be refused by the store
// (locally) or the server (on a worker, whose lease would then expire three
// times): the step makes it the scanner's error, naming the field, never
// held against the model.
func TestAnInvalidResultIsTheScannersError(t *testing.T) {
	req := Request{Request: probe.Request{ModelID: "org/m", Revision: "abc", Target: compat.TargetCPU, Mode: compat.ModeArch},
		Runtime: compat.Runtime{Torch: "2.15.0", Harness: "h"}}
	out := Probe(context.Background(), figures{mfu: 1e300}, req, quiet)
	r := out.Result
	if r.Status != compat.StatusError || !strings.Contains(deref(r.Message), "metrics.mfu") || r.Metrics.MFU != nil {
		t.Errorf("result %s %q, mfu %v: want the scanner's error naming metrics.mfu, without the figure", r.Status, deref(r.Message), r.Metrics.MFU)
	}
	if err := r.Validate(); err != nil {
		t.Errorf("the error result is itself invalid: %v", err)
	}
	// The stage the harness reached (generate) is kept: where the scanner's
	// error happened.
	if r.Stage == nil || *r.Stage != compat.StageGenerate {
		t.Errorf("stage %v, want generate (the harness's)", r.Stage)
	}
	if ok := Probe(context.Background(), figures{mfu: 0.4}, req, quiet).Result; ok.Status != compat.StatusPass {
		t.Errorf("a valid result became %s", ok.Status)
	}
}
