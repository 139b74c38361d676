package readiness

import (
	"fmt"
	"slices"
	"strings"
)

// hints applies every rule, most severe first.
func hints(s *shape, in Input, r *Readiness, gaps []string) []Hint {
	out := []Hint{}
	// The rule of internal/harness/remote_code.json (which readiness, below
	// compat, cannot import): its test in internal/harness holds the two in step.
	if v, ok := in.Config["auto_map"]; ok && v != nil {
		out = append(out, remoteCodeHint(s))
	}
	if s.quant != nil {
		out = append(out, quantHint(s.quant))
	}
	if h, ok := shardingHint(r); ok {
		out = append(out, h)
	}
	if st := s.decoder; st != nil && st.moe != nil {
		out = append(out, moeHint(st))
	}
	if h, ok := alignmentHint(s); ok {
		out = append(out, h)
	}
	if st := s.main(); st != nil && st.mla == nil && st.dim > 0 && st.dim < 128 {
		out = append(out, smallHeadHint(st.dim))
	}
	if fp16(s, in.Safetensors) {
		out = append(out, Hint{Code: HintFP16Checkpoint, Severity: SeverityInfo, Text: "The weights are stored in " +
			"float16; TPUs compute in bfloat16, so they are cast on load (load with dtype=torch.bfloat16, as the " +
			"scanner does). bfloat16 has float16's range and more but 3 fewer significand bits: expect small " +
			"differences from float16 GPU runs, and check outputs against a float32 reference."})
	}
	if len(gaps) > 0 {
		out = append(out, incompleteHint(s, in, gaps))
	}
	return out
}

func remoteCodeHint(s *shape) Hint {
	native := "The architecture has to be ported to transformers first"
	if s.modelType != "" {
		native = fmt.Sprintf("If transformers implements model_type %q natively, load the checkpoint with its "+
			"native class instead; otherwise the architecture has to be ported to transformers first", clip(s.modelType))
	}
	return Hint{Code: HintRemoteCode, Severity: SeverityBlocker, Text: "config.json's auto_map points at model " +
		"code in the repository: loading it needs trust_remote_code, which the scanner never runs. " + native + "."}
}

func shardingHint(r *Readiness) (Hint, bool) {
	n := r.MinDevices["v6e"]
	if n <= 1 || r.WeightsBytesBF16 == nil {
		return Hint{}, false
	}
	kv := ""
	if r.KVBytesContext != nil && r.ContextTokens != nil {
		kv = fmt.Sprintf(" and the KV cache of one %d-token sequence (%s)", *r.ContextTokens, gib(*r.KVBytesContext))
	}
	return Hint{Code: HintNeedsSharding, Severity: SeverityWarn, Text: fmt.Sprintf(
		"The bf16 weights (%s)%s, with %d%% headroom, need %d v6e devices of 32 GiB: shard the weights and the KV "+
			"cache across %d devices (tensor parallelism), or use v5p (%d) or v7x (%d).",
		gib(*r.WeightsBytesBF16), kv, ServingHeadroomPct, n, n, r.MinDevices["v5p"], r.MinDevices["v7x"])}, true
}

func moeHint(st *stack) Hint {
	m := st.moe
	per := ""
	if m.perToken > 0 {
		per = fmt.Sprintf(", %d per token", m.perToken)
	}
	return Hint{Code: HintMoEDynamicRouting, Severity: SeverityWarn, Text: fmt.Sprintf(
		"Mixture of experts (%d experts%s, in %d of %d layers): which experts a token goes to depends on the data, "+
			"but XLA compiles static shapes, so an implementation either computes every expert for every token, "+
			"pads experts to a fixed capacity, or recompiles as the routing changes. Use a static-shape MoE "+
			"(grouped matmul over all experts, or a fixed capacity) and shard the experts across devices "+
			"(expert parallelism).", m.experts, per, m.layers, st.layers)}
}

func smallHeadHint(dim int64) Hint {
	return Hint{Code: HintSmallHeadDim, Severity: SeverityInfo, Text: fmt.Sprintf(
		"head_dim is %d: attention's QK^T and PV matmuls contract over head_dim, which fills %d%% of a 128-wide MXU "+
			"(v5e, v5p) and %d%% of a 256-wide one (v6e, v7x). Expect attention below peak; nothing to change in the "+
			"checkpoint, but batching more sequences keeps the rest of the model busier.",
		dim, min(100, dim*100/128), min(100, dim*100/256))}
}

