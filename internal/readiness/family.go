package readiness

// family is what config.json leaves implicit about an architecture: the
// layer layout transformers builds for a model_type. Only what changes the
// parameter count or the KV cache is here; an unknown model_type gets
// guessedFamily.
type family struct {
	kind        kind
	gated       bool  // MLP with gate, up and down projections (SwiGLU/GeGLU), else up and down
	layerNorm   bool  // LayerNorm (weight and bias), else RMSNorm (weight)
	norms       int64 // norms per layer; 0 means 2
	qkvBias     bool  // biases on q, k and v
	allBias     bool  // biases on every linear layer
	qkNorm      bool  // RMSNorm over head_dim on q and k (Qwen3, Gemma 3)
	learnedPos  bool  // learned position embeddings (positions × hidden)
	embNorm     bool  // a norm right after the embeddings (BERT), instead of a final one
	tied        bool  // transformers' default for tie_word_embeddings
	innerMult   int64 // intermediate = innerMult × hidden when the config has none (GPT-2's n_inner: null)
	alternating int64 // every alternating-th layer is global, the others sliding, when config.json has no layer_types
	windowOptIn bool  // the sliding window applies only with use_sliding_window: true (Qwen)
}

// kind is how the stacks of a model are laid out.
type kind int

const (
	decoderOnly kind = iota
	encoderOnly
	encoderDecoder
)

// llamaLike is the common decoder layout: SwiGLU MLP, RMSNorm, no biases,
// untied head (LlamaConfig's defaults).
var llamaLike = family{kind: decoderOnly, gated: true}

// bertLike is the BERT encoder layout.
var bertLike = family{kind: encoderOnly, layerNorm: true, allBias: true, learnedPos: true, embNorm: true, tied: true}

// families maps config.json's model_type to its layout, from transformers
// 5.23's modeling files and configuration defaults.
var families = map[string]family{
	"llama":     llamaLike,
	"mistral":   llamaLike,
	"mixtral":   llamaLike,
	"phi3":      llamaLike,
	"granite":   llamaLike,
	"olmo":      llamaLike,
	"smollm3":   llamaLike,
	"qwen2":     {kind: decoderOnly, gated: true, qkvBias: true, windowOptIn: true},
	"qwen2_moe": {kind: decoderOnly, gated: true, qkvBias: true, windowOptIn: true},
	"qwen3":     {kind: decoderOnly, gated: true, qkNorm: true, windowOptIn: true},
	"qwen3_moe": {kind: decoderOnly, gated: true, qkNorm: true, windowOptIn: true},
	// deepseek_v2/v3 attention is MLA: the config's kv_lora_rank says so.
	"deepseek_v2": llamaLike,
	"deepseek_v3": llamaLike,
	"gemma":       {kind: decoderOnly, gated: true, tied: true},
	"gemma2":      {kind: decoderOnly, gated: true, norms: 4, tied: true, alternating: 2},
	"gemma3_text": {kind: decoderOnly, gated: true, norms: 4, qkNorm: true, tied: true, alternating: 6},
	"gpt2":        {kind: decoderOnly, layerNorm: true, allBias: true, learnedPos: true, tied: true, innerMult: 4},
	"gpt_neox":    {kind: decoderOnly, layerNorm: true, allBias: true},
	// Falcon: one LayerNorm per parallel-attention layer (two with
	// new_decoder_architecture), biases only with "bias": true, MLP 4×hidden.
	"falcon":              {kind: decoderOnly, layerNorm: true, norms: 1, tied: true, innerMult: 4},
	"bert":                bertLike,
	"roberta":             bertLike,
	"xlm-roberta":         bertLike,
	"camembert":           bertLike,
	"distilbert":          bertLike,
	"electra":             bertLike,
	"mpnet":               bertLike,
	"vit":                 {kind: encoderOnly, layerNorm: true, allBias: true},
	"dinov2":              {kind: encoderOnly, layerNorm: true, allBias: true},
	"clip_vision_model":   {kind: encoderOnly, layerNorm: true, allBias: true},
	"siglip_vision_model": {kind: encoderOnly, layerNorm: true, allBias: true},
	"whisper":             {kind: encoderDecoder, layerNorm: true, allBias: true, learnedPos: true, tied: true},
	"bart":                {kind: encoderDecoder, layerNorm: true, allBias: true, learnedPos: true, tied: true},
	"mbart":               {kind: encoderDecoder, layerNorm: true, allBias: true, learnedPos: true, tied: true},
	"marian":              {kind: encoderDecoder, layerNorm: true, allBias: true, learnedPos: true, tied: true},
	"t5":                  {kind: encoderDecoder, tied: true},
	"mt5":                 {kind: encoderDecoder, tied: true},
	"umt5":                {kind: encoderDecoder, tied: true},
}

// familyOf returns the layout of a model_type, and whether it is one the
// table knows (else it is guessed from the config's own keys).
func familyOf(r reader) (family, bool) {
	if f, ok := families[lower(r.str("model_type"))]; ok {
		return f, true
	}
	return guessedFamily(r), false
}

// guessedFamily reads the layout of an unknown model_type from the keys its
// config has: a SiLU activation means a gated MLP, rms_norm_eps an RMSNorm,
// layer_norm_eps a LayerNorm with biases everywhere; encoder_layers or
// is_encoder_decoder an encoder-decoder.
func guessedFamily(r reader) family {
	f := family{kind: decoderOnly, tied: true}
	act := lower(r.str("hidden_act") + r.str("hidden_activation") + r.str("activation_function"))
	f.gated = act == "silu" || act == "swish" || act == "swiglu"
	if !r.has("rms_norm_eps") && (r.has("layer_norm_eps") || r.has("layer_norm_epsilon")) {
		f.layerNorm, f.allBias = true, true
	}
	if ed, _ := r.flag("is_encoder_decoder"); ed || r.has("encoder_layers") {
		f.kind = encoderDecoder
	}
	return f
}
