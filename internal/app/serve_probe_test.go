package app

import (
	"context"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/config"
)

// The serving probe runs on a full-mode probe's snapshot only, and says
// why not otherwise (the probe itself is measure's tests').
func TestServeProbeRefuses(t *testing.T) {
	cfg := config.Config{VLLMPython: "/nonexistent/python", CacheDir: t.TempDir()}
	arch := compat.Result{Mode: compat.Ptr(compat.ModeArch), Revision: "abc"}
	full := compat.Result{Mode: compat.Ptr(compat.ModeFull), Revision: "abc"}
	for _, tt := range []struct {
		cfg  config.Config
		res  compat.Result
		want string
	}{
		{config.Config{}, full, "no --vllm-python"},
		{cfg, arch, "ran in arch mode (pass --mode full)"},
		{cfg, compat.Result{}, "ran in no mode"},
		{cfg, full, "needs the model's snapshot"},
	} {
		if _, err := ServeProbe(context.Background(), tt.cfg, "org/m", tt.res); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.res.Mode, err, tt.want)
		}
	}
}

// An inference probe whose float32 CPU reference failed leaves the
// serving probe nothing to hold vLLM to: it is not run (no interpreter, no
// snapshot needed) and its verdict is not judged, never a pass or a fail.
func TestServeProbeWithoutReference(t *testing.T) {
	cfg := config.Config{VLLMPython: "/nonexistent/python", CacheDir: t.TempDir()}
	res := compat.Result{Mode: compat.Ptr(compat.ModeFull), Revision: "abc", Status: compat.StatusError,
		Signature: compat.Ptr("reference:forward"), DevicesUsed: 3}
	m, err := ServeProbe(context.Background(), cfg, "org/m", res)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != string(compat.StatusSkipped) || m.Reason == nil || *m.Reason != compat.ServingReasonNoReference ||
		m.TensorParallelSize != 4 || m.Message == nil || !strings.Contains(*m.Message, "reference:forward") {
		t.Errorf("%+v", m)
	}
}
