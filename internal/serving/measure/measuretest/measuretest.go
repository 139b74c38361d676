// Package measuretest gives tests the stand-in vLLM
// (internal/harness/testdata/fake_vllm) as a --vllm-python would give the
// real one, and model folders that tell it how to behave.
package measuretest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// VLLMPython is an interpreter that imports the stand-in vllm before
// anything installed.
func VLLMPython(t *testing.T) string {
	t.Helper()
	py := harness.DefaultPython(config.CacheHome(os.LookupEnv))
	if _, err := exec.LookPath(py); err != nil {
		testenv.Missing(t, "no Python interpreter (%s): run scripts/pyenv.sh", py)
	}
	_, file, _, _ := runtime.Caller(0)
	site := filepath.Join(filepath.Dir(file), "..", "..", "..", "harness", "testdata", "fake_vllm", "site")
	w := filepath.Join(t.TempDir(), "python")
	script := "#!/bin/sh\nPYTHONPATH=" + site + " exec " + py + " \"$@\"\n"
	if err := os.WriteFile(w, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// ModelDir is a model folder telling the stand-in how to behave (see
// fake_vllm's vllm/__init__.py): "ok", "other_tokens", "load_error", ...;
// tokens are what it generates.
func ModelDir(t *testing.T, behaviour string, tokens []int) string {
	t.Helper()
	dir := t.TempDir()
	WriteSpec(t, dir, behaviour, tokens)
	return dir
}

// WriteSpec writes the stand-in's fake_vllm.json into dir.
func WriteSpec(t *testing.T, dir, behaviour string, tokens []int) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"behaviour": behaviour, "tokens": tokens})
	if err := os.WriteFile(filepath.Join(dir, "fake_vllm.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}
