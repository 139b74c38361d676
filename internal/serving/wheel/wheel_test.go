package wheel

import (
	"archive/zip"
	"context"
	"errors"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// python is the project's interpreter (any Python 3 reads a wheel), or the
// test ends through testenv.Missing.
func python(t *testing.T) string {
	t.Helper()
	py := harness.DefaultPython(config.CacheHome(os.LookupEnv))
	if _, err := exec.LookPath(py); err != nil {
		testenv.Missing(t, "no Python interpreter (%s): run scripts/pyenv.sh", py)
	}
	return py
}

// writeWheel writes a zip holding files, as a wheel.
func writeWheel(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for name, body := range files {
		w, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// fakeRegistry has vLLM's registry shapes: multi-line tuples, comments, a
// comprehension spread into a table, tables spread into a union, a table
// of versions, and code around them (never run: nothing is imported).
const fakeRegistry = `
import torch.nn as nn  # not importable here, and not imported
from vllm import envs

_TEXT_GENERATION_MODELS = {
    # [Decoder-only]
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "Qwen3ForCausalLM": (
        "qwen3",
        "Qwen3ForCausalLM",
    ),
    "Odd": ("odd",),
}
_EMBEDDING_MODELS = {
    "BertModel": ("bert", "BertEmbeddingModel"),
    **{
        k: (mod, arch)
        for k, (mod, arch) in _TEXT_GENERATION_MODELS.items()
        if arch == "LlamaForCausalLM"
    },
}
_LATE_INTERACTION_MODELS = {}
_REWARD_MODELS = {}
_TOKEN_CLASSIFICATION_MODELS = {}
_SEQUENCE_CLASSIFICATION_MODELS = {}
_MULTIMODAL_MODELS = {
    "Gemma3ForConditionalGeneration": ("gemma3_mm", "Gemma3ForConditionalGeneration"),
}
_SPECULATIVE_DECODING_MODELS = {"EagleLlamaForCausalLM": ("llama_eagle", "EagleLlamaForCausalLM")}
_TRANSFORMERS_SUPPORTED_MODELS = {"Olmo2ForCausalLM": ("transformers", "TransformersForCausalLM")}
_VLLM_MODELS = {**_TEXT_GENERATION_MODELS, **_EMBEDDING_MODELS}
_PREVIOUSLY_SUPPORTED_MODELS = {"MPTForCausalLM": "0.28.0"}

class ModelRegistry:
    def load(self):
        raise RuntimeError("never run")
`

func TestReadWheel(t *testing.T) {
	py := python(t)
	dir := t.TempDir()
	w := filepath.Join(dir, "vllm_torchtpu-1.2.3-cp312-cp312-manylinux_2_28_x86_64.whl")
	writeWheel(t, w, map[string]string{
		"vllm/model_executor/models/registry.py": fakeRegistry,
		"vllm/_version.py":                       "__version__ = version = '1.2.0'\n",
	})
	r, err := ReadWheel(context.Background(), py, w, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]compat.ServingKind{"LlamaForCausalLM": compat.ServingGeneration, "Qwen3ForCausalLM": compat.ServingGeneration,
		"BertModel": compat.ServingPooling, "Gemma3ForConditionalGeneration": compat.ServingMultimodal, "Olmo2ForCausalLM": compat.ServingGeneration}
	if len(r.Archs) != len(want) {
		t.Errorf("archs %v, want %v", r.Archs, want)
	}
	for a, k := range want {
		if r.Archs[a] != k {
			t.Errorf("%s: %q, want %q", a, r.Archs[a], k)
		}
	}
	if r.Version != "1.2.3" || r.VLLMVersion != "1.2.0" {
		t.Errorf("versions %q, %q", r.Version, r.VLLMVersion)
	}

	bad := filepath.Join(dir, "bad.whl")
	writeWheel(t, bad, map[string]string{"vllm/__init__.py": ""})
	if _, err := ReadWheel(context.Background(), py, bad, "1.2.3"); err == nil || !strings.Contains(err.Error(), "registry.py") {
		t.Errorf("a wheel without the registry: %v", err)
	}
	renamed := filepath.Join(dir, "renamed.whl")
	writeWheel(t, renamed, map[string]string{"vllm/model_executor/models/registry.py": strings.ReplaceAll(fakeRegistry, "_MULTIMODAL_MODELS", "_MM_MODELS")})
	if _, err := ReadWheel(context.Background(), py, renamed, "1.2.3"); err == nil || !strings.Contains(err.Error(), "_MULTIMODAL_MODELS") {
		t.Errorf("a registry without a table: %v", err)
	}
}

// fakePip writes a stand-in interpreter whose "-m pip download … -d DIR
// SPEC" writes a wheel named after SPEC into DIR and logs its arguments.
func fakePip(t *testing.T, fail bool) (py, log string) {
	t.Helper()
	dir := t.TempDir()
	py, log = filepath.Join(dir, "python"), filepath.Join(dir, "args")
	script := `#!/bin/sh
echo "$@" >> ` + log + `
while [ $# -gt 1 ]; do
  if [ "$1" = "-d" ]; then d="$2"; fi
  shift
done
`
	if fail {
		script += "echo 'ERROR: No matching distribution found' >&2; exit 1\n"
	} else {
		script += `v="${1#*==}"; : > "$d/vllm_torchtpu-$v-cp312-cp312-manylinux_2_28_x86_64.whl"` + "\n"
	}
	if err := os.WriteFile(py, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return py, log
}

func TestWheelFetchesOnceThenCaches(t *testing.T) {
	py, log := fakePip(t, false)
	home := t.TempDir()
	w, err := Wheel(context.Background(), py, home, "0.29.0")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, "vllm-torchtpu", "0.29.0", "vllm_torchtpu-0.29.0-cp312-cp312-manylinux_2_28_x86_64.whl"); w != want {
		t.Errorf("wheel %s, want %s", w, want)
	}
	args, _ := os.ReadFile(log)
	for _, want := range []string{"-m pip download", "--no-deps", "--only-binary=:all:", "--python-version 3.12",
		"--platform manylinux_2_28_x86_64", "vllm-torchtpu==0.29.0"} {
		if !strings.Contains(string(args), want) {
			t.Errorf("pip ran with %q, lacking %q", args, want)
		}
	}
	if _, err := Wheel(context.Background(), py, home, "0.29.0"); err != nil {
		t.Fatal(err)
	}
	if args2, _ := os.ReadFile(log); string(args2) != string(args) {
		t.Errorf("a cached wheel was fetched again: %q", args2)
	}
	// another version is another folder, fetched on its own
	w2, err := Wheel(context.Background(), py, home, "0.30.0")
	if err != nil || !strings.Contains(w2, filepath.Join("vllm-torchtpu", "0.30.0")) {
		t.Errorf("0.30.0: %s, %v", w2, err)
	}
}

func TestWheelFetchFails(t *testing.T) {
	py, _ := fakePip(t, true)
	home := t.TempDir()
	_, err := Wheel(context.Background(), py, home, "0.29.0")
	if err == nil || !strings.Contains(err.Error(), "No matching distribution") {
		t.Fatalf("err %v, want pip's reason", err)
	}
	left, _ := os.ReadDir(filepath.Join(home, "vllm-torchtpu"))
	if len(left) != 0 {
		t.Errorf("a failed fetch left %v", left)
	}
}

// TestRealWheel fetches the pinned release's wheel from the package index
// (once: it is kept under the scanner's cache folder, as in production)
// and reads the real registry.
func TestRealWheel(t *testing.T) {
	py := python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	home := config.CacheHome(os.LookupEnv)
	w, err := Wheel(ctx, py, home, serving.Version)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			testenv.Missing(t, "the package index is unreachable: %v", err)
		}
		t.Fatal(err)
	}
	r, err := ReadWheel(ctx, py, w, serving.Version)
	if err != nil {
		t.Fatal(err)
	}
	for arch, kind := range map[string]compat.ServingKind{
		"LlamaForCausalLM": compat.ServingGeneration, "Qwen3ForCausalLM": compat.ServingGeneration, "Gemma3ForConditionalGeneration": compat.ServingMultimodal,
		"Qwen2ForCausalLM": compat.ServingGeneration, "BertModel": compat.ServingPooling, "Qwen2VLForConditionalGeneration": compat.ServingMultimodal,
		"Olmo2ForCausalLM": compat.ServingGeneration,
	} {
		if got := r.Archs[arch]; got != kind {
			t.Errorf("%s: %q, want %q", arch, got, kind)
		}
	}
	for _, arch := range []string{"BartForConditionalGeneration", "MPTForCausalLM", "EagleLlamaForCausalLM", "TransformersForCausalLM"} {
		if k, ok := r.Archs[arch]; ok {
			t.Errorf("%s: %q, want not served (out of tree, removed, a draft, a backend class)", arch, k)
		}
	}
	if len(r.Archs) < 250 || r.VLLMVersion != serving.Version {
		t.Errorf("%d architectures, vLLM %q", len(r.Archs), r.VLLMVersion)
	}
	t.Logf("%s %s: vLLM %s, %d architectures", serving.Package, serving.Version, r.VLLMVersion, len(r.Archs))
}
