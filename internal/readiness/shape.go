package readiness

import "strings"

// stack is one transformer stack (a decoder, an encoder, a vision tower) as
// config.json describes it. A size of 0 is unknown.
type stack struct {
	fam                                        family
	hidden, inter, layers, heads, kvHeads, dim int64
	attnBias, mlpBias                          bool // llama's attention_bias / mlp_bias
	cross                                      bool // a cross-attention block in every layer (encoder-decoder decoders)
	moe                                        *moe
	mla                                        *mla
	positions                                  int64 // rows of learned position embeddings, when the family has them
}

// moe is a mixture-of-experts MLP.
type moe struct {
	experts, perToken int64
	inter             int64 // each routed expert's intermediate size
	shared            int64 // intermediate size of the always-on shared expert(s); 0 for none
	layers            int64 // how many layers are MoE (the rest are dense)
}

// mla is DeepSeek's multi-head latent attention.
type mla struct {
	qLora, kvLora, rope, nope, v int64 // q_lora_rank (0: none), kv_lora_rank, qk_rope/qk_nope/v head dims
}

// shape is what readiness knows about a model's architecture.
type shape struct {
	modelType  string
	generative bool  // it generates, so decoding fills a KV cache
	vocab      int64 // 0 unknown (or no vocabulary: a vision encoder)
	typeVocab  int64 // BERT's token type embeddings
	tied       bool
	ctx        int64 // the decoder's context length (max positions); 0 unknown
	decoder    *stack
	encoder    *stack
	vision     *stack
	windows    []int64 // per decoder layer: -1 caches every token, 0 nothing that grows, w the last w tokens
	missing    []string
	bad        []string
	quant      map[string]any // quantization_config
	dtype      string         // torch_dtype / dtype
}

// main is the stack whose sizes decide alignment and the KV cache: the
// decoder, else the encoder.
func (s *shape) main() *stack {
	if s.decoder != nil {
		return s.decoder
	}
	return s.encoder
}

// stackKeys names, per size, the config keys a stack reads, in order.
type stackKeys struct {
	hidden, layers, heads, kvHeads, dim, inter, positions []string
}

var (
	plainKeys = stackKeys{
		hidden:    []string{"hidden_size", "n_embd", "d_model", "dim", "model_dim"},
		layers:    []string{"num_hidden_layers", "n_layer", "num_layers", "n_layers"},
		heads:     []string{"num_attention_heads", "n_head", "num_heads", "n_heads"},
		kvHeads:   []string{"num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"},
		dim:       []string{"head_dim", "d_kv"},
		inter:     []string{"intermediate_size", "n_inner", "ffn_dim", "d_ff", "ffn_hidden_size", "hidden_dim", "mlp_dim"},
		positions: []string{"max_position_embeddings", "n_positions"},
	}
	// Whisper, BART, Marian: encoder_* and decoder_* keys.
	bartEncoderKeys = stackKeys{hidden: []string{"d_model"}, layers: []string{"encoder_layers"},
		heads: []string{"encoder_attention_heads"}, inter: []string{"encoder_ffn_dim"},
		positions: []string{"max_source_positions", "max_position_embeddings"}}
	bartDecoderKeys = stackKeys{hidden: []string{"d_model"}, layers: []string{"decoder_layers"},
		heads: []string{"decoder_attention_heads"}, inter: []string{"decoder_ffn_dim"},
		positions: []string{"max_target_positions", "max_position_embeddings"}}
	// T5: num_layers, num_decoder_layers (defaulting to num_layers).
	t5EncoderKeys = stackKeys{hidden: []string{"d_model"}, layers: []string{"num_layers"},
		heads: []string{"num_heads"}, dim: []string{"d_kv"}, inter: []string{"d_ff"}}
	t5DecoderKeys = stackKeys{hidden: []string{"d_model"}, layers: []string{"num_decoder_layers", "num_layers"},
		heads: []string{"num_heads"}, dim: []string{"d_kv"}, inter: []string{"d_ff"}}
	visionKeys = stackKeys{
		hidden: []string{"hidden_size", "embed_dim", "width"},
		layers: []string{"num_hidden_layers", "depth", "num_layers"},
		heads:  []string{"num_attention_heads", "num_heads"},
		inter:  []string{"intermediate_size", "mlp_dim"},
	}
)

// readStack reads one stack; the names of required sizes that are absent
// go to s.missing (sizes that are present but unusable the reader records).
func (s *shape) readStack(r reader, f family, k stackKeys) *stack {
	st := &stack{fam: f}
	need := func(v int64, fld field, keys []string) int64 {
		if fld == absent {
			s.missing = append(s.missing, r.prefix+keys[0])
		}
		return v
	}
	var fld field
	st.hidden, fld = r.int(maxDim, k.hidden...)
	st.hidden = need(st.hidden, fld, k.hidden)
	st.layers, fld = r.int(maxLayers, k.layers...)
	st.layers = need(st.layers, fld, k.layers)
	st.heads, fld = r.int(maxHeads, k.heads...)
	st.heads = need(st.heads, fld, k.heads)
	st.kvHeads, fld = r.int(maxHeads, k.kvHeads...)
	if fld == absent {
		st.kvHeads = st.heads
		if mq, _ := r.flag("multi_query"); mq {
			st.kvHeads = 1 // Falcon, GPTBigCode: one K/V head
		}
	}
	st.dim, fld = r.int(maxDim, k.dim...)
	if fld == absent && st.hidden > 0 && st.heads > 0 && st.hidden%st.heads == 0 {
		st.dim = st.hidden / st.heads
	}
	st.inter, fld = r.int(maxDim, k.inter...)
	if fld == absent && f.innerMult > 0 && st.hidden > 0 {
		st.inter, fld = f.innerMult*st.hidden, valid
	}
	st.inter = need(st.inter, fld, k.inter)
	if f.learnedPos && len(k.positions) > 0 {
		st.positions, _ = r.int(maxContext, k.positions...)
	}
	st.attnBias, _ = r.flag("attention_bias")
	st.mlpBias, _ = r.flag("mlp_bias")
	if b, _ := r.flag("bias"); b { // Falcon
		st.attnBias, st.mlpBias = true, true
	}
	if nd, _ := r.flag("new_decoder_architecture"); nd { // Falcon 40B/180B: ln_attn and ln_mlp
		st.fam.norms = 2
	}
	return st
}

// generativeSuffixes end the class names of models that generate.
var generativeSuffixes = []string{"ForCausalLM", "LMHeadModel", "ForConditionalGeneration", "ForSpeechSeq2Seq", "ForImageTextToText"}

// isGenerative reads architectures: a generating head means decoding, so a
// KV cache. A config without architectures is judged by its family.
func isGenerative(r reader, f family) bool {
	archs := r.strings("architectures")
	for _, a := range archs {
		for _, suf := range generativeSuffixes {
			if strings.HasSuffix(a, suf) {
				return true
			}
		}
	}
	if len(archs) > 0 {
		return false
	}
	return f.kind != encoderOnly
}
