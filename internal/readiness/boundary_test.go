package readiness

import (
	"slices"
	"strings"
	"testing"
)

// The tests below pin the edges of the rules (a bound met exactly, a
// pattern of 1, a count just over half): each expectation is worked out by
// hand from the config's numbers, as in realConfigs.

// A KV cache of exactly maxKVPerToken (1 GiB) per token is still a model's;
// one layer more is not.
func TestKVPerTokenBound(t *testing.T) {
	cfg := func(layers float64) map[string]any {
		return map[string]any{
			"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama",
			"hidden_size": 4096.0, "intermediate_size": 4096.0, "num_hidden_layers": layers,
			"num_attention_heads": 1024.0, "num_key_value_heads": 1024.0, "head_dim": 1024.0,
			"vocab_size": 1024.0, "max_position_embeddings": 16.0,
		}
	}
	// 256 layers × 2 (K, V) × 1024 heads × 1024 head_dim × 2 bytes = 2^8 · 2^1 · 2^10 · 2^10 · 2^1 = 2^30.
	if r := Compute(Input{Config: cfg(256)}); deref(r.KVBytesPerToken) != int64(1<<30) {
		t.Errorf("256 layers: kv_bytes_per_token %v, want 1073741824 (exactly the bound)", deref(r.KVBytesPerToken))
	}
	// 257 layers: 1,077,936,128 bytes, over the bound.
	r := Compute(Input{Config: cfg(257)})
	if r.KVBytesPerToken != nil {
		t.Errorf("257 layers: kv_bytes_per_token %v, want none (over 1 GiB)", *r.KVBytesPerToken)
	}
	if h := hint(t, r, HintConfigIncomplete); !strings.Contains(h.Text, "kv_bytes_per_token") {
		t.Errorf("config_incomplete: %s", h.Text)
	}
}

// An unknown model_type's MLP is gated when its activation is SiLU, swish
// or SwiGLU, and plain otherwise.
func TestGuessedFamilyActivation(t *testing.T) {
	// H 256, I 512, L 2, h 4 (d 64, kv 4), V 1000, RMSNorm (rms_norm_eps), tied (the guess's default).
	// attention 256·256 + 2·256·256 + 256·256 = 262,144; norms 2·256 = 512.
	// gated MLP 3·256·512 = 393,216 → layer 655,872 × 2 = 1,311,744 + final norm 256 + embeddings 256,000 = 1,568,000.
	// plain MLP 2·256·512 = 262,144 → layer 524,800 × 2 = 1,049,600 + 256 + 256,000 = 1,305,856.
	for _, tt := range []struct {
		act    string
		params int64
	}{{"silu", 1568000}, {"swish", 1568000}, {"swiglu", 1568000}, {"SiLU", 1568000}, {"gelu", 1305856}, {"relu", 1305856}} {
		cfg := map[string]any{
			"architectures": []any{"MyForCausalLM"}, "model_type": "my_model", "hidden_act": tt.act,
			"hidden_size": 256.0, "intermediate_size": 512.0, "num_hidden_layers": 2.0, "num_attention_heads": 4.0,
			"vocab_size": 1000.0, "max_position_embeddings": 128.0, "rms_norm_eps": 1e-6,
		}
		if r := Compute(Input{Config: cfg}); deref(r.Params) != tt.params {
			t.Errorf("hidden_act %s: params %v, want %d", tt.act, deref(r.Params), tt.params)
		}
	}
}

// needs_sharding names the KV cache it counted for a generative model, and
// none for one that does not generate.
func TestShardingHintNamesTheKVCache(t *testing.T) {
	mix := Compute(Input{Config: loadConfig(t, "Mixtral-8x7B-v0.1")})
	// Mixtral's KV cache at 32,768 tokens: 4,294,967,296 B = 4.0 GiB.
	if h := hint(t, mix, HintNeedsSharding); !strings.Contains(h.Text, "The bf16 weights (87.0 GiB) and the KV cache of one 32768-token sequence (4.0 GiB), with 10% headroom") {
		t.Errorf("needs_sharding: %s", h.Text)
	}
	// An encoder of 20e9 parameters: weights 40e9 B = 37.25 GiB; × 1.1 / 32 GiB = 1.28 → 2 v6e.
	bert := Compute(Input{Config: map[string]any{"architectures": []any{"BertForMaskedLM"}, "model_type": "bert"},
		Summary: true, Safetensors: map[string]int64{"F32": 20_000_000_000}})
	h := hint(t, bert, HintNeedsSharding)
	if !strings.Contains(h.Text, "The bf16 weights (37.3 GiB), with 10% headroom, need 2 v6e devices") || strings.Contains(h.Text, "KV cache of one") {
		t.Errorf("needs_sharding of an encoder: %s", h.Text)
	}
}

