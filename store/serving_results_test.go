package store_test

import (
	"errors"
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
