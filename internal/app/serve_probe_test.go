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