// moe_dynamic_routing says how many experts a token goes to only when the
// config says it.
func TestMoEHintWithoutPerToken(t *testing.T) {
	cfg := loadConfig(t, "Mixtral-8x7B-v0.1")
	delete(cfg, "num_experts_per_tok")
	h := hint(t, Compute(Input{Config: cfg}), HintMoEDynamicRouting)
	if !strings.Contains(h.Text, "(8 experts, in 32 of 32 layers)") {
		t.Errorf("moe: %s", h.Text)
	}
}

// The dense intermediate size is judged for alignment only when some layer
// is dense.
func TestAlignmentOfDenseIntermediate(t *testing.T) {
	// DeepSeek-V3 with intermediate_size 18000: hidden 7168 = 28·256, the experts' 2048 = 8·256 and the
	// vocabulary 129280 = 505·256 are aligned; 18000 pads to 141·128 = 18048 (0.3% idle) and
	// 71·256 = 18176 (1.0%).
	for _, tt := range []struct {
		firstDense float64
		want       string // "" for no dims_not_aligned hint
	}{
		{3, "intermediate size 18000 pads to 18048 on v5e/v5p (0.3% idle) and 18176 on v6e/v7x (1.0%)"},
		{1, "intermediate size 18000 pads to 18048"},
		{0, ""}, // every layer routes: the dense size is never used
	} {
		cfg := loadConfig(t, "DeepSeek-V3")
		cfg["intermediate_size"], cfg["first_k_dense_replace"] = 18000.0, tt.firstDense
		r := Compute(Input{Config: cfg})
		has := slices.Contains(hintCodes(r), HintDimsNotAligned)
		if tt.want == "" {
			if has {
				t.Errorf("first_k_dense_replace 0: %s", hint(t, r, HintDimsNotAligned).Text)
			}
			continue
		}
		if h := hint(t, r, HintDimsNotAligned); !strings.Contains(h.Text, tt.want) || strings.Contains(h.Text, "expert") {
			t.Errorf("first_k_dense_replace %v: %s", tt.firstDense, h.Text)
		}
	}
}

// A head_dim of 128 or more is judged against 128 for a model with plain
// attention; MLA's heads are not.
func TestHeadDimAlignment(t *testing.T) {
	cfg := loadConfig(t, "Llama-3.2-1B")
	cfg["head_dim"] = 192.0 // pads to 256: 64 of 256 idle
	r := Compute(Input{Config: cfg})
	if h := hint(t, r, HintDimsNotAligned); !strings.Contains(h.Text, "head_dim 192 pads to 256 (25.0% idle)") {
		t.Errorf("dims_not_aligned: %s", h.Text)
	}
	if slices.Contains(hintCodes(r), HintSmallHeadDim) {
		t.Error("small_head_dim for head_dim 192")
	}
	ds := loadConfig(t, "DeepSeek-V3")
	ds["head_dim"] = 192.0 // MLA: the latent attention's dims, not head_dim, are its matmuls'
	if codes := hintCodes(Compute(Input{Config: ds})); slices.Contains(codes, HintDimsNotAligned) {
		t.Errorf("MLA model with head_dim 192: %v", codes)
	}
}

// sliding_window_pattern p makes every p-th layer global; 1 leaves every
// layer sliding.
func TestSlidingWindowPattern(t *testing.T) {
	// Mistral-7B: 32 layers, 4096 B per token per layer (2·8·128·2), window 4096, context 32768.
	for _, tt := range []struct {
		pattern float64
		kv      int64
	}{
		{1, 536870912},  // 32 sliding layers × 4096 tokens × 4096 B
		{4, 1476395008}, // 8 global × 32768 + 24 sliding × 4096 = 360,448 tokens × 4096 B
		{3, 1711276032}, // layers 3, 6, …, 30: 10 global × 32768 + 22 × 4096 = 417,792 × 4096 B
	} {
		cfg := loadConfig(t, "Mistral-7B-v0.1")
		cfg["sliding_window_pattern"] = tt.pattern
		if r := Compute(Input{Config: cfg}); deref(r.KVBytesContext) != tt.kv {
			t.Errorf("sliding_window_pattern %v: KV of one sequence %v, want %d", tt.pattern, deref(r.KVBytesContext), tt.kv)
		}
	}
}