// alignmentHint names the sizes that are not multiples of the MXU width and
// the share of the padded width that is wasted. head_dim is judged here only
// from 128 up (below, small_head_dim owns it) and against 128 only: TPU
// attention kernels tile head_dim by 128 on every generation.
func alignmentHint(s *shape) (Hint, bool) {
	st := s.main()
	if st == nil {
		return Hint{}, false
	}
	type dim struct {
		name  string
		n     int64
		only8 bool // judged against 128 only
	}
	dims := []dim{{"hidden size", st.hidden, false}}
	if st.moe == nil || st.moe.layers < st.layers {
		dims = append(dims, dim{"intermediate size", st.inter, false})
	}
	if st.moe != nil {
		dims = append(dims, dim{"expert intermediate size", st.moe.inter, false})
	}
	if st.mla == nil && st.dim >= 128 {
		dims = append(dims, dim{"head_dim", st.dim, true})
	}
	dims = append(dims, dim{"vocabulary", s.vocab, false})
	var parts []string
	for _, d := range dims {
		if d.n <= 0 {
			continue
		}
		if p := padding(d.n, d.only8); p != "" {
			parts = append(parts, d.name+" "+p)
		}
	}
	if len(parts) == 0 {
		return Hint{}, false
	}
	return Hint{Code: HintDimsNotAligned, Severity: SeverityInfo, Text: "XLA pads matmul dimensions to the MXU " +
		"width (128 on v5e/v5p, 256 on v6e/v7x), and the padding is wasted work: " + strings.Join(parts, "; ") +
		". Nothing to change in a published checkpoint; when training or pruning a model, choose multiples of 256."}, true
}

// padding describes how n pads to 128 and 256, or "" when it needs none.
func padding(n int64, only128 bool) string {
	p128, p256 := roundUp(n, 128), roundUp(n, 256)
	switch {
	case p128 != n && only128:
		return fmt.Sprintf("%d pads to %d (%s idle)", n, p128, share(n, p128))
	case p128 != n:
		return fmt.Sprintf("%d pads to %d on v5e/v5p (%s idle) and %d on v6e/v7x (%s)", n, p128, share(n, p128), p256, share(n, p256))
	case p256 != n && !only128:
		return fmt.Sprintf("%d is a multiple of 128 but pads to %d on v6e/v7x (%s idle)", n, p256, share(n, p256))
	}
	return ""
}

func roundUp(n, m int64) int64 { return (n + m - 1) / m * m }

// share is the padded part of p as a percentage.
func share(n, p int64) string { return fmt.Sprintf("%.1f%%", float64(p-n)*100/float64(p)) }

// fp16 says the checkpoint stores float16 weights: config.json says so, or
// most of the Hub's counted elements are F16.
func fp16(s *shape, st map[string]int64) bool {
	if s.dtype == "float16" || s.dtype == "fp16" {
		return true
	}
	total, _, ok := safetensorsTotal(st)
	return ok && st["F16"]*2 > total
}

// incompleteHint says what was not computed and why.
func incompleteHint(s *shape, in Input, gaps []string) Hint {
	var why []string
	st := s.main()
	switch {
	case in.Config == nil:
		why = append(why, "config.json is not known")
	case in.Summary:
		why = append(why, "only the Hub listing's summary of config.json is known, without layer sizes (the scanner reads config.json when it tests the model)")
	case st != nil && st.hidden == 0 && st.layers == 0 && len(s.bad) == 0:
		why = append(why, "config.json has no layer sizes")
	default:
		if len(s.missing) > 0 {
			why = append(why, "missing from config.json: "+clip(strings.Join(s.missing, ", ")))
		}
		if len(s.bad) > 0 {
			why = append(why, "zero, negative, fractional, absurd or not a number: "+clip(strings.Join(s.bad, ", ")))
		}
		if s.generative && s.ctx == 0 && !slices.Contains(s.bad, "max_position_embeddings") {
			why = append(why, "no context length (max_position_embeddings)")
		}
	}
	if len(why) == 0 {
		why = append(why, "the sizes multiply to more than any real model's")
	}
	return Hint{Code: HintConfigIncomplete, Severity: SeverityInfo, Text: fmt.Sprintf(
		"Not computed: %s. Why: %s. If this is your model, give config.json complete sizes "+
			"(transformers' save_pretrained writes them).", strings.Join(gaps, ", "), strings.Join(why, "; "))}
}

// gib formats bytes as GiB.
func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// clip bounds a string from the Hub quoted in a hint.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}
