package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// readinessRepos: a probe that hangs (so the models after it stay
// untested while the scan runs), a Llama and a Mixtral with their real
// sizes (untested), a gated model and one with custom code (skipped before
// any download). The Hub's safetensors counts are given for all but the
// Mixtral, whose parameters readiness estimates from its config.
func readinessRepos() []hubtest.Repo {
	cfgRepo := func(id string, downloads int64, cfg map[string]any, st map[string]int64) hubtest.Repo {
		b, _ := json.Marshal(cfg)
		return hubtest.Repo{ID: id, PipelineTag: "text-generation", Library: "transformers", Downloads: downloads,
			Tags: []string{"transformers"}, Config: map[string]any{"architectures": cfg["architectures"], "model_type": cfg["model_type"]},
			Files: map[string][]byte{"config.json": b}, Safetensors: st}
	}
	llama := map[string]any{"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama", "hidden_size": 2048,
		"intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
		"max_position_embeddings": 131072, "vocab_size": 128256, "tie_word_embeddings": true, "torch_dtype": "bfloat16"}
	mixtral := map[string]any{"architectures": []string{"MixtralForCausalLM"}, "model_type": "mixtral", "hidden_size": 4096,
		"intermediate_size": 14336, "max_position_embeddings": 32768, "num_attention_heads": 32, "num_experts_per_tok": 2,
		"num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8, "vocab_size": 32000, "tie_word_embeddings": false}
	gated := cfgRepo("meta/gated-llama", 800, llama, map[string]int64{"BF16": 8030261248})
	gated.Gated = "manual"
	custom := cfgRepo("acme/custom-net", 700, llama, map[string]int64{"BF16": 7000000000})
	custom.Tags = append(custom.Tags, "custom_code")
	custom.Config["auto_map"] = map[string]any{"AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"}
	return []hubtest.Repo{
		cfgRepo("tiny/hang-first", 1000, llama, nil),
		cfgRepo("tiny/llama", 900, llama, map[string]int64{"BF16": 1235814400}),
		gated,
		custom,
		cfgRepo("tiny/mixtral", 600, mixtral, nil),
	}
}

// TestReadinessEndToEnd runs the real scan command (with the stand-in
// harness) against the fake Hub, stops it while the first probe hangs, and
// reads readiness through the served API: the untested models (prepared,
// not yet probed) and the skipped ones (gated, custom code) all have one,
// with the numbers and hints their metadata allows.
func TestReadinessEndToEnd(t *testing.T) {
	h := hubtest.New(t, readinessRepos()...)
	dir := t.TempDir()
	db, cache := filepath.Join(dir, "scanner.db"), filepath.Join(dir, "hub")
	args := append(standinArgs(t, h, db, cache), "--probe-grace", "1s")
	cmd, out := scannerProcess(t, args...)
	testenv.EventuallyShowing(t, "readiness for every model", 60*time.Second, func() bool { return readinessWritten(db, 5, 2) }, out.String)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	base := serveForTest(t, db, h.URL())
	var list struct {
		Models []compat.Model `json:"models"`
	}
	getJSON(t, base+"/api/v1/models?target=cpu", &list)
	byID := map[string]compat.Model{}
	for _, m := range list.Models {
		byID[m.ID] = m
	}
	want := map[string]struct {
		status  compat.Status
		params  int64
		source  string
		devices bool // min_devices computed (config.json was read)
		hints   []string
	}{
		// Llama-3.2-1B's sizes; its checkpoint's count from the Hub; 1 v6e (internal/readiness pins it).
		"tiny/llama": {compat.StatusUntested, 1235814400, readiness.SourceSafetensors, true, []string{readiness.HintSmallHeadDim}},
		// Mixtral-8x7B's sizes: 46,702,792,704 estimated, 4 v6e devices.
		"tiny/mixtral": {compat.StatusUntested, 46702792704, readiness.SourceConfig, true,
			[]string{readiness.HintNeedsSharding, readiness.HintMoEDynamicRouting}},
		"meta/gated-llama": {compat.StatusSkipped, 8030261248, readiness.SourceSafetensors, false, []string{readiness.HintConfigIncomplete}},
		"acme/custom-net": {compat.StatusSkipped, 7000000000, readiness.SourceSafetensors, false,
			[]string{readiness.HintRemoteCode, readiness.HintConfigIncomplete}},
	}
	for id, w := range want {
		m, ok := byID[id]
		if !ok {
			t.Errorf("%s not listed", id)
			continue
		}
		r := m.Readiness
		if m.ModelStatus() != w.status {
			t.Errorf("%s: status %s, want %s", id, m.ModelStatus(), w.status)
		}
		if r == nil || r.Params == nil || *r.Params != w.params || r.ParamsSource == nil || *r.ParamsSource != w.source ||
			(r.MinDevices != nil) != w.devices {
			t.Errorf("%s: readiness %+v", id, r)
			continue
		}
		var codes []string
		for _, h := range r.Hints {
			codes = append(codes, h.Code)
		}
		if !slices.Equal(codes, w.hints) {
			t.Errorf("%s: hints %v, want %v", id, codes, w.hints)
		}
	}
	if r := byID["tiny/mixtral"].Readiness; r == nil || r.MinDevices["v6e"] != 4 {
		t.Errorf("mixtral devices: %+v", r)
	}
	var moe struct {
		Models []compat.Model `json:"models"`
	}
	getJSON(t, base+"/api/v1/models?hint=moe_dynamic_routing", &moe)
	if len(moe.Models) != 1 || moe.Models[0].ID != "tiny/mixtral" {
		t.Errorf("?hint=moe_dynamic_routing: %v", moe.Models)
	}
}

// readinessWritten reports whether the database has readiness for at least
// n models and results (the skipped ones) for at least results.
func readinessWritten(db string, n, results int) bool {
	st, err := store.Open(context.Background(), db)
	if err != nil {
		return false
	}
	defer st.Close()
	models, _, err := st.ListModels(context.Background(), store.ModelQuery{Limit: 100, Target: compat.TargetCPU})
	if err != nil {
		return false
	}
	have, got := 0, 0
	for _, m := range models {
		if m.Readiness != nil {
			have++
		}
		if m.Result != nil {
			got++
		}
	}
	return have >= n && got >= results
}