// A model_type quoted in a hint is cut at 200 bytes, and one of exactly
// 200 is quoted whole.
func TestClipAtItsBound(t *testing.T) {
	for _, tt := range []struct {
		n       int
		clipped bool
	}{{199, false}, {200, false}, {201, true}} {
		name := strings.Repeat("m", tt.n)
		r := Compute(Input{Config: map[string]any{"model_type": name, "auto_map": map[string]any{"AutoModel": "x.Y"}}})
		text := hint(t, r, HintRemoteCode).Text
		want := `"` + name + `"`
		if tt.clipped {
			want = `"` + strings.Repeat("m", 200) + `…"`
		}
		if !strings.Contains(text, want) {
			t.Errorf("model_type of %d bytes: %s", tt.n, text)
		}
	}
}

// A mixture of experts with MLP biases and no shared expert counts no
// shared expert's bias; one whose every layer routes needs no dense
// intermediate size.
func TestMoEParamsEdges(t *testing.T) {
	// Mixtral with mlp_bias: each expert adds 2·14336 + 4096 = 32,768 biases; 8 experts × 32 layers
	// = 8,388,608 on realConfigs' 46,702,792,704.
	mix := loadConfig(t, "Mixtral-8x7B-v0.1")
	mix["mlp_bias"] = true
	if r := Compute(Input{Config: mix}); deref(r.Params) != int64(46711181312) {
		t.Errorf("Mixtral with mlp_bias: params %v, want 46711181312", deref(r.Params))
	}
	// DeepSeek-V3 routing in all 61 layers, without intermediate_size: attention and norms
	// 187,121,664 and an MoE MLP of 11,320,164,352 per layer (realConfigs' figures) × 61
	// + final norm 7,168 + embeddings and head 1,853,358,080 = 703,797,812,224.
	ds := loadConfig(t, "DeepSeek-V3")
	ds["first_k_dense_replace"] = 0.0
	delete(ds, "intermediate_size")
	if r := Compute(Input{Config: ds}); deref(r.Params) != int64(703797812224) {
		t.Errorf("DeepSeek-V3 all MoE, no intermediate_size: params %v, want 703797812224", deref(r.Params))
	}
	// With a dense layer, the missing size leaves params uncomputed.
	ds["first_k_dense_replace"] = 1.0
	if r := Compute(Input{Config: ds}); r.Params != nil {
		t.Errorf("DeepSeek-V3 with a dense layer and no intermediate_size: params %v", *r.Params)
	}
}

// MLA without a query latent (q_lora_rank null, as DeepSeek-V2-Lite)
// projects queries directly: H × heads × (nope + rope).
func TestMLAWithoutQueryLatent(t *testing.T) {
	// DeepSeek-V3's q path per layer is 48,760,320 with q_lora 1536; without it 7168·128·192
	// = 176,160,768, 127,400,448 more × 61 layers = 7,771,427,328 on 671,026,404,352.
	ds := loadConfig(t, "DeepSeek-V3")
	ds["q_lora_rank"] = nil
	if r := Compute(Input{Config: ds}); deref(r.Params) != int64(678797831680) {
		t.Errorf("DeepSeek-V3 without q_lora_rank: params %v, want 678797831680", deref(r.Params))
	}
}

