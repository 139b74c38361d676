package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// A measured serving verdict is kept per model, in its own table: the
// newest replaces the older, the inference results are not touched, and
// an unknown model or a verdict that is not measured is refused.
func TestServingResultRoundTrip(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "org/a")
	if _, err := s.ServingResult(ctx, "org/a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("before any: %v", err)
	}
	v := func(s string) *string { return &s }
	agreed, tps := 16, 40.5
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: "fail", Stage: v("load"), Signature: v("load_error:x"),
		Runtime: compat.ServingRuntime{VLLMTorchTPU: v("0.29.0"), Torch: v("2.13.0")}, TensorParallelSize: 1, MaxModelLen: 256,
		MeasuredAt: at, LogTail: "a long log"}
	before, _ := s.Changed(ctx)
	if err := s.PutServingResult(ctx, "org/a", m); err != nil {
		t.Fatal(err)
	}
	if after, _ := s.Changed(ctx); !after.After(before) {
		t.Errorf("a stored serving verdict did not move the data's version")
	}
	m.Status, m.Stage, m.Signature, m.MeasuredAt = "pass", v("generate"), nil, at.Add(time.Hour)
	m.Metrics = compat.ServingMetrics{AgreedTokens: &agreed, TokensPerS: &tps}
	if err := s.PutServingResult(ctx, "org/a", m); err != nil {
		t.Fatal(err)
	}
	got, err := s.ServingResult(ctx, "org/a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "pass" || got.Signature != nil || got.Metrics.AgreedTokens == nil || *got.Metrics.AgreedTokens != 16 ||
		!got.MeasuredAt.Equal(at.Add(time.Hour)) || got.Runtime.Key() != "0.29.0~2.13.0~~" || got.LogTail != "" {
		t.Errorf("read back %+v", got)
	}
	upsert(t, s, "org/b")
	all, err := s.ServingResults(ctx, []string{"org/a", "org/b", "org/none"})
	if err != nil || len(all) != 1 || all["org/a"].Status != "pass" || !all["org/a"].MeasuredAt.Equal(at.Add(time.Hour)) {
		t.Errorf("ServingResults: %+v %v (org/a alone was measured)", all, err)
	}
	if none, err := s.ServingResults(ctx, nil); err != nil || len(none) != 0 {
		t.Errorf("ServingResults(nil): %v %v", none, err)
	}
	if _, err := s.LatestResult(ctx, "org/a", "tpu"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a serving verdict became an inference result: %v", err)
	}
	if err := s.PutServingResult(ctx, "org/none", m); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown model: %v", err)
	}
	m.Evidence = "declared"
	if err := s.PutServingResult(ctx, "org/a", m); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a declared verdict stored as measured: %v", err)
	}
}

