package compat

import (
	"encoding/json"
	"testing"
	"time"
)

// TestEvidenceOf: the one rule for what a verdict rests on, for every
// status and target; the expectations are written out by hand.
func TestEvidenceOf(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	tpuRT := Runtime{Torch: "2.15.0", TorchTPU: "0.2.0", Transformers: "5.23.0", Harness: "1.4.0", Device: "TPU v6e", DeviceCount: 4}
	cpuRT := Runtime{Torch: "2.15.0+cpu", Transformers: "5.23.0", Harness: "1.4.0", Device: "cpu", DeviceCount: 1}
	res := func(target Target, st Status, rt Runtime, used int) *Result {
		return &Result{Target: target, Status: st, Runtime: rt, DevicesUsed: used, TestedAt: at}
	}
	tests := []struct {
		name     string
		r        *Result
		kind     EvidenceKind
		short    string
		sentence string
	}{
		{"no result", nil, EvidenceNone, "none (no verdict)", "none (no verdict)"},
		{"tpu pass", res(TargetTPU, StatusPass, tpuRT, 1), EvidenceMeasured, "measured on 1 × TPU v6e",
			"measured on 1 × TPU v6e with torch 2.15.0, torch_tpu 0.2.0, transformers 5.23.0, harness 1.4.0 on 2026-11-30"},
		{"tpu sharded fail", res(TargetTPU, StatusFail, tpuRT, 4), EvidenceMeasured, "measured on 4 × TPU v6e",
			"measured on 4 × TPU v6e with torch 2.15.0, torch_tpu 0.2.0, transformers 5.23.0, harness 1.4.0 on 2026-11-30"},
		{"cpu pass", res(TargetCPU, StatusPass, cpuRT, 1), EvidenceMeasured, "measured on cpu",
			"measured on cpu with torch 2.15.0+cpu, transformers 5.23.0, harness 1.4.0 on 2026-11-30"},
		{"cpu sharded oom", res(TargetCPU, StatusOOM, cpuRT, 2), EvidenceMeasured, "measured on 2 × cpu",
			"measured on 2 × cpu with torch 2.15.0+cpu, transformers 5.23.0, harness 1.4.0 on 2026-11-30"},
		{"timeout, device unnamed", res(TargetCUDA, StatusTimeout, Runtime{Torch: "2.15.0"}, 1), EvidenceMeasured, "measured on 1 × cuda",
			"measured on 1 × cuda with torch 2.15.0 on 2026-11-30"},
		{"crash", res(TargetTPU, StatusCrash, tpuRT, 1), EvidenceMeasured, "measured on 1 × TPU v6e",
			"measured on 1 × TPU v6e with torch 2.15.0, torch_tpu 0.2.0, transformers 5.23.0, harness 1.4.0 on 2026-11-30"},
		{"cpu named by its model", res(TargetCPU, StatusFail, Runtime{Device: "Intel Xeon"}, 1), EvidenceMeasured,
			"measured on cpu (Intel Xeon)", "measured on cpu (Intel Xeon) on 2026-11-30"},
		{"tpu, no time, device count unknown", &Result{Target: TargetTPU, Status: StatusPass, Runtime: tpuRT}, EvidenceMeasured,
			"measured on TPU v6e", "measured on TPU v6e with torch 2.15.0, torch_tpu 0.2.0, transformers 5.23.0, harness 1.4.0"},
		{"skipped", res(TargetTPU, StatusSkipped, tpuRT, 1), EvidenceNone, "none (no verdict)", "none (no verdict)"},
		{"scanner error", res(TargetTPU, StatusError, tpuRT, 1), EvidenceNone, "none (no verdict)", "none (no verdict)"},
		{"untested", res(TargetCPU, StatusUntested, cpuRT, 0), EvidenceNone, "none (no verdict)", "none (no verdict)"},
	}
	for _, tt := range tests {
		e := EvidenceOf(tt.r)
		if e.Kind != tt.kind || e.Short() != tt.short || e.Sentence() != tt.sentence {
			t.Errorf("%s: %s / %q / %q, want %s / %q / %q", tt.name, e.Kind, e.Short(), e.Sentence(), tt.kind, tt.short, tt.sentence)
		}
		if e.Kind != EvidenceMeasured && (e.Target != "" || e.Device != "" || e.Runtime != "" || e.At != nil) {
			t.Errorf("%s: %+v says where and when without a measurement", tt.name, e)
		}
	}
	e := EvidenceOf(res(TargetCPU, StatusPass, cpuRT, 1))
	if e.Target != TargetCPU || e.Runtime != "cpu~2.15.0_2Bcpu~~5.23.0~1.4.0" || !e.At.Equal(at) || e.At.Location() != time.UTC {
		t.Errorf("cpu pass: %+v", e)
	}
}

