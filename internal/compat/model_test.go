package compat

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

func TestRepro(t *testing.T) {
	for _, tc := range []struct {
		id, revision string
		target       Target
		mode         Mode
		want         string
	}{
		{"org/m", "abc123", TargetTPU, ModeFull, "scanner probe org/m --revision abc123 --target tpu --mode full"},
		{"gpt2", "", TargetCPU, "", "scanner probe gpt2 --target cpu"},
		{"org/m", "", TargetCUDA, ModeArch, "scanner probe org/m --target cuda --mode arch"},
		{"org/m", "abc", TargetTPU, "", "scanner probe org/m --revision abc --target tpu"},
	} {
		if got := Repro(tc.id, tc.revision, tc.target, tc.mode); got != tc.want {
			t.Errorf("Repro(%q, %q, %q, %q) = %q, want %q", tc.id, tc.revision, tc.target, tc.mode, got, tc.want)
		}
	}
	for _, tc := range []struct {
		devices int
		want    string
	}{
		{0, "scanner probe org/m --revision abc --target tpu --mode full"},
		{1, "scanner probe org/m --revision abc --target tpu --mode full"},
		{4, "scanner probe org/m --revision abc --target tpu --mode full --devices 4"},
	} {
		if got := ReproOn("org/m", "abc", TargetTPU, ModeFull, tc.devices); got != tc.want {
			t.Errorf("ReproOn(..., %d) = %q, want %q", tc.devices, got, tc.want)
		}
	}
}

// TestReproHasNoCopies: repro commands are written by Repro and ReproOn
// alone; no other source builds one (the harness leaves its result's
// repro for the runner, the runner appends nothing to it).
func TestReproHasNoCopies(t *testing.T) {
	for _, c := range testenv.Copies(t, []string{".go"}, []string{"internal/compat/compat.go"}, `"scanner probe "`, `" --devices "`) {
		t.Errorf("%s: a repro command built outside compat.ReproOn", c)
	}
	for _, c := range testenv.Copies(t, []string{".py"}, nil, "scanner probe") {
		t.Errorf("%s: the harness writes a repro command (compat.ReproOn is its one writer)", c)
	}
}

func TestModelStatus(t *testing.T) {
	if got := (Model{ID: "m"}).ModelStatus(); got != StatusUntested {
		t.Errorf("no result: %q, want untested", got)
	}
	if got := (Model{ID: "m", Result: &Result{Status: StatusOOM}}).ModelStatus(); got != StatusOOM {
		t.Errorf("an oom result: %q, want oom", got)
	}
}

// TestTrainVerdict: Result.Train is the matrix's train verdict, a copy.
func TestTrainVerdict(t *testing.T) {
	if v := (Result{}).Train(); v != nil {
		t.Errorf("no matrix: %+v, want nil", v)
	}
	if v := (Result{Modes: map[string]Verdict{ModeCompiled: {Status: StatusPass}}}).Train(); v != nil {
		t.Errorf("a matrix without train: %+v, want nil", v)
	}
	r := Result{Modes: map[string]Verdict{ModeTrain: {Status: StatusFail}, ModeCompiled: {Status: StatusPass}}}
	v := r.Train()
	if v == nil || v.Status != StatusFail {
		t.Fatalf("train fail: %+v", v)
	}
	v.Status = StatusPass
	if r.Modes[ModeTrain].Status != StatusFail {
		t.Error("Train returned the matrix's own verdict, not a copy")
	}
}

// TestTrainChange: a train event is a regression or a fix of the train
// verdict, nothing else (ClassifyChange's words, the train kinds).
func TestTrainChange(t *testing.T) {
	for _, tc := range []struct {
		last, new Status
		want      EventKind
		ok        bool
	}{
		{StatusPass, StatusFail, EventTrainRegression, true},
		{StatusPass, StatusCrash, EventTrainRegression, true},
		{StatusTimeout, StatusPass, EventTrainFix, true},
		{StatusFail, StatusPass, EventTrainFix, true},
		{"", StatusPass, "", false},
		{"", StatusFail, "", false},
		{StatusError, StatusPass, "", false},
		{StatusFail, StatusOOM, "", false},
		{StatusPass, StatusPass, "", false},
		{StatusPass, StatusSkipped, "", false},
	} {
		kind, ok := TrainChange(tc.last, tc.new)
		if kind != tc.want || ok != tc.ok {
			t.Errorf("TrainChange(%q, %q) = %q, %v; want %q, %v", tc.last, tc.new, kind, ok, tc.want, tc.ok)
		}
	}
	matched := 0
	for _, k := range EventKinds {
		want := k == EventTrainRegression || k == EventTrainFix
		if got := (Event{Kind: k}).Train(); got != want {
			t.Errorf("Event{Kind: %q}.Train() = %v, want %v", k, got, want)
		}
		if want {
			matched++
		}
	}
	if matched != 2 {
		t.Errorf("%d train kinds in EventKinds, want 2", matched)
	}
}

// TestValidateSharding: a sharded result names tp or fsdp and ran on two
// devices or more; devices_used is 0 (not reported) to 65536.
func TestValidateSharding(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sharding *Sharding
		devices  int
		field    string // "" when valid
	}{
		{"one device", nil, 1, ""},
		{"not reported", nil, 0, ""},
		{"tp on 2", Ptr(ShardingTP), 2, ""},
		{"fsdp on 8", Ptr(ShardingFSDP), 8, ""},
		{"fsdp on 65536", Ptr(ShardingFSDP), 1 << 16, ""},
		{"tp on 1", Ptr(ShardingTP), 1, "sharding"},
		{"fsdp on 0", Ptr(ShardingFSDP), 0, "sharding"},
		{"unknown sharding", Ptr(Sharding("pp")), 4, "sharding"},
		{"empty sharding", Ptr(Sharding("")), 4, "sharding"},
		{"negative devices", nil, -1, "devices_used"},
		{"65537 devices", nil, 1<<16 + 1, "devices_used"},
	} {
		r := good()
		r.Sharding, r.DevicesUsed = tc.sharding, tc.devices
		wantRefused(t, tc.name, r.Validate(), tc.field)
	}
}
