package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// hfScript drives the real huggingface_hub client. Offline ("read"): it
// resolves files of the scanner's cache the way transformers does.
// Online ("download"): it mirrors the repo from the fake Hub with
// snapshot_download (model info, the paginated tree listing, every file).
const hfScript = `
import json, os, sys
import huggingface_hub
from huggingface_hub import hf_hub_download, snapshot_download
mode, repo, sha = sys.argv[1], sys.argv[2], sys.argv[3]
out = {"version": huggingface_hub.__version__}
if mode == "read":
    out["config_at_sha"] = hf_hub_download(repo, "config.json", revision=sha, local_files_only=True)
    out["weights_at_main"] = hf_hub_download(repo, "model.safetensors")  # HF_HUB_OFFLINE: refs/main
    out["snapshot_at_main"] = snapshot_download(repo, local_files_only=True)
    out["snapshot_at_sha"] = snapshot_download(repo, revision=sha, local_files_only=True)
else:
    out["snapshot"] = snapshot_download(repo)
print(json.dumps(out))
`

// runHF runs hfScript with the given environment and decodes its answer.
func runHF(t *testing.T, py string, env []string, args ...string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, append([]string{"-c", hfScript}, args...)...)
	cmd.Env = append(os.Environ(), append([]string{"HF_HOME=" + t.TempDir(), "HF_HUB_DISABLE_TELEMETRY=1",
		"HF_TOKEN=", "HF_HUB_DISABLE_PROGRESS_BARS=1"}, env...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("huggingface_hub %v: %v\n%s", args, err, stderr.String())
	}
	got := map[string]string{}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("huggingface_hub said %q: %v\n%s", out, err, stderr.String())
	}
	t.Logf("huggingface_hub %s %v: %s", got["version"], args[0], out)
	return got
}

// TestHuggingFaceHubBothWays checks the scanner's Hub cache against the
// real huggingface_hub client, both ways: huggingface_hub reads, offline,
// the cache `scanner scan` filled; and `scanner scan --source cache` scans,
// offline, a cache huggingface_hub's snapshot_download filled from the fake
// Hub (through its paginated tree listing).
func TestHuggingFaceHubBothWays(t *testing.T) {
	py := hubtest.FindPython()
	if py == "" {
		t.Skip("no project Python: set SCANNER_PYTHON to the venv's interpreter (make test does)")
	}
	const id = "interop/tiny-llama"
	repo := configRepo(id, "llama", "text-generation", 100)
	weights := bytes.Repeat([]byte("tiny weights "), 3000)
	repo.Files["model.safetensors"] = weights
	repo.Files["tokenizer.json"] = []byte(`{"version": "1.0"}`)
	repo.Files["1_Pooling/config.json"] = []byte(`{"pooling_mode_mean_tokens": true}`)
	repo.Files["pytorch_model.bin"] = []byte("pickle: huggingface_hub fetches it, the scanner never does")
	repo.LFS = map[string]bool{"model.safetensors": true, "pytorch_model.bin": true}
	h := hubtest.New(t, repo)
	sha := h.SHA(id)
	dir := t.TempDir()

	t.Run("huggingface_hub reads the scanner's cache offline", func(t *testing.T) {
		cache := filepath.Join(dir, "scanner-cache")
		args := append(standinArgs(t, h, filepath.Join(dir, "a.db"), cache), "--model", id, "--mode", "full")
		var stdout, stderr bytes.Buffer
		if code := runWithEnv(t, args, &stdout, &stderr); code != 0 {
			t.Fatalf("scanner scan: %d\n%s", code, stderr.String())
		}
		got := runHF(t, py, []string{"HF_HUB_CACHE=" + cache, "HF_HUB_OFFLINE=1"}, "read", id, sha)
		snap := hub.SnapshotDir(cache, id, sha)
		want := map[string]string{"config_at_sha": filepath.Join(snap, "config.json"), "weights_at_main": filepath.Join(snap, "model.safetensors"),
			"snapshot_at_main": snap, "snapshot_at_sha": snap}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s = %q, want %q", k, got[k], w)
			}
		}
		if b, err := os.ReadFile(got["weights_at_main"]); err != nil || !bytes.Equal(b, weights) {
			t.Errorf("the weights huggingface_hub found differ (%v)", err)
		}
	})

	t.Run("the scanner scans a cache huggingface_hub made", func(t *testing.T) {
		cache := filepath.Join(dir, "hf-cache")
		h.SetPageSize(2) // the tree listing comes in pages: the client follows the Link header
		h.ResetLog()
		got := runHF(t, py, []string{"HF_HUB_CACHE=" + cache, "HF_ENDPOINT=" + h.URL()}, "download", id, sha)
		if snap := hub.SnapshotDir(cache, id, sha); got["snapshot"] != snap {
			t.Fatalf("snapshot_download = %q, want %q", got["snapshot"], snap)
		}
		var treePages int
		for _, r := range h.Requests() {
			if strings.Contains(r.Path, "/tree/") {
				treePages++
			}
		}
		if treePages < 3 {
			t.Errorf("%d tree requests, want the 3+ pages of a 6-entry tree at 2 a page", treePages)
		}
		db := filepath.Join(dir, "b.db")
		args := standinArgs(t, h, db, cache)
		for i, a := range args {
			if a == h.URL() {
				args[i] = "http://127.0.0.1:1" // offline: nothing listens there
			}
		}
		args = append(args, "--source", "cache")
		var stdout, stderr bytes.Buffer
		if code := runWithEnv(t, args, &stdout, &stderr); code != 0 {
			t.Fatalf("scanner scan --source cache: %d\n%s", code, stderr.String())
		}
		st, err := store.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		r, err := st.LatestResult(context.Background(), id, compat.TargetCPU)
		if err != nil || r.Status != compat.StatusPass || r.Revision != sha {
			t.Fatalf("result %s @ %s (%v), want pass @ %s\n%s", r.Status, r.Revision, err, sha, stderr.String())
		}
	})
}