// A measured serving verdict that changes is an event of its own kind:
// first measured, stops serving, starts serving; the same status, a
// failure for another, the scanner's error and a probe not judged (no
// reference) are none, and the verdict after them is compared with the
// judged one before them. Each event carries the serving runtime.
func TestServingEvents(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "org/a")
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	put := func(status string) {
		t.Helper()
		at = at.Add(time.Hour)
		m := compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: status, MeasuredAt: at,
			Signature: compat.Ptr(status + ":sig\x1b[31m"), Device: compat.Ptr("TPU v6e"), TensorParallelSize: 2,
			Runtime: compat.ServingRuntime{VLLMTorchTPU: compat.Ptr("0.29.0"), Torch: compat.Ptr("2.13.0")}}
		if status == "skipped" {
			m.Reason = compat.Ptr(compat.ServingReasonNoReference)
		}
		if err := s.PutServingResult(ctx, "org/a", m); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range []string{"error", "fail", "oom", "oom", "pass", "pass", "skipped", "error", "timeout", "pass"} {
		put(st)
	}
	evs, err := s.ModelEvents(ctx, "org/a", 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		got = append(got, string(e.Kind)+":"+string(e.FromStatus)+">"+string(e.ToStatus))
		if !e.Serving() || e.Target != compat.TargetTPU || e.Runtime.VLLMTorchTPU != "0.29.0" || e.Runtime.Torch != "2.13.0" ||
			e.Runtime.Device != "TPU v6e" || e.Runtime.DeviceCount != 2 || e.Signature == nil || strings.ContainsRune(*e.Signature, 0x1b) {
			t.Errorf("event %+v", e)
		}
	}
	want := "serving_new:>fail serving_fix:fail>pass serving_regression:pass>timeout serving_fix:timeout>pass"
	if strings.Join(got, " ") != want {
		t.Errorf("serving events\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	after, err := s.EventsAfter(ctx, 0, 100)
	if err != nil || len(after) != 4 {
		t.Errorf("EventsAfter (the webhooks' stream): %d events, %v", len(after), err)
	}
}

// A serving probe that judged nothing (skipped for want of a CPU
// reference, the scanner's error) does not replace the judged verdict
// before it: the read keeps the newest judged verdict, its date and
// runtime its own, with the later probe as its LatestAttempt; the next
// judged verdict replaces both; a model never judged shows its newest
// probe.
func TestServingResultKeepsTheJudgedVerdict(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "org/a", "org/b")
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	put := func(id, status, torch string, hours int) {
		t.Helper()
		m := compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: status, MeasuredAt: at.Add(time.Duration(hours) * time.Hour),
			Runtime: compat.ServingRuntime{VLLMTorchTPU: compat.Ptr("0.29.0"), Torch: compat.Ptr(torch)}, TensorParallelSize: 1}
		if status == "skipped" {
			m.Reason, m.Message = compat.Ptr(compat.ServingReasonNoReference), compat.Ptr("no CPU reference")
		}
		if err := s.PutServingResult(ctx, id, m); err != nil {
			t.Fatal(err)
		}
	}
	read := func(id string) compat.ServingMeasured {
		t.Helper()
		one, err := s.ServingResult(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		all, err := s.ServingResults(ctx, []string{id})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := jsonOf(one), jsonOf(all[id]); a != b {
			t.Errorf("ServingResult and ServingResults differ:\n%s\n%s", a, b)
		}
		return one
	}
	put("org/a", "pass", "2.13.0", 1)
	put("org/a", "skipped", "2.14.0", 2)
	got := read("org/a")
	if got.Status != "pass" || !got.MeasuredAt.Equal(at.Add(time.Hour)) || got.Runtime.Key() != "0.29.0~2.13.0~~" ||
		got.LatestAttempt == nil || got.LatestAttempt.Status != "skipped" || got.LatestAttempt.Reason == nil ||
		!got.LatestAttempt.MeasuredAt.Equal(at.Add(2*time.Hour)) || got.LatestAttempt.LatestAttempt != nil {
		t.Errorf("after pass, then not judged: %+v (latest %+v)", got, got.LatestAttempt)
	}
	put("org/a", "error", "2.14.0", 3)
	if got := read("org/a"); got.Status != "pass" || got.LatestAttempt == nil || got.LatestAttempt.Status != "error" {
		t.Errorf("after an error: %+v (latest %+v)", got, got.LatestAttempt)
	}
	put("org/a", "fail", "2.14.0", 4)
	if got := read("org/a"); got.Status != "fail" || got.LatestAttempt != nil || !got.MeasuredAt.Equal(at.Add(4*time.Hour)) {
		t.Errorf("a judged verdict after the probes that judged nothing: %+v (latest %+v)", got, got.LatestAttempt)
	}
	put("org/b", "skipped", "2.14.0", 1)
	if got := read("org/b"); got.Status != "skipped" || got.LatestAttempt != nil {
		t.Errorf("never judged: %+v (latest %+v)", got, got.LatestAttempt)
	}
	// a probe can't send what only the store reads
	m := compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: "pass", LatestAttempt: &compat.ServingMeasured{Status: "error"}}
	if err := s.PutServingResult(ctx, "org/b", m); err != nil {
		t.Fatal(err)
	}
	if got := read("org/b"); got.Status != "pass" || got.LatestAttempt != nil {
		t.Errorf("a stored LatestAttempt: %+v (latest %+v)", got, got.LatestAttempt)
	}
}

// A serving change names the model's revision the probe ran on and, for
// a verdict other than pass, the stage it ended at, as the inference's and
// the train step's changes do.
func TestServingEventsNameRevisionAndStage(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "org/a")
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, st := range []string{"fail", "pass"} {
		m := compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: st, Stage: compat.Ptr("load"),
			Revision: fmt.Sprintf("rev%d", i), MeasuredAt: at.Add(time.Duration(i) * time.Hour), TensorParallelSize: 1}
		if st == "pass" {
			m.Stage = compat.Ptr("generate")
		}
		if err := s.PutServingResult(ctx, "org/a", m); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := s.ModelEvents(ctx, "org/a", 10)
	if err != nil || len(evs) != 2 {
		t.Fatalf("events %+v %v", evs, err)
	}
	fix, first := evs[0], evs[1]
	if first.Kind != compat.EventServingNew || first.Revision != "rev0" || first.Stage == nil || *first.Stage != compat.StageLoad {
		t.Errorf("first measured (fail at load): %+v", first)
	}
	if fix.Kind != compat.EventServingFix || fix.Revision != "rev1" || fix.Stage != nil {
		t.Errorf("fix (a pass names no stage): %+v", fix)
	}
	if after, err := s.EventsAfter(ctx, 0, 10); err != nil || len(after) != 2 || after[0].Revision != "rev0" || after[0].Stage == nil {
		t.Errorf("the webhooks' stream: %+v %v", after, err)
	}
}
