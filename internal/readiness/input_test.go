package readiness

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// The Hub's safetensors metadata wins over the config's estimate: its dtypes
// are summed (the Hub's "total" is not an input at all).
func TestSafetensorsParams(t *testing.T) {
	tests := []struct {
		name   string
		config string
		st     map[string]int64
		params int64
		source string
		hints  []string
	}{
		// gpt2 on the Hub: {"F32": 137022720} (huggingface/safetensors temp.md lists the same count);
		// weights 2 × 137,022,720 = 274,045,440.
		{"gpt2", "gpt2", map[string]int64{"F32": 137022720}, 137022720, SourceSafetensors,
			[]string{HintDimsNotAligned, HintSmallHeadDim}},
		// Two dtypes are summed: 1,000,000 + 234,814,400 = 1,235,814,400.
		{"two dtypes", "Llama-3.2-1B", map[string]int64{"BF16": 1234814400, "F32": 1000000}, 1235814400, SourceSafetensors,
			[]string{HintSmallHeadDim}},
		// A GPTQ checkpoint packs eight 4-bit weights per I32: its element count is not the parameter
		// count, so the config's 32,763,876,352 stands. (Illustrative counts, not the Hub's.)
		{"gptq packed", "Qwen2.5-32B-Instruct-GPTQ-Int4", map[string]int64{"I32": 3900000000, "F16": 1700000000}, 32763876352, SourceConfig,
			[]string{HintQuantizedCUDAOnly, HintNeedsSharding, HintFP16Checkpoint}},
		// Mostly F16 tensors mean a float16 checkpoint even where config.json does not say so.
		{"f16 elements", "Mistral-7B-v0.1", map[string]int64{"F16": 7241732096}, 7241732096, SourceSafetensors,
			[]string{HintFP16Checkpoint}},
		// F16 decides only when it is more than half: 617,907,200 of 1,235,814,400 is exactly half.
		{"half f16", "Llama-3.2-1B", map[string]int64{"F16": 617907200, "BF16": 617907200}, 1235814400, SourceSafetensors,
			[]string{HintSmallHeadDim}},
		{"just over half f16", "Llama-3.2-1B", map[string]int64{"F16": 617907201, "BF16": 617907199}, 1235814400, SourceSafetensors,
			[]string{HintSmallHeadDim, HintFP16Checkpoint}},
		// Counts that cannot be real are ignored: the config's estimate is used.
		{"negative count", "gpt2", map[string]int64{"F32": -5}, 124439808, SourceConfig, []string{HintDimsNotAligned, HintSmallHeadDim}},
		{"absurd count", "gpt2", map[string]int64{"F32": 1e15}, 124439808, SourceConfig, []string{HintDimsNotAligned, HintSmallHeadDim}},
		{"zero", "gpt2", map[string]int64{"F32": 0}, 124439808, SourceConfig, []string{HintDimsNotAligned, HintSmallHeadDim}},
		{"overflowing sum", "gpt2", map[string]int64{"F32": maxParams, "BF16": maxParams}, 124439808, SourceConfig,
			[]string{HintDimsNotAligned, HintSmallHeadDim}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Compute(Input{Config: loadConfig(t, tt.config), Safetensors: tt.st})
			if deref(r.Params) != tt.params || derefS(r.ParamsSource) != tt.source || deref(r.WeightsBytesBF16) != 2*tt.params {
				t.Errorf("params %v (%v), weights %v; want %d (%s)", deref(r.Params), derefS(r.ParamsSource), deref(r.WeightsBytesBF16), tt.params, tt.source)
			}
			if codes := hintCodes(r); !slices.Equal(codes, tt.hints) {
				t.Errorf("hints %v, want %v", codes, tt.hints)
			}
		})
	}
}

// Without config.json (a gated model, a listing only), the checkpoint's count
// still gives params and weights; min_devices needs the KV cache and is not
// guessed.
func TestSafetensorsWithoutConfig(t *testing.T) {
	r := Compute(Input{Safetensors: map[string]int64{"BF16": 8030261248}})
	if deref(r.Params) != int64(8030261248) || deref(r.WeightsBytesBF16) != int64(16060522496) {
		t.Errorf("params %v weights %v", deref(r.Params), deref(r.WeightsBytesBF16))
	}
	if r.KVBytesPerToken != nil || r.MinDevices != nil {
		t.Errorf("kv %v, min_devices %v: not computable without the config", deref(r.KVBytesPerToken), r.MinDevices)
	}
	h := hint(t, r, HintConfigIncomplete)
	if !strings.Contains(h.Text, "kv_bytes_per_token, min_devices") || !strings.Contains(h.Text, "config.json is not known") {
		t.Errorf("config_incomplete: %s", h.Text)
	}
}

