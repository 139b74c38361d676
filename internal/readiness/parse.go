package readiness

import "strings"

// readShape reads the architecture from config.json: the language stack from
// text_config when there is one (vision-language models), an encoder and a
// decoder for encoder-decoders (Whisper, BART, T5), a vision tower from
// vision_config. It never fails: what it cannot read is in missing and bad.
// A summary (the Hub listing's) gets no size defaults.
func readShape(cfg map[string]any, summary bool) *shape {
	s := &shape{}
	root := reader{m: cfg, bad: &s.bad}
	s.modelType = lower(root.str("model_type"))
	text := root
	if tc := root.sub("text_config"); tc != nil {
		text = *tc
	}
	if !summary {
		text = withDefaults(text)
	}
	fam, _ := familyOf(text)
	s.generative = isGenerative(root, fam)
	s.quant = quantConfig(root, text)
	s.dtype = lower(firstString(text, root, "torch_dtype", "dtype"))
	switch fam.kind {
	case encoderDecoder:
		s.readEncoderDecoder(text, fam)
	case encoderOnly:
		s.encoder = s.readStack(text, fam, plainKeys)
	default:
		s.decoder = s.readStack(text, fam, plainKeys)
		s.readMoE(text, s.decoder)
		s.readMLA(text, s.decoder)
		s.ctx, _ = text.int(maxContext, "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx")
	}
	if s.decoder != nil && s.generative {
		s.windows = readWindows(text, s.decoder.layers, fam)
	}
	if vc := root.sub("vision_config"); vc != nil {
		v := withDefaults(*vc)
		vf, known := familyOf(v)
		if !known {
			vf = family{kind: encoderOnly, layerNorm: true, allBias: true}
		}
		s.vision = s.readStack(v, vf, visionKeys)
	}
	s.readVocab(text, root, fam)
	return s
}

// readEncoderDecoder reads Whisper/BART-style (encoder_layers,
// decoder_layers) or T5-style (num_layers, num_decoder_layers) configs.
func (s *shape) readEncoderDecoder(r reader, f family) {
	ek, dk := t5EncoderKeys, t5DecoderKeys
	if r.has("encoder_layers") || r.has("decoder_layers") {
		ek, dk = bartEncoderKeys, bartDecoderKeys
	}
	if strings.HasPrefix(lower(r.str("feed_forward_proj")), "gated") {
		f.gated = true // T5 v1.1, Flan-T5: gated-gelu
	}
	s.encoder = s.readStack(r, f, ek)
	s.decoder = s.readStack(r, f, dk)
	s.decoder.cross = true
	pos := dk.positions
	if len(pos) == 0 {
		pos = []string{"n_positions"}
	}
	s.ctx, _ = r.int(maxContext, pos...)
}

// readVocab reads the vocabulary and whether the LM head shares its weights.
// Vision encoders have no vocabulary; anything else without one is missing.
func (s *shape) readVocab(text, root reader, f family) {
	var fld field
	s.vocab, fld = text.int(maxVocab, "vocab_size", "n_vocab", "padded_vocab_size")
	if fld == absent && text.prefix != "" {
		s.vocab, fld = root.int(maxVocab, "vocab_size")
	}
	if fld == absent && (s.decoder != nil || f.embNorm) {
		s.missing = append(s.missing, text.prefix+"vocab_size")
	}
	if f.embNorm {
		s.typeVocab, _ = text.count(maxVocab, "type_vocab_size")
	}
	s.tied = f.tied
	if t, ok := text.flag("tie_word_embeddings"); ok {
		s.tied = t
	} else if t, ok := root.flag("tie_word_embeddings"); ok {
		s.tied = t
	}
}

// readMoE reads a mixture-of-experts MLP: the experts, the experts each
// token goes to, their size, the shared expert, and which layers route
// (DeepSeek's first_k_dense_replace and moe_layer_freq, Qwen's
// decoder_sparse_step and mlp_only_layers).
func (s *shape) readMoE(r reader, st *stack) {
	experts, fld := r.int(maxExperts, "num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
	if fld != valid || experts < 2 {
		return
	}
	m := &moe{experts: experts}
	m.perToken, _ = r.int(experts, "num_experts_per_tok", "num_selected_experts", "moe_topk")
	if m.inter, fld = r.int(maxDim, "moe_intermediate_size"); fld == absent {
		m.inter = st.inter // Mixtral: intermediate_size is each expert's
	}
	if sh, f := r.int(maxDim, "shared_expert_intermediate_size"); f == valid {
		m.shared = sh
	} else if n, f := r.int(maxExperts, "n_shared_experts"); f == valid {
		m.shared = n * m.inter
	}
	first, _ := r.count(maxLayers, "first_k_dense_replace")
	step, f := r.int(maxLayers, "decoder_sparse_step")
	if f != valid {
		step = 1
	}
	freq, f := r.int(maxLayers, "moe_layer_freq")
	if f != valid {
		freq = 1
	}
	dense := map[int64]bool{}
	for _, i := range r.ints("mlp_only_layers", maxLayers) {
		dense[i] = true
	}
	for i := int64(0); i < st.layers; i++ {
		if i >= first && !dense[i] && (i+1)%step == 0 && i%freq == 0 {
			m.layers++
		}
	}
	st.moe = m
}

// readMLA reads DeepSeek's multi-head latent attention sizes.
func (s *shape) readMLA(r reader, st *stack) {
	kv, fld := r.int(maxDim, "kv_lora_rank")
	if fld != valid {
		return
	}
	m := &mla{kvLora: kv}
	m.qLora, _ = r.int(maxDim, "q_lora_rank") // null: queries are projected directly
	for _, f := range []struct {
		key string
		v   *int64
	}{{"qk_rope_head_dim", &m.rope}, {"qk_nope_head_dim", &m.nope}, {"v_head_dim", &m.v}} {
		var fl field
		if *f.v, fl = r.int(maxDim, f.key); fl == absent {
			s.missing = append(s.missing, r.prefix+f.key)
		}
	}
	st.mla = m
}

// firstString is the first of keys that is a string in a, else in b.
func firstString(a, b reader, keys ...string) string {
	for _, r := range []reader{a, b} {
		for _, k := range keys {
			if v := r.str(k); v != "" {
				return v
			}
		}
	}
	return ""
}