// TestEvidencePredictedWords: the predicted tier's words (nothing
// predicts a verdict yet: issue 36's kernel table will).
func TestEvidencePredictedWords(t *testing.T) {
	e := Evidence{Kind: EvidencePredicted, Target: TargetTPU, From: "TorchTPU 0.2.0's kernel table"}
	if got, want := e.Sentence(), "predicted from TorchTPU 0.2.0's kernel table"; got != want {
		t.Errorf("Sentence = %q, want %q", got, want)
	}
	if got := (Evidence{Kind: EvidencePredicted}).Short(); got != "predicted" {
		t.Errorf("Short = %q", got)
	}
}

// TestEventEvidence: a feed event's evidence is its result's: its target,
// device and device count, runtime and time (the count unknown when its
// result is gone).
func TestEventEvidence(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	e := Event{Target: TargetTPU, Kind: EventRegression, FromStatus: StatusPass, ToStatus: StatusFail, At: at,
		Runtime: Runtime{Torch: "2.15.0", TorchTPU: "0.2.0", Device: "TPU v6e", DeviceCount: 8}}
	if got, want := EvidenceOfEvent(e).Sentence(), "measured on TPU v6e with torch 2.15.0, torch_tpu 0.2.0 on 2026-11-30"; got != want {
		t.Errorf("event evidence = %q, want %q", got, want)
	}
	e.DevicesUsed = 4
	if got, want := EvidenceOfEvent(e).Sentence(), "measured on 4 × TPU v6e with torch 2.15.0, torch_tpu 0.2.0 on 2026-11-30"; got != want {
		t.Errorf("event evidence = %q, want %q", got, want)
	}
	if got := EvidenceOfEvent(e).DeviceCount; got != 4 {
		t.Errorf("device count %d, want 4", got)
	}
	e.ToStatus = StatusSkipped
	if got := EvidenceOfEvent(e).Kind; got != EvidenceNone {
		t.Errorf("a skip's evidence = %s", got)
	}
}

// TestEvidenceJSON: each tier marshals its own fields only.
func TestEvidenceJSON(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		e    Evidence
		want string
	}{
		{EvidenceOf(nil), `{"kind":"none"}`},
		{EvidenceOf(&Result{Target: TargetTPU, Status: StatusPass, DevicesUsed: 1, TestedAt: at,
			Runtime: Runtime{Torch: "2.15.0", TorchTPU: "0.2.0", Device: "TPU v6e"}}),
			`{"kind":"measured","target":"tpu","device":"TPU v6e","device_count":1,"runtime":"tpu~2.15.0~0.2.0~~","at":"2026-11-30T12:00:00Z"}`},
		{Evidence{Kind: EvidencePredicted, Target: TargetTPU, From: "x"}, `{"kind":"predicted","target":"tpu","from":"x"}`},
	} {
		b, err := json.Marshal(tt.e)
		if err != nil || string(b) != tt.want {
			t.Errorf("json = %s (%v), want %s", b, err, tt.want)
		}
	}
}

// TestModeEvidence: a mode's verdict rests on the run that measured it,
// whatever the inference verdict's; a mode not run or skipped rests on none.
func TestModeEvidence(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r := &Result{Target: TargetCPU, Status: StatusError, TestedAt: at, DevicesUsed: 1,
		Runtime: Runtime{Torch: "2.15.0", Device: "cpu"},
		Modes:   map[string]Verdict{ModeTrain: {Status: StatusPass}, ModeCompiled: {Status: StatusSkipped}}}
	if e := EvidenceOfMode(r, ModeTrain); e.Kind != EvidenceMeasured || e.Target != TargetCPU || e.Device != "cpu" || e.At == nil {
		t.Errorf("train on cpu: %+v", e)
	}
	if EvidenceOf(r).Kind != EvidenceNone {
		t.Errorf("the result's own error rests on %s", EvidenceOf(r).Kind)
	}
	for _, m := range []string{ModeCompiled, ModeEager} {
		if e := EvidenceOfMode(r, m); e.Kind != EvidenceNone {
			t.Errorf("%s: %+v, want none", m, e)
		}
	}
	if e := EvidenceOfMode(nil, ModeTrain); e.Kind != EvidenceNone {
		t.Errorf("no result: %+v", e)
	}
}