// The Hub listing's summary of config.json (architectures, model_type,
// auto_map, quantization_config) gives the hints it can, and no numbers
// from defaults: a summary saying model_type llama is not LlamaConfig().
func TestListingSummary(t *testing.T) {
	summary := map[string]any{
		"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama",
		"auto_map":            map[string]any{"AutoModelForCausalLM": "modeling.X"},
		"quantization_config": map[string]any{"quant_method": "awq", "bits": 4.0},
	}
	r := Compute(Input{Config: summary, Summary: true})
	if r.Params != nil || r.KVBytesPerToken != nil || r.MinDevices != nil {
		t.Fatalf("numbers from a summary: params %v kv %v devices %v", deref(r.Params), deref(r.KVBytesPerToken), r.MinDevices)
	}
	if codes := hintCodes(r); !slices.Equal(codes, []string{HintRemoteCode, HintQuantizedCUDAOnly, HintConfigIncomplete}) {
		t.Errorf("hints %v", codes)
	}
	if h := hint(t, r, HintConfigIncomplete); !strings.Contains(h.Text, "summary of config.json") {
		t.Errorf("config_incomplete: %s", h.Text)
	}
	// Without the flag, a config with no sizes at all still gets no defaults.
	if r := Compute(Input{Config: summary}); r.Params != nil {
		t.Errorf("defaults applied to a size-less config: %v", deref(r.Params))
	}
	// An encoder summary: not generative, so no KV cache; params from the checkpoint → min_devices.
	bert := Compute(Input{Config: map[string]any{"architectures": []any{"BertForMaskedLM"}, "model_type": "bert"},
		Summary: true, Safetensors: map[string]int64{"F32": 110106428}})
	if deref(bert.KVBytesPerToken) != int64(0) || bert.MinDevices["v5e"] != 1 {
		t.Errorf("bert summary: kv %v devices %v", deref(bert.KVBytesPerToken), bert.MinDevices)
	}
}

// Bad sizes give no numbers for what needs them, name the key in
// config_incomplete, and never panic or produce NaN.
func TestBadInput(t *testing.T) {
	base := func() map[string]any { return loadConfig(t, "Llama-3.2-1B") }
	tests := []struct {
		name, key string
		val       any
		wantKV    bool // kv_bytes_per_token still computable
	}{
		{"zero hidden", "hidden_size", 0.0, true},
		{"negative hidden", "hidden_size", -2048.0, true},
		{"absurd hidden", "hidden_size", 1e15, true},
		{"string hidden", "hidden_size", "2048", true},
		{"fractional hidden", "hidden_size", 2048.5, true},
		{"NaN hidden", "hidden_size", math.NaN(), true},
		{"infinite hidden", "hidden_size", math.Inf(1), true},
		{"bool layers", "num_hidden_layers", true, false},
		{"absurd layers", "num_hidden_layers", 1e15, false},
		{"zero kv heads", "num_key_value_heads", 0.0, false},
		{"object vocab", "vocab_size", map[string]any{"n": 1.0}, true},
		{"negative context", "max_position_embeddings", -1.0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base()
			cfg[tt.key] = tt.val
			r := Compute(Input{Config: cfg})
			assertSane(t, r)
			if r.Params != nil && tt.key != "max_position_embeddings" {
				t.Errorf("params %v from a bad %s", *r.Params, tt.key)
			}
			if r.MinDevices != nil {
				t.Errorf("min_devices %v from a bad %s", r.MinDevices, tt.key)
			}
			if (r.KVBytesPerToken != nil) != tt.wantKV {
				t.Errorf("kv_bytes_per_token %v, want computed=%v", deref(r.KVBytesPerToken), tt.wantKV)
			}
			if h := hint(t, r, HintConfigIncomplete); !strings.Contains(h.Text, tt.key) {
				t.Errorf("config_incomplete does not name %s: %s", tt.key, h.Text)
			}
		})
	}
}