// A nested text_config's vocab_size wins; the top level's is read only
// when text_config has none.
func TestNestedVocabulary(t *testing.T) {
	// realConfigs' LLaVA: 7,041,251,328 with its vocabulary of 32064, which both levels carry.
	cfg := loadConfig(t, "llava-1.5-7b-hf")
	cfg["vocab_size"] = 99999.0
	if r := Compute(Input{Config: cfg}); deref(r.Params) != int64(7041251328) {
		t.Errorf("LLaVA with another top-level vocab_size: params %v, want text_config's 7041251328", deref(r.Params))
	}
	// A text_config without a vocabulary, of a model_type without size defaults (LLaVA's llama
	// would get LlamaConfig's 32000, as transformers gives it): the top level's 1000 is used.
	// qwen2 layout, H 256, I 512, L 2, h 4 (d 64, kv 4): attention 262,144 + q/k/v biases 768,
	// norms 512, MLP 3·256·512 = 393,216 → 656,640 × 2 = 1,313,280 + final norm 256
	// + untied embeddings and head 2·1000·256 = 512,000 → 1,825,536.
	nested := map[string]any{
		"architectures": []any{"XForConditionalGeneration"}, "model_type": "x", "vocab_size": 1000.0,
		"text_config": map[string]any{"model_type": "qwen2", "hidden_size": 256.0, "intermediate_size": 512.0,
			"num_hidden_layers": 2.0, "num_attention_heads": 4.0, "max_position_embeddings": 128.0},
	}
	if r := Compute(Input{Config: nested}); deref(r.Params) != int64(1825536) {
		t.Errorf("vocabulary at the top level only: params %v, want 1825536", deref(r.Params))
	}
}

// A decoder, and an encoder with embedding norms (BERT), need a
// vocabulary, and config_incomplete names it when it is missing.
func TestMissingVocabulary(t *testing.T) {
	for _, name := range []string{"bert-base-uncased", "Qwen2.5-0.5B"} {
		cfg := loadConfig(t, name)
		delete(cfg, "vocab_size")
		r := Compute(Input{Config: cfg})
		if r.Params != nil {
			t.Errorf("%s without vocab_size: params %v", name, *r.Params)
		}
		if h := hint(t, r, HintConfigIncomplete); !strings.Contains(h.Text, "missing from config.json: vocab_size.") {
			t.Errorf("%s: config_incomplete: %s", name, h.Text)
		}
	}
}

// Two experts are a mixture of experts, one is not; decoder_sparse_step s
// routes every s-th layer.
func TestMoEEdges(t *testing.T) {
	for _, tt := range []struct {
		set  map[string]any
		want string // "" for no moe_dynamic_routing hint
	}{
		{map[string]any{"num_local_experts": 2.0}, "(2 experts, 2 per token, in 32 of 32 layers)"},
		{map[string]any{"num_local_experts": 1.0, "num_experts_per_tok": 1.0}, ""},
		// layers 3, 6, …, 30 (1-based): 10 of 32
		{map[string]any{"decoder_sparse_step": 3.0}, "(8 experts, 2 per token, in 10 of 32 layers)"},
	} {
		cfg := loadConfig(t, "Mixtral-8x7B-v0.1")
		for k, v := range tt.set {
			cfg[k] = v
		}
		r := Compute(Input{Config: cfg})
		if tt.want == "" {
			if slices.Contains(hintCodes(r), HintMoEDynamicRouting) {
				t.Errorf("%v: %s", tt.set, hint(t, r, HintMoEDynamicRouting).Text)
			}
			continue
		}
		if h := hint(t, r, HintMoEDynamicRouting); !strings.Contains(h.Text, tt.want) {
			t.Errorf("%v: %s", tt.set, h.Text)
		}
	}
}

// config_incomplete names the MLA size that is missing, and only it.
func TestMLAMissingSize(t *testing.T) {
	ds := loadConfig(t, "DeepSeek-V3")
	delete(ds, "qk_rope_head_dim")
	r := Compute(Input{Config: ds})
	if r.Params != nil || r.KVBytesPerToken != nil {
		t.Errorf("DeepSeek-V3 without qk_rope_head_dim: params %v, kv %v", deref(r.Params), deref(r.KVBytesPerToken))
	}
	h := hint(t, r, HintConfigIncomplete)
	if !strings.Contains(h.Text, "missing from config.json: qk_rope_head_dim.") || strings.Contains(h.Text, "v_head_dim") {
		t.Errorf("config_incomplete: %s", h.Text)
	}
}

