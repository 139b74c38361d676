package readiness

// bf16Bytes is the size of one cached number: TPUs run models in bfloat16.
const bf16Bytes = 2

// MaxContext caps the context length the KV cache is counted at: one
// sequence of at most 32,768 tokens, whatever longer context the model
// allows.
const MaxContext = 32768

// The KV cache, as transformers 5.23 allocates it (cache_utils.py): every
// decoder layer with attention stores K and V for each token, that is
// 2 × num_key_value_heads × head_dim numbers per layer, so grouped-query
// (GQA) and multi-query (MQA) attention store fewer heads than they query.
// DeepSeek's multi-head latent attention (MLA) stores its compressed latent
// instead, kv_lora_rank + qk_rope_head_dim numbers per layer
// (modeling_deepseek_v3.py caches before decompressing). A sliding-window
// or chunked layer keeps at most its window; a linear-attention or
// state-space layer keeps a state that does not grow with the sequence and
// is not counted. An encoder-decoder's decoder also caches the
// cross-attention K and V of the encoder's output once per sequence.

// readWindows says, per decoder layer, how many tokens its cache keeps: -1
// every token, 0 none that grow with the sequence, w the last w. It follows
// config.json's layer_types where present (transformers' own source of
// truth), else sliding_window with use_sliding_window, Qwen's
// max_window_layers and Gemma's alternating pattern.
func readWindows(r reader, layers int64, f family) []int64 {
	if layers == 0 {
		return nil
	}
	w := make([]int64, layers)
	for i := range w {
		w[i] = -1
	}
	window, wf := r.int(maxContext, "sliding_window")
	chunk, cf := r.int(maxContext, "attention_chunk_size")
	if types := r.strings("layer_types"); int64(len(types)) == layers {
		for i, t := range types {
			switch {
			case t == "sliding_attention" && wf == valid:
				w[i] = window
			case t == "chunked_attention" && cf == valid:
				w[i] = chunk
			case t == "linear_attention" || t == "mamba" || t == "conv" || t == "moe" || t == "mlp":
				w[i] = 0
			}
		}
		return w
	}
	if wf != valid {
		return w
	}
	if use, ok := r.flag("use_sliding_window"); (ok && !use) || (!ok && f.windowOptIn) {
		return w
	}
	from, _ := r.count(maxLayers, "max_window_layers") // Qwen: layers before it attend fully
	if !f.windowOptIn {
		from = 0
	}
	pattern := f.alternating
	if p, pf := r.int(maxLayers, "sliding_window_pattern"); pf == valid {
		pattern = p
	}
	for i := range w {
		global := pattern > 1 && (int64(i)+1)%pattern == 0
		if int64(i) >= from && !global {
			w[i] = window
		}
	}
	return w
}

// kvPerLayer is the bytes one token adds to one caching layer's KV cache.
func kvPerLayer(st *stack) (float64, bool) {
	if m := st.mla; m != nil {
		if m.rope == 0 {
			return 0, false
		}
		return float64(m.kvLora+m.rope) * bf16Bytes, true
	}
	if st.kvHeads == 0 || st.dim == 0 {
		return 0, false
	}
	return 2 * float64(st.kvHeads) * float64(st.dim) * bf16Bytes, true
}

// kvPerToken is the bytes one token adds to the KV cache over all layers
// while it is inside every window: 0 for a model that does not generate.
func kvPerToken(s *shape) (float64, bool) {
	if !s.generative {
		return 0, true
	}
	if s.decoder == nil || len(s.windows) == 0 {
		return 0, false
	}
	per, ok := kvPerLayer(s.decoder)
	if !ok {
		return 0, false
	}
	n := 0.0
	for _, w := range s.windows {
		if w != 0 {
			n += per
		}
	}
	return n, true
}

// kvSequence is the KV cache of one sequence of tokens tokens: each layer
// holds min(tokens, its window) tokens, plus an encoder-decoder's
// cross-attention cache over the encoder's positions.
func kvSequence(s *shape, tokens int64) (float64, bool) {
	if !s.generative {
		return 0, true
	}
	if s.decoder == nil {
		return 0, false
	}
	per, ok := kvPerLayer(s.decoder)
	if !ok || len(s.windows) == 0 {
		return 0, false
	}
	n := 0.0
	for _, w := range s.windows {
		switch {
		case w < 0:
			n += per * float64(tokens)
		case w > 0:
			n += per * float64(min(w, tokens))
		}
	}
	if s.decoder.cross && s.encoder != nil && s.encoder.positions > 0 {
		n += per * float64(s.decoder.layers) * float64(s.encoder.positions)
	}
	return n, true
}