// Sizes each within bounds whose products are not a real model's.
func TestAbsurdProducts(t *testing.T) {
	cfg := map[string]any{
		"architectures": []any{"MixtralForCausalLM"}, "model_type": "mixtral",
		"hidden_size": float64(maxDim), "intermediate_size": float64(maxDim), "num_hidden_layers": float64(maxLayers),
		"num_attention_heads": float64(maxHeads), "num_key_value_heads": float64(maxHeads), "head_dim": float64(maxDim),
		"num_local_experts": float64(maxExperts), "vocab_size": float64(maxVocab), "max_position_embeddings": float64(maxContext),
	}
	r := Compute(Input{Config: cfg})
	assertSane(t, r)
	if r.Params != nil || r.KVBytesPerToken != nil || r.MinDevices != nil {
		t.Errorf("absurd products computed: params %v kv %v devices %v", deref(r.Params), deref(r.KVBytesPerToken), r.MinDevices)
	}
	if h := hint(t, r, HintConfigIncomplete); !strings.Contains(h.Text, "more than any real model") {
		t.Errorf("config_incomplete: %s", h.Text)
	}
}

func TestQuantMethods(t *testing.T) {
	tests := []struct {
		q    map[string]any
		code string
		sev  Severity
		text string
	}{
		{map[string]any{"quant_method": "gptq"}, HintQuantizedCUDAOnly, SeverityBlocker, "GPTQ"},
		{map[string]any{"quant_method": "awq"}, HintQuantizedCUDAOnly, SeverityBlocker, "AWQ"},
		{map[string]any{"quant_method": "bitsandbytes", "load_in_4bit": true}, HintQuantizedCUDAOnly, SeverityBlocker, "bitsandbytes"},
		{map[string]any{"load_in_8bit": true}, HintQuantizedCUDAOnly, SeverityBlocker, "bitsandbytes"},
		{map[string]any{"quant_method": "fp8"}, HintQuantizedNoTPUKernels, SeverityWarn, "dequantizes"},
		{map[string]any{"quant_method": "mxfp4"}, HintQuantizedNoTPUKernels, SeverityWarn, "dequantizes"},
		{map[string]any{"quant_method": "torchao"}, HintQuantizedNoTPUKernels, SeverityWarn, `"torchao"`},
		{map[string]any{"bits": 4.0}, HintQuantizedNoTPUKernels, SeverityWarn, `"unknown"`},
	}
	for _, tt := range tests {
		cfg := loadConfig(t, "Llama-3.2-1B")
		cfg["quantization_config"] = tt.q
		h := hint(t, Compute(Input{Config: cfg}), tt.code)
		if h.Severity != tt.sev || !strings.Contains(h.Text, tt.text) {
			t.Errorf("%v: %+v", tt.q, h)
		}
	}
	// quantization_config inside text_config counts too.
	cfg := loadConfig(t, "llava-1.5-7b-hf")
	cfg["text_config"].(map[string]any)["quantization_config"] = map[string]any{"quant_method": "gptq"}
	hint(t, Compute(Input{Config: cfg}), HintQuantizedCUDAOnly)
}

// Windows: layer_types, when present, decides which layers slide.
func TestLayerTypes(t *testing.T) {
	cfg := loadConfig(t, "Llama-3.2-1B")
	types := []any{}
	for i := range 16 {
		switch i % 4 {
		case 3:
			types = append(types, "full_attention")
		case 2:
			types = append(types, "linear_attention") // a state that does not grow
		default:
			types = append(types, "sliding_attention")
		}
	}
	cfg["layer_types"] = types
	cfg["sliding_window"] = 1024.0
	r := Compute(Input{Config: cfg})
	// 12 caching layers × 2·8·64·2 = 2,048 B → 24,576 B/token; at 32768 tokens: 4 full layers
	// × 32768 + 8 sliding × 1024 tokens, 2,048 B each = 2,048·(131,072 + 8,192) = 285,212,672.
	if deref(r.KVBytesPerToken) != int64(24576) || deref(r.KVBytesContext) != int64(285212672) {
		t.Errorf("kv %v/token, %v per sequence", deref(r.KVBytesPerToken), deref(r.KVBytesContext))
	}
}

