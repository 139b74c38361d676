package compat_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// TestServingVerdict: a measured verdict outranks the declared one, but a
// measured probe that judged nothing (the scanner's own error, or not
// judged for want of a CPU reference) leaves the declared one standing:
// never a pass, never a fail.
func TestServingVerdict(t *testing.T) {
	for _, tc := range []struct {
		name     string
		served   bool
		measured string // "" for none
		pass     bool
		evidence string
	}{
		{"declared served", true, "", true, "declared"},
		{"declared not served", false, "", false, "declared"},
		{"measured pass beats not declared", false, "pass", true, "measured"},
		{"measured fail beats declared", true, "fail", false, "measured"},
		{"measured oom", true, "oom", false, "measured"},
		{"scanner error judges nothing", true, "error", true, "declared"},
		{"not judged: no reference", true, "skipped", true, "declared"},
		{"not judged, not declared", false, "skipped", false, "declared"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := compat.ServingCell{Evidence: compat.ServingEvidenceDeclared, Served: tc.served}
			if tc.measured != "" {
				c.Measured = &compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: tc.measured}
			}
			pass, ev := c.Verdict()
			if pass != tc.pass || ev != tc.evidence {
				t.Errorf("Verdict() = %v, %q; want %v, %q", pass, ev, tc.pass, tc.evidence)
			}
		})
	}
}

// TestServingChange: the measured serving verdict's events, apart from the
// inference's and the train step's: first measured, stops serving, starts
// serving; a probe that judged nothing, the same status or one failure
// for another is none.
func TestServingChange(t *testing.T) {
	for _, tc := range []struct {
		last, new compat.Status
		want      compat.EventKind
		ok        bool
	}{
		{"", compat.StatusPass, compat.EventServingNew, true},
		{"", compat.StatusOOM, compat.EventServingNew, true},
		{compat.StatusPass, compat.StatusFail, compat.EventServingRegression, true},
		{compat.StatusPass, compat.StatusTimeout, compat.EventServingRegression, true},
		{compat.StatusCrash, compat.StatusPass, compat.EventServingFix, true},
		{compat.StatusPass, compat.StatusPass, "", false},
		{compat.StatusFail, compat.StatusOOM, "", false},
		{compat.StatusPass, compat.StatusError, "", false},
		{compat.StatusPass, compat.StatusSkipped, "", false},
		{"", compat.StatusSkipped, "", false},
		{"", compat.StatusError, "", false},
	} {
		kind, ok := compat.ServingChange(tc.last, tc.new)
		if kind != tc.want || ok != tc.ok {
			t.Errorf("ServingChange(%q, %q) = %q, %v; want %q, %v", tc.last, tc.new, kind, ok, tc.want, tc.ok)
		}
	}
	serving := 0
	for _, k := range compat.EventKinds {
		e := compat.Event{Kind: k}
		if e.Serving() {
			serving++
			if e.Train() {
				t.Errorf("%s is both a train and a serving change", k)
			}
		}
	}
	if serving != 3 {
		t.Errorf("%d serving kinds in EventKinds, want 3 (serving_new, serving_regression, serving_fix)", serving)
	}
}

// TestEvidenceOfServingEvent: a serving change rests on the serving
// probe's measurement: its device and chips, its own runtime key.
func TestEvidenceOfServingEvent(t *testing.T) {
	m := compat.ServingMeasured{Device: compat.Ptr("TPU v6e"), TensorParallelSize: 2,
		Runtime: compat.ServingRuntime{VLLMTorchTPU: compat.Ptr("0.29.0"), Torch: compat.Ptr("2.13.0"), TorchTPU: compat.Ptr("0.2.0"), Libtpu: compat.Ptr("0.0.50")}}
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	e := compat.Event{Kind: compat.EventServingFix, Target: compat.TargetTPU, ToStatus: compat.StatusPass, Runtime: m.EventRuntime(), At: at}
	ev := compat.EvidenceOfEvent(e)
	if ev.Kind != compat.EvidenceMeasured || ev.Device != "TPU v6e" || ev.DeviceCount != 2 || ev.Runtime != "0.29.0~2.13.0~0.2.0~0.0.50" ||
		ev.At == nil || !ev.At.Equal(at) {
		t.Errorf("EvidenceOfEvent(serving fix) = %+v", ev)
	}
}

// TestServingValidate: what a fleet worker may send as a serving verdict.
func TestServingValidate(t *testing.T) {
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	ok := func() compat.ServingMeasured {
		return compat.ServingMeasured{Evidence: "measured", Status: "pass", TensorParallelSize: 1, MaxModelLen: 256, MeasuredAt: at,
			Metrics: compat.ServingMetrics{TokensPerS: compat.Ptr(40.0), AgreedTokens: compat.Ptr(16)}}
	}
	if err := ok().Validate(); err != nil {
		t.Fatalf("a pass: %v", err)
	}
	noRef := ok()
	noRef.Status, noRef.Reason = "skipped", compat.Ptr(compat.ServingReasonNoReference)
	if err := noRef.Validate(); err != nil {
		t.Fatalf("not judged: %v", err)
	}
	for name, mut := range map[string]func(*compat.ServingMeasured){
		"declared evidence":   func(m *compat.ServingMeasured) { m.Evidence = "declared" },
		"untested":            func(m *compat.ServingMeasured) { m.Status = "untested" },
		"unknown status":      func(m *compat.ServingMeasured) { m.Status = "served" },
		"skipped, no reason":  func(m *compat.ServingMeasured) { m.Status = "skipped" },
		"reason on a pass":    func(m *compat.ServingMeasured) { m.Reason = compat.Ptr(compat.ServingReasonNoReference) },
		"no chips":            func(m *compat.ServingMeasured) { m.TensorParallelSize = 0 },
		"no date":             func(m *compat.ServingMeasured) { m.MeasuredAt = time.Time{} },
		"negative rate":       func(m *compat.ServingMeasured) { m.Metrics.TokensPerS = compat.Ptr(-1.0) },
		"absurd agreement":    func(m *compat.ServingMeasured) { m.Metrics.AgreedTokens = compat.Ptr(1 << 20) },
		"oversized signature": func(m *compat.ServingMeasured) { m.Signature = compat.Ptr(strings.Repeat("x", 5000)) },
		"a latest attempt":    func(m *compat.ServingMeasured) { m.LatestAttempt = &compat.ServingMeasured{Status: "error"} },
		"revision with space": func(m *compat.ServingMeasured) { m.Revision = "abc def" },
		"revision with ESC":   func(m *compat.ServingMeasured) { m.Revision = "abc\x1b[31m" },
		"oversized revision":  func(m *compat.ServingMeasured) { m.Revision = strings.Repeat("a", 200) },
	} {
		m := ok()
		mut(&m)
		if err := m.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A serving change names the stage only for a verdict other than pass,
// and only a probe's stage.
func TestServingEventStage(t *testing.T) {
	for _, c := range []struct {
		status string
		stage  *string
		want   string
	}{{"fail", compat.Ptr("load"), "load"}, {"oom", compat.Ptr("generate"), "generate"}, {"pass", compat.Ptr("generate"), ""},
		{"fail", nil, ""}, {"fail", compat.Ptr("nowhere"), ""}} {
		got := compat.ServingMeasured{Status: c.status, Stage: c.stage}.EventStage()
		if (got == nil && c.want != "") || (got != nil && string(*got) != c.want) {
			t.Errorf("%s at %v: %v, want %q", c.status, c.stage, got, c.want)
		}
	}
}
