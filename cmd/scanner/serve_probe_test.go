package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
)

// `scanner probe MODEL --vllm-python PATH` prints the probe's result beside
// the serving probe's: an arch-mode probe has no weights for vLLM, so the
// serving half says why, and the command does not pass.
func TestProbeWithVLLMPython(t *testing.T) {
	h := hubtest.New(t, llamaRepos("probe/model")...)
	dir := t.TempDir()
	kept := probeArgs(standinArgs(t, h, filepath.Join(dir, "never.db"), filepath.Join(dir, "hub")), "probe/model",
		"--json", "--vllm-python", "/nonexistent/vllm/python")
	var out, errOut bytes.Buffer
	if code := runWithEnv(t, kept, &out, &errOut); code != 1 {
		t.Fatalf("exit %d, want 1:\n%s%s", code, out.String(), errOut.String())
	}
	var got struct {
		Result  compat.Result   `json:"result"`
		Serving json.RawMessage `json:"serving"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("not {result, serving}: %v\n%s", err, out.String())
	}
	if got.Result.Status != compat.StatusPass || string(got.Serving) != "null" {
		t.Errorf("result %s, serving %s", got.Result.Status, got.Serving)
	}
	if !strings.Contains(errOut.String(), "serving probe needs the real weights") {
		t.Errorf("stderr does not say why: %s", errOut.String())
	}
}
