package readiness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// loadConfig parses testdata/configs/NAME.json the way scan.ParseConfig
// does (encoding/json into map[string]any).
func loadConfig(t testing.TB, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "configs", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// want is a readiness hand-computed from a config. Devices are v5e, v5p,
// v6e, v7x; nil fields are expected null.
type want struct {
	params   int64
	source   string
	kvToken  int64
	ctx      int64 // 0: not generative, no context
	kvCtx    int64
	devices  [4]int
	hints    []string // codes, in order
	realNote string   // how the estimate compares with the checkpoint's real count
}

// Every expectation below was computed by hand from the config's numbers,
// independently of the code. Notation: H hidden, I intermediate, L layers,
// h heads, kv K/V heads, d head_dim, V vocab. Weights are 2 bytes × params.
// min_devices = ceil((weights + KV of one sequence) × 1.1 / HBM), HBM
// v5e 16 GiB = 17,179,869,184, v5p 95 GiB = 102,005,473,280,
// v6e 32 GiB = 34,359,738,368, v7x 96 GiB = 103,079,215,104.
var realConfigs = map[string]want{
	// H 2048, I 8192, L 16, h 32, kv 8, d 64, V 128256 tied.
	// layer: q 2048·2048 = 4,194,304; k,v 2·2048·512 = 2,097,152; o 4,194,304;
	// MLP 3·2048·8192 = 50,331,648; norms 2·2048 = 4,096 → 60,821,504 × 16 = 973,144,064.
	// + final norm 2,048 + embeddings 128256·2048 = 262,668,288 → 1,235,814,400.
	// KV/token 16·2·8·64·2 = 32,768; ctx 131072 capped at 32768 → 1,073,741,824.
	// need (2,471,628,800 + 1,073,741,824)·1.1 = 3.90e9 → 1 device everywhere.
	"Llama-3.2-1B": {params: 1235814400, source: SourceConfig, kvToken: 32768, ctx: 32768, kvCtx: 1073741824,
		devices: [4]int{1, 1, 1, 1}, hints: []string{HintSmallHeadDim},
		realNote: "exact: Llama-3.2-1B has 1,235,814,400 parameters"},
	// H 896, I 4864, L 24, h 14, kv 2, d 64, V 151936 tied, q/k/v biases.
	// layer: q 802,816; k,v 2·896·128 = 229,376; o 802,816; biases 896 + 2·128 = 1,152;
	// MLP 3·896·4864 = 13,074,432; norms 1,792 → 14,912,384 × 24 = 357,897,216.
	// + final norm 896 + embeddings 151936·896 = 136,134,656 → 494,032,768.
	// KV/token 24·2·2·64·2 = 12,288 × 32768 = 402,653,184 (use_sliding_window false).
	// hidden 896 = 7·128 pads to 1024 on 256; vocab 151936 = 1187·128 pads to 152064 on 256.
	"Qwen2.5-0.5B": {params: 494032768, source: SourceConfig, kvToken: 12288, ctx: 32768, kvCtx: 402653184,
		devices: [4]int{1, 1, 1, 1}, hints: []string{HintDimsNotAligned, HintSmallHeadDim},
		realNote: "exact: the contract's example, 494,032,768"},
	// H 768, I 4·768 = 3072 (n_inner absent), L 12, h 12, d 64, V 50257 tied, 1024 learned positions,
	// LayerNorm and biases everywhere.
	// layer: attn 4·768² + 3·768 + 768 = 2,362,368; MLP 2·768·3072 + 3072 + 768 = 4,722,432;
	// norms 2·1,536 = 3,072 → 7,087,872 × 12 = 85,054,464.
	// + ln_f 1,536 + wte 50257·768 = 38,597,376 + wpe 1024·768 = 786,432 → 124,439,808.
	// KV/token 12·2·12·64·2 = 36,864 × 1024 = 37,748,736. vocab 50257 pads to 50304 / 50432.
	"gpt2": {params: 124439808, source: SourceConfig, kvToken: 36864, ctx: 1024, kvCtx: 37748736,
		devices: [4]int{1, 1, 1, 1}, hints: []string{HintDimsNotAligned, HintSmallHeadDim},
		realNote: "exact: GPT-2 small has 124,439,808 (the checkpoint's 137,022,720 adds the attn.bias buffers)"},
	// H 4096, I 14336 per expert, 8 experts top-2 in all 32 layers, h 32, kv 8, d 128, V 32000 untied.
	// layer: attn 4096² + 2·4096·1024 + 4096² = 41,943,040; experts 8·3·4096·14336 = 1,409,286,144;
	// router 4096·8 = 32,768; norms 8,192 → 1,451,270,144 × 32 = 46,440,644,608.
	// + final 4,096 + embeddings and head 2·32000·4096 = 262,144,000 → 46,702,792,704.
	// KV/token 32·2·8·128·2 = 131,072 × 32768 = 4,294,967,296.
	// need (93,405,585,408 + 4,294,967,296)·1.1 = 107,470,607,974 → v5e 6.26→7, v5p 1.05→2, v6e 3.13→4, v7x 1.04→2.
	"Mixtral-8x7B-v0.1": {params: 46702792704, source: SourceConfig, kvToken: 131072, ctx: 32768, kvCtx: 4294967296,
		devices: [4]int{7, 2, 4, 2}, hints: []string{HintNeedsSharding, HintMoEDynamicRouting},
		realNote: "exact: Mixtral-8x7B has 46,702,792,704"},
	// H 4096, I 14336, L 32, h 32, kv 8, d 128, V 32000 untied, sliding_window 4096 on every layer.
	// layer: attn 41,943,040 + MLP 3·4096·14336 = 176,160,768 + norms 8,192 = 218,112,000 × 32 = 6,979,584,000.
	// + 4,096 + 262,144,000 → 7,241,732,096. KV/token 131,072; each layer keeps 4096 of 32768 tokens
	// → 131,072·4096 = 536,870,912. need (14,483,464,192 + 536,870,912)·1.1 = 16.5e9 → 0.96 v5e → 1.
	"Mistral-7B-v0.1": {params: 7241732096, source: SourceConfig, kvToken: 131072, ctx: 32768, kvCtx: 536870912,
		devices: [4]int{1, 1, 1, 1}, hints: []string{},
		realNote: "exact: Mistral-7B has 7,241,732,096"},
	// Llama 3 8B: as Mistral but V 128256 untied, ctx 8192, no window.
	// 6,979,584,000 + 4,096 + 2·128256·4096 = 1,050,673,152 → 8,030,261,248.
	// KV 131,072·8192 = 1,073,741,824; need (16,060,522,496 + 1,073,741,824)·1.1 = 18.85e9 → v5e 1.10→2.
	"Meta-Llama-3-8B": {params: 8030261248, source: SourceConfig, kvToken: 131072, ctx: 8192, kvCtx: 1073741824,
		devices: [4]int{2, 1, 1, 1}, hints: []string{},
		realNote: "exact: Llama-3-8B has 8,030,261,248"},
	// H 2304, I 9216, L 26, h 8, kv 4, d 256, V 256000 tied, 4 norms per layer; every 2nd layer global,
	// the others sliding 4096.
	// layer: q 2304·2048 = 4,718,592; k,v 2·2304·1024 = 4,718,592; o 4,718,592; MLP 3·2304·9216 = 63,700,992;
	// norms 4·2304 = 9,216 → 77,865,984 × 26 = 2,024,515,584 + 2,304 + 256000·2304 = 589,824,000 → 2,614,341,888.
	// KV/token 26·2·4·256·2 = 106,496; ctx 8192: 13 layers × 8192 + 13 × 4096 tokens, 4,096 B each
	// → 4,096·159,744 = 654,311,424.
	"gemma-2-2b-it": {params: 2614341888, source: SourceConfig, kvToken: 106496, ctx: 8192, kvCtx: 654311424,
		devices: [4]int{1, 1, 1, 1}, hints: []string{},
		realNote: "exact: Gemma-2-2B has 2,614,341,888"},
	// Whisper: d 1280, 32 encoder and 32 decoder layers, 20 heads (d 64), FFN 5120, V 51866 tied,
	// learned positions 1500 (encoder) and 448 (decoder), LayerNorm and biases.
	// encoder layer: attn 4·1280² + 3·1280 + 1280 = 6,558,720; MLP 2·1280·5120 + 5120 + 1280 = 13,113,600;
	// norms 5,120 → 19,677,440 × 32 = 629,678,080 + final 2,560.
	// decoder layer: + cross-attention 6,558,720 and its norm 2,560 → 26,238,720 × 32 = 839,639,040 + 2,560.
	// embeddings 51866·1280 = 66,388,480; positions 1500·1280 + 448·1280 = 2,493,440 → 1,538,204,160.
	// KV/token 32·2·20·64·2 = 163,840; 448 tokens = 73,400,320; cross-attention over 1500 encoder
	// positions 5,120·32·1500 = 245,760,000 → 319,160,320.
	"whisper-large-v3": {params: 1538204160, source: SourceConfig, kvToken: 163840, ctx: 448, kvCtx: 319160320,
		devices: [4]int{1, 1, 1, 1}, hints: []string{HintDimsNotAligned, HintSmallHeadDim, HintFP16Checkpoint},
		realNote: "the checkpoint's 1,543,490,560 adds the two convolutions (5,409,280) and lacks 96 k_proj biases (122,880)"},
	// BERT base: H 768, I 3072, L 12, h 12, V 30522, 512 positions, 2 token types, embedding LayerNorm.
	// layer 7,087,872 (as GPT-2) × 12 = 85,054,464; embeddings 30522·768 = 23,440,896 + 393,216 + 1,536
	// + LayerNorm 1,536 → 108,891,648. Not generative: no KV cache.
	"bert-base-uncased": {params: 108891648, source: SourceConfig, kvToken: 0,
		devices: [4]int{1, 1, 1, 1}, hints: []string{HintDimsNotAligned, HintSmallHeadDim},
		realNote: "BertModel without its pooler (590,592) has 108,891,648"},
	// DeepSeek-V3: H 7168, L 61 (first 3 dense with I 18432), 256 experts of 2048 + 1 shared, top-8,
	// MLA with q_lora 1536, kv_lora 512, rope 64, nope 128, v 128, h 128, V 129280 untied.
	// attention: q 7168·1536 + 1536 + 1536·128·192 = 48,760,320; kv 7168·576 + 512 + 512·128·256
	// = 20,906,496; o 128·128·7168 = 117,440,512 → 187,107,328; + norms 14,336 = 187,121,664 × 61
	// = 11,414,421,504. Dense MLP 3·7168·18432 = 396,361,728 × 3 = 1,189,085,184.
	// MoE layer 256·3·7168·2048 + router 7168·256 + shared 3·7168·2048 = 11,320,164,352 × 58
	// = 656,569,532,416. + final norm 7,168 + embeddings and head 2·129280·7168 = 1,853,358,080
	// → 671,026,404,352.
	// KV/token (MLA latent) 61·(512+64)·2 = 70,272 × 32768 = 2,302,672,896.
	// need (1,342,052,808,704 + 2,302,672,896)·1.1 = 1.4788e12 → v5e 86.1→87, v5p 14.5→15, v6e 43.0→44, v7x 14.3→15.
	"DeepSeek-V3": {params: 671026404352, source: SourceConfig, kvToken: 70272, ctx: 32768, kvCtx: 2302672896,
		devices:  [4]int{87, 15, 44, 15},
		hints:    []string{HintRemoteCode, HintQuantizedNoTPUKernels, HintNeedsSharding, HintMoEDynamicRouting},
		realNote: "671B without the multi-token-prediction layer, as DeepSeek counts it"},
	// LLaVA 1.5: text_config gives only V 32064 and ctx 4096, the rest is LlamaConfig's defaults
	// (H 4096, I 11008, L 32, h 32, d 128), untied; vision tower CLIP-L/14: H 1024, I 4096, L 24, h 16.
	// text layer 4·4096² + 3·4096·11008 + 8,192 = 202,383,360 × 32 = 6,476,267,520 + 4,096
	// + 2·32064·4096 = 262,668,288 → 6,738,939,904.
	// vision layer attn 4·1024² + 4·1024 = 4,198,400; MLP 2·1024·4096 + 5,120 = 8,393,728;
	// norms 4,096 → 12,596,224 × 24 = 302,309,376 + post norm 2,048 → 302,311,424. Sum 7,041,251,328.
	// KV/token 32·2·32·128·2 = 524,288 × 4096 = 2,147,483,648; need (14,082,502,656 + 2,147,483,648)·1.1
	// = 17.85e9 → v5e 1.04→2.
	"llava-1.5-7b-hf": {params: 7041251328, source: SourceConfig, kvToken: 524288, ctx: 4096, kvCtx: 2147483648,
		devices: [4]int{2, 1, 1, 1}, hints: []string{HintDimsNotAligned, HintFP16Checkpoint},
		realNote: "the checkpoint's 7,063,427,072 adds the projector (20,979,712) and CLIP's patch/position embeddings (1,196,032)"},
	// Qwen2.5-32B: H 5120, I 27648, L 64, h 40, kv 8, d 128, V 152064 untied, q/k/v biases, GPTQ 4-bit.
	// layer: 26,214,400 + 10,485,760 + 26,214,400 + biases 7,168 + MLP 424,673,280 + norms 10,240
	// = 487,605,248 × 64 = 31,206,735,872 + 5,120 + 2·152064·5120 = 1,557,135,360 → 32,763,876,352.
	// KV/token 64·2·8·128·2 = 262,144 × 32768 = 8,589,934,592; need (65,527,752,704 + 8,589,934,592)·1.1
	// = 81.5e9 → v5e 4.75→5, v5p 0.80→1, v6e 2.37→3, v7x 0.79→1.
	"Qwen2.5-32B-Instruct-GPTQ-Int4": {params: 32763876352, source: SourceConfig, kvToken: 262144, ctx: 32768, kvCtx: 8589934592,
		devices: [4]int{5, 1, 3, 1}, hints: []string{HintQuantizedCUDAOnly, HintNeedsSharding, HintFP16Checkpoint},
		realNote: "exact: Qwen2.5-32B has 32,763,876,352"},
	// Falcon-7B: H 4544, I 4·4544 = 18176, L 32, h 71, one K/V head (multi_query), d 64, V 65024 tied,
	// one LayerNorm per layer, no biases, ctx 2048 (FalconConfig's default).
	// layer: q 4544² = 20,647,936; k,v 2·4544·64 = 581,632; o 20,647,936; MLP 2·4544·18176 = 165,183,488;
	// norm 9,088 → 207,070,080 × 32 = 6,626,242,560 + final 9,088 + 65024·4544 = 295,469,056 → 6,921,720,704.
	// KV/token 32·2·1·64·2 = 8,192 × 2048 = 16,777,216. hidden 4544 = 35.5·128 pads to 4608.
	"falcon-7b": {params: 6921720704, source: SourceConfig, kvToken: 8192, ctx: 2048, kvCtx: 16777216,
		devices: [4]int{1, 1, 1, 1}, hints: []string{HintDimsNotAligned, HintSmallHeadDim},
		realNote: "exact: Falcon-7B has 6,921,720,704"},
	// Flan-T5 base: d 768, 12+12 layers, 12 heads of 64, gated-gelu FFN 2048, V 32128 untied, RMSNorm.
	// encoder layer 4·768² + 3·768·2048 + 2·768 = 7,079,424 × 12 = 84,953,088 + 768;
	// decoder layer + cross-attention 2,359,296 + norm 768 = 9,439,488 × 12 = 113,273,856 + 768;
	// embeddings and head 2·32128·768 = 49,348,608 → 247,577,088. KV/token 12·2·12·64·2 = 36,864 × 512
	// = 18,874,368 (T5's encoder length is the input's, so no cross-attention cache is counted).
	"flan-t5-base": {params: 247577088, source: SourceConfig, kvToken: 36864, ctx: 512, kvCtx: 18874368,
		devices: [4]int{1, 1, 1, 1}, hints: []string{HintDimsNotAligned, HintSmallHeadDim},
		realNote: "the checkpoint's 247,577,856 adds the relative attention biases (2·32·12)"},
	// Phi-3-mini: H 3072, I 8192, L 32, h 32, d 96, V 32064 untied, sliding_window 2047, ctx 4096, auto_map.
	// layer 4·3072² + 3·3072·8192 + 6,144 = 113,252,352 × 32 = 3,624,075,264 + 3,072 + 2·32064·3072
	// = 197,001,216 → 3,821,079,552. KV/token 32·2·32·96·2 = 393,216; each layer keeps 2047 tokens
	// → 804,913,152.
	"Phi-3-mini-4k-instruct": {params: 3821079552, source: SourceConfig, kvToken: 393216, ctx: 4096, kvCtx: 804913152,
		devices: [4]int{1, 1, 1, 1}, hints: []string{HintRemoteCode, HintDimsNotAligned, HintSmallHeadDim},
		realNote: "exact: Phi-3-mini has 3,821,079,552"},
	// ViT-B/16: H 768, I 3072, L 12, h 12; no vocabulary, not generative.
	// 12 × 7,087,872 + final LayerNorm 1,536 = 85,056,000.
	"vit-base-patch16-224": {params: 85056000, source: SourceConfig, kvToken: 0,
		devices: [4]int{1, 1, 1, 1}, hints: []string{HintSmallHeadDim},
		realNote: "ViTModel adds the patch embedding, position embeddings and [CLS] (742,656)"},
}

func TestRealConfigs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "configs", "*.json"))
	if len(files) != len(realConfigs) || len(files) < 12 {
		t.Fatalf("%d config files, %d expectations: every file needs its hand-computed row", len(files), len(realConfigs))
	}
	for name, w := range realConfigs {
		t.Run(name, func(t *testing.T) {
			r := Compute(Input{Config: loadConfig(t, name)})
			checkWant(t, r, w)
		})
	}
}

