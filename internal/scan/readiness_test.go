package scan

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
)

// Llama-3.2-1B's sizes (internal/readiness/testdata/configs): 32,768 B of KV
// cache per token; 1,235,814,400 parameters.
const llama1BConfig = `{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":2048,
"intermediate_size":8192,"num_hidden_layers":16,"num_attention_heads":32,"num_key_value_heads":8,"head_dim":64,
"max_position_embeddings":131072,"vocab_size":128256,"tie_word_embeddings":true,"torch_dtype":"bfloat16"}`

func (f *fixture) readiness(t *testing.T, id string) *readiness.Readiness {
	t.Helper()
	m, err := f.store.GetModel(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	return m.Readiness
}

func codes(r *readiness.Readiness) []string {
	var out []string
	for _, h := range r.Hints {
		out = append(out, h.Code)
	}
	return out
}

// Every listed model gets a readiness: from config.json where the scan read
// it, from the listing's summary and safetensors counts where it did not
// (skipped at listing, gated); a later scan that tests nothing keeps the one
// computed from config.json; a new revision recomputes it.
func TestScanStoresReadiness(t *testing.T) {
	custom := model("org/custom", "text-generation", "transformers", "custom_code")
	custom.Config = map[string]any{"architectures": []any{"XForCausalLM"}, "model_type": "x", "auto_map": map[string]any{"AutoModel": "m.X"}}
	custom.Safetensors = map[string]int64{"BF16": 7000000000}
	gated := model("org/gated", "text-generation", "transformers")
	gated.Gated = true
	gated.Safetensors = map[string]int64{"BF16": 70000000000}
	llama := model("org/llama", "text-generation", "transformers")
	llama.Config = map[string]any{"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama"}
	f := newFixture(t, llama, custom, gated)
	f.hub.configs["org/llama"] = llama1BConfig
	opts := Options{Target: compat.TargetAuto, Mode: compat.ModeArch, Limit: 100}
	if _, err := f.s.Run(context.Background(), opts, Hooks{}); err != nil {
		t.Fatal(err)
	}

	r := f.readiness(t, "org/llama")
	if r == nil || deref(r.ParamsSource) != readiness.SourceConfig || *r.Params != 1235814400 ||
		r.KVBytesPerToken == nil || *r.KVBytesPerToken != 32768 || r.MinDevices["v6e"] != 1 {
		t.Fatalf("tested model: %+v", r)
	}
	r = f.readiness(t, "org/custom")
	if r == nil || *r.Params != 7000000000 || deref(r.ParamsSource) != readiness.SourceSafetensors || r.MinDevices != nil ||
		!slices.Equal(codes(r), []string{readiness.HintRemoteCode, readiness.HintConfigIncomplete}) {
		t.Fatalf("skipped at listing: %+v %v", r, codes(r))
	}
	r = f.readiness(t, "org/gated")
	if r == nil || *r.Params != 70000000000 || *r.WeightsBytesBF16 != 140000000000 || r.MinDevices != nil {
		t.Fatalf("gated: %+v", r)
	}
	if slices.Contains(f.hub.downloads, "org/custom") || slices.Contains(f.hub.downloads, "org/gated") {
		t.Errorf("readiness made requests for declined models: %v", f.hub.downloads)
	}

	// Nothing changed: no retest, no download; the readiness from config.json stays.
	f.hub.downloads = nil
	if _, err := f.s.Run(context.Background(), opts, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if len(f.hub.downloads) != 0 {
		t.Fatalf("second scan downloaded %v", f.hub.downloads)
	}
	if r := f.readiness(t, "org/llama"); r.KVBytesPerToken == nil || *r.Params != 1235814400 {
		t.Errorf("second scan lost the config's readiness: %+v", r)
	}

	// config.json in the Hub cache (here: put there by hand) is read without a request.
	snap := hub.SnapshotDir(f.s.CacheDir, "org/gated", gated.SHA)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "config.json"), []byte(llama1BConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	// A new revision of the llama recomputes its readiness from its new config.json.
	f.hub.models[0].SHA = "sha-llama-2"
	f.hub.configs["org/llama"] = `{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":2048,
"intermediate_size":8192,"num_hidden_layers":16,"num_attention_heads":32,"num_key_value_heads":8,"head_dim":64,
"max_position_embeddings":131072,"vocab_size":128256,"tie_word_embeddings":true,"torch_dtype":"float16"}`
	if _, err := f.s.Run(context.Background(), opts, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if r := f.readiness(t, "org/gated"); r.KVBytesPerToken == nil || *r.KVBytesPerToken != 32768 || r.MinDevices["v6e"] != 5 {
		// 140,000,000,000 + 32768·32768 = 141,073,741,824 × 1.1 / 32 GiB = 4.5 → 5
		t.Errorf("gated with a cached config.json: %+v", r)
	}
	if r := f.readiness(t, "org/llama"); !slices.Contains(codes(r), readiness.HintFP16Checkpoint) {
		t.Errorf("new revision's readiness not recomputed: %v", codes(r))
	}
}
