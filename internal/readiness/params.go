package readiness

// Parameter counts are computed in float64: every input size is bounded
// (read.go), so no product overflows, and any count that passes the
// maxParams check is below 2^53, where float64 holds integers exactly.

// estimateParams counts the weights config.json implies: per layer the
// attention projections, the MLP (or the experts and their router), the
// norms and, where the family has them, the biases; plus the token
// embeddings, the LM head unless tied, learned position embeddings and the
// final norms. Left out: convolutional front ends (Whisper's, ViT's patch
// embedding), multimodal projectors and buffers. ok is false when a size it
// needs is unknown.
func estimateParams(s *shape) (float64, bool) {
	if s.main() == nil {
		return 0, false
	}
	total := 0.0
	for _, st := range []*stack{s.encoder, s.decoder, s.vision} {
		if st == nil {
			continue
		}
		n, ok := stackParams(st)
		if !ok {
			return 0, false
		}
		total += n
	}
	emb, ok := embeddingParams(s)
	if !ok {
		return 0, false
	}
	return total + emb, true
}

// stackParams counts one stack's layers and its final norm.
func stackParams(st *stack) (float64, bool) {
	if st.hidden == 0 || st.layers == 0 || st.heads == 0 || st.dim == 0 {
		return 0, false
	}
	H, L := float64(st.hidden), float64(st.layers)
	attn, ok := attentionParams(st)
	if !ok {
		return 0, false
	}
	norms := st.fam.norms
	if norms == 0 {
		norms = 2
	}
	if st.cross {
		attn += 4*H*float64(st.heads*st.dim) + 1*normParams(st) // q, k, v, o of the cross-attention, its norm
		if st.fam.allBias {
			attn += 3*float64(st.heads*st.dim) + H
		}
	}
	perLayer := attn + float64(norms)*normParams(st)
	routed := 0.0
	var moeLayers float64
	if st.moe != nil {
		if st.moe.inter == 0 {
			return 0, false
		}
		moeLayers = float64(st.moe.layers)
		E := float64(st.moe.experts)
		routed = E*mlpParams(st, st.moe.inter) + H*E // the experts and the router
		if st.moe.shared > 0 {
			routed += mlpParams(st, st.moe.shared)
		}
	}
	denseLayers := L - moeLayers
	if denseLayers > 0 && st.inter == 0 {
		return 0, false
	}
	total := L*perLayer + denseLayers*mlpParams(st, st.inter) + moeLayers*routed
	if !st.fam.embNorm {
		total += normParams(st) // the final norm (BERT's norm follows the embeddings instead)
	}
	return total, true
}

// attentionParams counts one layer's self-attention: q, k, v and o, their
// biases where the family has them, and Qwen3/Gemma 3's q and k norms. MLA
// (DeepSeek) projects through low-rank latents instead.
func attentionParams(st *stack) (float64, bool) {
	H, h, kv, d := float64(st.hidden), float64(st.heads), float64(st.kvHeads), float64(st.dim)
	if m := st.mla; m != nil {
		if m.rope == 0 || m.nope == 0 || m.v == 0 {
			return 0, false
		}
		qk := float64(m.nope + m.rope)
		q := H * h * qk
		if m.qLora > 0 {
			ql := float64(m.qLora)
			q = H*ql + ql + ql*h*qk // q_a_proj, q_a_layernorm, q_b_proj
		}
		kvl := float64(m.kvLora)
		kvProj := H*(kvl+float64(m.rope)) + kvl + kvl*h*float64(m.nope+m.v) // kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj
		return q + kvProj + h*float64(m.v)*H, true
	}
	if kv == 0 {
		return 0, false
	}
	n := H*h*d + 2*H*kv*d + h*d*H
	switch {
	case st.fam.allBias || st.attnBias:
		n += h*d + 2*kv*d + H
	case st.fam.qkvBias:
		n += h*d + 2*kv*d
	}
	if st.fam.qkNorm {
		n += 2 * d
	}
	return n, true
}

// mlpParams counts one MLP of intermediate size inter: gate, up and down
// projections when gated, else up and down; biases where the family has them.
func mlpParams(st *stack, inter int64) float64 {
	H, I := float64(st.hidden), float64(inter)
	if st.fam.gated {
		n := 3 * H * I
		if st.fam.allBias || st.mlpBias {
			n += 2*I + H
		}
		return n
	}
	n := 2 * H * I
	if st.fam.allBias || st.mlpBias {
		n += I + H
	}
	return n
}

// normParams is one norm over the hidden size: a weight (RMSNorm), or a
// weight and a bias (LayerNorm).
func normParams(st *stack) float64 {
	if st.fam.layerNorm {
		return 2 * float64(st.hidden)
	}
	return float64(st.hidden)
}

// embeddingParams counts the token embeddings (shared by an encoder-decoder's
// stacks), the LM head of a generative model unless tied, learned position
// embeddings, BERT's token type embeddings and its embedding norm.
func embeddingParams(s *shape) (float64, bool) {
	main := s.main()
	if main.hidden == 0 {
		return 0, false
	}
	H := float64(main.hidden)
	n := 0.0
	if s.vocab > 0 {
		n = float64(s.vocab) * H
		if s.generative && !s.tied {
			n *= 2
		}
	} else if s.decoder != nil || main.fam.embNorm {
		return 0, false
	}
	for _, st := range []*stack{s.encoder, s.decoder} {
		if st != nil && st.fam.learnedPos {
			n += float64(st.positions) * float64(st.hidden)
		}
	}
	n += float64(s.typeVocab) * H
	if main.fam.embNorm {
		n += normParams(main)
	}
	return n, true
}