func checkWant(t *testing.T, r Readiness, w want) {
	t.Helper()
	if r.Params == nil || *r.Params != w.params || r.ParamsSource == nil || *r.ParamsSource != w.source {
		t.Errorf("params %v (%v), want %d (%s); %s", deref(r.Params), derefS(r.ParamsSource), w.params, w.source, w.realNote)
	}
	if r.WeightsBytesBF16 == nil || *r.WeightsBytesBF16 != 2*w.params {
		t.Errorf("weights_bytes_bf16 %v, want %d", deref(r.WeightsBytesBF16), 2*w.params)
	}
	if r.KVBytesPerToken == nil || *r.KVBytesPerToken != w.kvToken {
		t.Errorf("kv_bytes_per_token %v, want %d", deref(r.KVBytesPerToken), w.kvToken)
	}
	if w.ctx == 0 {
		if r.ContextTokens != nil || r.KVBytesContext != nil {
			t.Errorf("not generative, but context %v, kv %v", deref(r.ContextTokens), deref(r.KVBytesContext))
		}
	} else if deref(r.ContextTokens) != w.ctx || deref(r.KVBytesContext) != w.kvCtx {
		t.Errorf("context %v tokens, KV %v; want %d, %d", deref(r.ContextTokens), deref(r.KVBytesContext), w.ctx, w.kvCtx)
	}
	got := [4]int{r.MinDevices["v5e"], r.MinDevices["v5p"], r.MinDevices["v6e"], r.MinDevices["v7x"]}
	if len(r.MinDevices) != 4 || got != w.devices {
		t.Errorf("min_devices %v, want v5e/v5p/v6e/v7x %v", r.MinDevices, w.devices)
	}
	if codes := hintCodes(r); !slices.Equal(codes, w.hints) {
		t.Errorf("hints %v, want %v", codes, w.hints)
	}
}