func TestMinDevices(t *testing.T) {
	v6e := generation("v6e")
	tests := []struct {
		need int64
		want int
	}{
		{0, 1}, {1, 1},
		// 32 GiB / 1.1 = 31,236,125,789.09: the largest need that fits one v6e is 31,236,125,789.
		{31236125789, 1}, {31236125790, 2},
		{3 * 34359738368, 4}, // 3 full devices plus 10% headroom
	}
	for _, tt := range tests {
		if got := MinDevices(tt.need, v6e); got != tt.want {
			t.Errorf("MinDevices(%d, v6e) = %d, want %d", tt.need, got, tt.want)
		}
	}
}

// assertSane checks what must hold for any input.
func assertSane(t *testing.T, r Readiness) {
	t.Helper()
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if r.Params != nil && (*r.Params <= 0 || *r.Params > maxParams || r.WeightsBytesBF16 == nil || *r.WeightsBytesBF16 != 2**r.Params) {
		t.Errorf("params %d weights %v", *r.Params, deref(r.WeightsBytesBF16))
	}
	if (r.Params == nil) != (r.ParamsSource == nil) {
		t.Errorf("params %v with source %v", deref(r.Params), derefS(r.ParamsSource))
	}
	if r.KVBytesPerToken != nil && (*r.KVBytesPerToken < 0 || *r.KVBytesPerToken > maxBytes) {
		t.Errorf("kv %d", *r.KVBytesPerToken)
	}
	if r.MinDevices != nil && (len(r.MinDevices) != len(Generations) || r.Params == nil) {
		t.Errorf("min_devices %v without params", r.MinDevices)
	}
	for _, n := range r.MinDevices {
		if n < 1 {
			t.Errorf("min_devices %v", r.MinDevices)
		}
	}
	if r.Hints == nil {
		t.Error("hints is nil, want [] for JSON")
	}
	for _, h := range r.Hints {
		if !slices.Contains(Codes, h.Code) || (h.Severity != SeverityInfo && h.Severity != SeverityWarn && h.Severity != SeverityBlocker) ||
			h.Text == "" || !utf8.ValidString(h.Text) || strings.Contains(h.Text, "NaN") || strings.Contains(h.Text, "Inf") {
			t.Errorf("hint %+v", h)
		}
	}
	if incomplete := slices.ContainsFunc(r.Hints, func(h Hint) bool { return h.Code == HintConfigIncomplete }); incomplete !=
		(r.Params == nil || r.KVBytesPerToken == nil || r.MinDevices == nil) {
		t.Errorf("config_incomplete %v, but params %v kv %v devices %v", incomplete, deref(r.Params), deref(r.KVBytesPerToken), r.MinDevices)
	}
}

// FuzzCompute: any JSON config and safetensors map gives a sane readiness.
func FuzzCompute(f *testing.F) {
	for name := range maps.Keys(realConfigs) {
		b, _ := json.Marshal(loadConfig(f, name))
		f.Add(b, []byte(`{"BF16": 1000}`))
	}
	f.Add([]byte(`{"hidden_size": -1, "num_hidden_layers": 1e300, "vocab_size": "x", "text_config": {"hidden_size": 0}}`), []byte(`{"F32": -1}`))
	f.Add([]byte(`{"layer_types": ["sliding_attention"], "num_hidden_layers": 1, "sliding_window": 0.5}`), []byte(`null`))
	f.Add([]byte(`{"n_routed_experts": 65536, "first_k_dense_replace": 9999, "moe_layer_freq": 0, "mlp_only_layers": [1, -3, "a"]}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, cfgJSON, stJSON []byte) {
		var cfg map[string]any
		if json.Unmarshal(cfgJSON, &cfg) != nil {
			cfg = nil
		}
		var st map[string]int64
		_ = json.Unmarshal(stJSON, &st)
		for _, summary := range []bool{false, true} {
			assertSane(t, Compute(Input{Config: cfg, Safetensors: st, Summary: summary}))
		}
	})
}

// generation finds a generation by name.
func generation(name string) Generation {
	for _, g := range Generations {
		if g.Name == name {
			return g
		}
	}
	panic("readiness: no generation " + name)
}