// mlp_only_layers keeps those layers dense; entries that are not layer
// numbers are skipped.
func TestMLPOnlyLayers(t *testing.T) {
	cfg := loadConfig(t, "Mixtral-8x7B-v0.1")
	cfg["mlp_only_layers"] = []any{0.0, 1.0, -3.0, "a", 1.5}
	if h := hint(t, Compute(Input{Config: cfg}), HintMoEDynamicRouting); !strings.Contains(h.Text, "in 30 of 32 layers") {
		t.Errorf("mlp_only_layers [0, 1]: %s", h.Text)
	}
}

// The checkpoint's count at its bounds: a dtype of 0 elements is no reason
// to distrust the others, and a total of exactly maxParams is a count.
func TestSafetensorsBounds(t *testing.T) {
	for _, tt := range []struct {
		name   string
		st     map[string]int64
		params int64
		source string
	}{
		{"a dtype of 0", map[string]int64{"BF16": 1_000_000_000, "F16": 0}, 1_000_000_000, SourceSafetensors},
		{"one dtype at the bound", map[string]int64{"BF16": maxParams}, maxParams, SourceSafetensors},
		{"a sum at the bound", map[string]int64{"BF16": maxParams - 5, "F32": 5}, maxParams, SourceSafetensors},
		{"a sum over the bound", map[string]int64{"BF16": maxParams - 5, "F32": 6}, 1235814400, SourceConfig},
	} {
		r := Compute(Input{Config: loadConfig(t, "Llama-3.2-1B"), Safetensors: tt.st})
		if deref(r.Params) != tt.params || derefS(r.ParamsSource) != tt.source {
			t.Errorf("%s: params %v (%v), want %d (%s)", tt.name, deref(r.Params), derefS(r.ParamsSource), tt.params, tt.source)
		}
	}
}

// A quantized checkpoint's integer tensors mean packed weights only beyond
// 1% of its elements; at exactly 1% the checkpoint's count stands.
func TestPackedAtOnePercent(t *testing.T) {
	for _, tt := range []struct {
		st     map[string]int64
		params int64
		source string
	}{
		{map[string]int64{"I32": 10_000_000, "BF16": 990_000_000}, 1_000_000_000, SourceSafetensors},
		// packed: the config's 32,763,876,352 (realConfigs)
		{map[string]int64{"I32": 10_000_001, "BF16": 989_999_999}, 32763876352, SourceConfig},
	} {
		r := Compute(Input{Config: loadConfig(t, "Qwen2.5-32B-Instruct-GPTQ-Int4"), Safetensors: tt.st})
		if deref(r.Params) != tt.params || derefS(r.ParamsSource) != tt.source {
			t.Errorf("%v: params %v (%v), want %d (%s)", tt.st, deref(r.Params), derefS(r.ParamsSource), tt.params, tt.source)
		}
	}
}

// Without attention heads (and no size defaults for the model_type),
// head_dim cannot be derived: nothing that needs it is computed, and the
// missing key is named.
func TestNoAttentionHeads(t *testing.T) {
	cfg := loadConfig(t, "Qwen2.5-0.5B")
	delete(cfg, "num_attention_heads")
	r := Compute(Input{Config: cfg})
	assertSane(t, r)
	if r.Params != nil {
		t.Errorf("params %v without attention heads", *r.Params)
	}
	if h := hint(t, r, HintConfigIncomplete); !strings.Contains(h.Text, "missing from config.json: num_attention_heads") {
		t.Errorf("config_incomplete: %s", h.Text)
	}
}

// intermediate = innerMult × hidden only for a family that has the rule
// (GPT-2, Falcon) and a known hidden size; otherwise the missing
// intermediate size is named.
func TestMissingIntermediate(t *testing.T) {
	for _, tt := range []struct {
		config, drop, missing string
	}{
		{"Qwen2.5-0.5B", "intermediate_size", "missing from config.json: intermediate_size."},
		{"gpt2", "n_embd", "missing from config.json: hidden_size, intermediate_size."},
	} {
		cfg := loadConfig(t, tt.config)
		delete(cfg, tt.drop)
		r := Compute(Input{Config: cfg})
		if r.Params != nil {
			t.Errorf("%s without %s: params %v", tt.config, tt.drop, *r.Params)
		}
		if h := hint(t, r, HintConfigIncomplete); !strings.Contains(h.Text, tt.missing) {
			t.Errorf("%s without %s: %s", tt.config, tt.drop, h.Text)
		}
	}
}