func hintCodes(r Readiness) []string {
	codes := []string{}
	for _, h := range r.Hints {
		codes = append(codes, h.Code)
	}
	return codes
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func derefS(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// hint returns the hint with code, failing the test when there is none.
func hint(t *testing.T, r Readiness, code string) Hint {
	t.Helper()
	for _, h := range r.Hints {
		if h.Code == code {
			return h
		}
	}
	t.Fatalf("no %s hint in %v", code, hintCodes(r))
	return Hint{}
}

// The hint texts name the numbers that make the hint, and say what to do.
func TestHintTexts(t *testing.T) {
	qwen := Compute(Input{Config: loadConfig(t, "Qwen2.5-0.5B")})
	dims := hint(t, qwen, HintDimsNotAligned).Text
	for _, s := range []string{"hidden size 896", "1024 on v6e/v7x (12.5% idle)", "vocabulary 151936", "152064", "multiples of 256"} {
		if !strings.Contains(dims, s) {
			t.Errorf("dims_not_aligned text lacks %q: %s", s, dims)
		}
	}
	if strings.Contains(dims, "intermediate") || strings.Contains(dims, "head_dim") {
		t.Errorf("intermediate 4864 = 19·256 is aligned, head_dim 64 belongs to small_head_dim: %s", dims)
	}
	if h := hint(t, qwen, HintSmallHeadDim); !strings.Contains(h.Text, "head_dim is 64") || !strings.Contains(h.Text, "50%") || !strings.Contains(h.Text, "25%") {
		t.Errorf("small_head_dim: %s", h.Text)
	}
	mix := Compute(Input{Config: loadConfig(t, "Mixtral-8x7B-v0.1")})
	if h := hint(t, mix, HintNeedsSharding); h.Severity != SeverityWarn || !strings.Contains(h.Text, "need 4 v6e devices") ||
		!strings.Contains(h.Text, "v5p (2) or v7x (2)") || !strings.Contains(h.Text, "87.0 GiB") {
		t.Errorf("needs_sharding: %+v", h)
	}
	if h := hint(t, mix, HintMoEDynamicRouting); !strings.Contains(h.Text, "8 experts, 2 per token, in 32 of 32 layers") {
		t.Errorf("moe: %s", h.Text)
	}
	ds := Compute(Input{Config: loadConfig(t, "DeepSeek-V3")})
	if h := hint(t, ds, HintMoEDynamicRouting); !strings.Contains(h.Text, "256 experts, 8 per token, in 58 of 61 layers") {
		t.Errorf("moe: %s", h.Text)
	}
	if h := hint(t, ds, HintRemoteCode); h.Severity != SeverityBlocker || !strings.Contains(h.Text, `"deepseek_v3"`) {
		t.Errorf("remote_code: %+v", h)
	}
	gptq := Compute(Input{Config: loadConfig(t, "Qwen2.5-32B-Instruct-GPTQ-Int4")})
	if h := hint(t, gptq, HintQuantizedCUDAOnly); h.Severity != SeverityBlocker || !strings.Contains(h.Text, "GPTQ") ||
		!strings.Contains(h.Text, "unquantized (bf16) checkpoint") {
		t.Errorf("quantized_cuda_only: %+v", h)
	}
	falcon := Compute(Input{Config: loadConfig(t, "falcon-7b")})
	if h := hint(t, falcon, HintDimsNotAligned); !strings.Contains(h.Text, "hidden size 4544 pads to 4608 on v5e/v5p (1.4% idle)") {
		t.Errorf("dims_not_aligned: %s", h.Text)
	}
}

// Every hint code has its documented rule, in the same order, with the
// severity the code gives it.
func TestRulesDocumentEveryCode(t *testing.T) {
	if len(Rules) != len(Codes) {
		t.Fatalf("%d rules for %d codes", len(Rules), len(Codes))
	}
	severities := map[string]Severity{}
	for name := range realConfigs {
		for _, h := range Compute(Input{Config: loadConfig(t, name)}).Hints {
			severities[h.Code] = h.Severity
		}
	}
	for i, r := range Rules {
		if r.Code != Codes[i] || r.When == "" || r.Do == "" {
			t.Errorf("rule %d: %+v, want code %s with when and do", i, r, Codes[i])
		}
		if s, seen := severities[r.Code]; seen && s != r.Severity {
			t.Errorf("%s: documented %s, fires as %s", r.Code, r.Severity, s)
		}
	}
	if len(severities) < 8 {
		t.Errorf("the real configs fire only %d of the codes: %v", len(severities), severities)
	}
}

func TestLevelOf(t *testing.T) {
	info := Hint{Code: HintSmallHeadDim, Severity: SeverityInfo}
	warn := Hint{Code: HintMoEDynamicRouting, Severity: SeverityWarn}
	block := Hint{Code: HintRemoteCode, Severity: SeverityBlocker}
	known := map[string]int{"v5e": 1, "v5p": 1, "v6e": 1, "v7x": 1}
	tests := []struct {
		r    *Readiness
		want Level
	}{
		{nil, LevelUnknown},
		{&Readiness{MinDevices: known, Hints: []Hint{}}, LevelReady},
		{&Readiness{MinDevices: known, Hints: []Hint{info}}, LevelReady},
		{&Readiness{Hints: []Hint{info}}, LevelUnknown}, // too little known
		{&Readiness{MinDevices: known, Hints: []Hint{info, warn}}, LevelWarn},
		{&Readiness{Hints: []Hint{warn}}, LevelWarn},
		{&Readiness{MinDevices: known, Hints: []Hint{warn, block, info}}, LevelBlocker},
	}
	for i, tt := range tests {
		if got := LevelOf(tt.r); got != tt.want {
			t.Errorf("%d: %s, want %s", i, got, tt.want)
		}
	}
	if !ValidCode(HintRemoteCode) || ValidCode("remote code") || ValidCode("") {
		t.Error("ValidCode")
	}
}

func TestArchitectures(t *testing.T) {
	long := strings.Repeat("A", 129)
	for _, tt := range []struct {
		cfg  map[string]any
		want []string
	}{
		{nil, nil},
		{map[string]any{"architectures": "LlamaForCausalLM"}, nil},
		{map[string]any{"architectures": []any{"LlamaForCausalLM"}}, []string{"LlamaForCausalLM"}},
		{map[string]any{"architectures": []any{"", 3.0, long, "B", "A"}}, []string{"B", "A"}},
		{map[string]any{"architectures": []any{"1", "2", "3", "4", "5", "6", "7", "8", "9"}}, []string{"1", "2", "3", "4", "5", "6", "7", "8"}},
	} {
		if got := Architectures(tt.cfg); !slices.Equal(got, tt.want) {
			t.Errorf("Architectures(%v) = %q, want %q", tt.cfg["architectures"], got, tt.want)
		}
	}
	r := Compute(Input{Config: map[string]any{"architectures": []any{"Qwen3ForCausalLM"}}, Summary: true})
	if !slices.Equal(r.Architectures, []string{"Qwen3ForCausalLM"}) {
		t.Errorf("Compute's architectures %q", r.Architectures)
	}
}
