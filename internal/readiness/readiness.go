// Package readiness answers, from a model's config.json and the Hub's
// safetensors metadata alone, what a TPU user asks before running it: how
// many parameters and bytes of bf16 weights, how many bytes of KV cache per
// token, how many devices of each TPU generation hold it, and what will need
// work (hints, each saying what to do). It is pure: no Python, no weights,
// no I/O. What cannot be computed from bad or missing sizes is left out
// (nil), with a config_incomplete hint; it never panics, and every number
// is finite and bounded.
package readiness

import (
	"maps"
	"slices"
)

// Version numbers the rules: a stored Readiness computed under another
// version is recomputed.
const Version = 1

// Severity says how much a hint matters.
type Severity string

// The severities: blocker (does not run as is), warn (runs, needs work),
// info (efficiency and precision notes, numbers not computed).
const (
	SeverityInfo    Severity = "info"
	SeverityWarn    Severity = "warn"
	SeverityBlocker Severity = "blocker"
)

// Hint codes.
const (
	HintDimsNotAligned        = "dims_not_aligned"
	HintSmallHeadDim          = "small_head_dim"
	HintMoEDynamicRouting     = "moe_dynamic_routing"
	HintQuantizedCUDAOnly     = "quantized_cuda_only"
	HintQuantizedNoTPUKernels = "quantized_no_tpu_kernels"
	HintFP16Checkpoint        = "fp16_checkpoint"
	HintNeedsSharding         = "needs_sharding"
	HintRemoteCode            = "remote_code"
	HintConfigIncomplete      = "config_incomplete"
)

// Codes lists every hint code, for filters and the methodology page.
var Codes = []string{
	HintRemoteCode, HintQuantizedCUDAOnly, HintQuantizedNoTPUKernels, HintNeedsSharding,
	HintMoEDynamicRouting, HintDimsNotAligned, HintSmallHeadDim, HintFP16Checkpoint, HintConfigIncomplete,
}

// Hint is one thing a TPU user should know, and what to do about it.
type Hint struct {
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	Text     string   `json:"text"`
}

// Params sources.
const (
	SourceSafetensors = "safetensors" // the Hub's count of the checkpoint's tensors
	SourceConfig      = "config"      // estimated from config.json's sizes
)

// Readiness is the contract's readiness object. A nil field was not
// computed (the hints say why).
type Readiness struct {
	Params           *int64         `json:"params"`
	ParamsSource     *string        `json:"params_source"`
	WeightsBytesBF16 *int64         `json:"weights_bytes_bf16"`
	KVBytesPerToken  *int64         `json:"kv_bytes_per_token"`
	MinDevices       map[string]int `json:"min_devices"`
	Hints            []Hint         `json:"hints"`
	// Extensions beyond the contract: the sequence length the KV cache in
	// min_devices was counted at, and that cache's size.
	ContextTokens  *int64 `json:"context_tokens,omitempty"`
	KVBytesContext *int64 `json:"kv_bytes_context,omitempty"`
	// Architectures are config.json's "architectures" (the model classes
	// it names, as vLLM's registry is keyed; see Architectures): empty when
	// it names none.
	Architectures []string `json:"architectures,omitempty"`
}

// Input is what readiness reads.
type Input struct {
	// Config is config.json as parsed (scan.ParseConfig), or the Hub's
	// summary of it from a listing; nil when unknown.
	Config map[string]any
	// Summary says Config is the Hub listing's summary of config.json
	// (architectures, model_type, auto_map, quantization_config, ...), not
	// the file: its missing sizes are not filled with defaults.
	Summary bool
	// Safetensors is the Hub's safetensors.parameters: elements per dtype
	// ("BF16": n, "F32": m); nil when the Hub has none.
	Safetensors map[string]int64
}

// Compute derives readiness. It never fails: what it cannot compute stays
// nil and a config_incomplete hint says what and why.
func Compute(in Input) Readiness {
	r, _ := compute(in)
	return r
}

// Shard is what splitting a model over devices needs to know: the bytes
// min_devices counts (its bf16 weights and one sequence's KV cache; 0 when
// unknown), and the attention heads a tensor-parallel split must divide
// evenly (the main stack's query and key/value heads; 0 when unknown).
type Shard struct {
	NeedBytes int64
	Heads     int64
	KVHeads   int64
}

// ShardOf is Shard for what Compute reads, by the same rules.
func ShardOf(in Input) Shard {
	_, sh := compute(in)
	return sh
}

// compute derives readiness and the sharding figures in one pass.
func compute(in Input) (Readiness, Shard) {
	s := readShape(in.Config, in.Summary)
	var r Readiness
	gaps := r.setParams(s, in.Safetensors)
	need, memGaps := r.setMemory(s)
	gaps = append(gaps, memGaps...)
	r.Hints = hints(s, in, &r, gaps)
	r.Architectures = Architectures(in.Config)
	sh := Shard{NeedBytes: need}
	if st := s.main(); st != nil {
		sh.Heads, sh.KVHeads = st.heads, st.kvHeads
	}
	return r, sh
}

// setParams fills params and weights_bytes_bf16 from the checkpoint's tensor
// count, else from the config's sizes. It returns what could not be
// computed.
func (r *Readiness) setParams(s *shape, st map[string]int64) []string {
	n, src, ok := int64(0), "", false
	if total, packed, good := safetensorsTotal(st); good && !(packed && s.quant != nil) {
		n, src, ok = total, SourceSafetensors, true
	} else if est, good := estimateParams(s); good {
		n, ok = toInt(est, maxParams)
		src = SourceConfig
	}
	if !ok {
		return []string{"params"}
	}
	w := n * bf16Bytes
	r.Params, r.ParamsSource, r.WeightsBytesBF16 = &n, &src, &w
	return nil
}

// setMemory fills kv_bytes_per_token and, with the weights, min_devices; it
// returns the bytes min_devices counts (0 when not computed) and what could
// not be computed.
func (r *Readiness) setMemory(s *shape) (int64, []string) {
	var gaps []string
	if per, ok := kvPerToken(s); ok {
		if v, ok := toInt(per, maxKVPerToken); ok {
			r.KVBytesPerToken = &v
		}
	}
	if r.KVBytesPerToken == nil {
		gaps = append(gaps, "kv_bytes_per_token")
	}
	var ctx int64
	if s.generative {
		if s.ctx == 0 {
			return 0, append(gaps, "min_devices")
		}
		ctx = min(s.ctx, MaxContext)
		r.ContextTokens = &ctx
	}
	seq, ok := kvSequence(s, ctx)
	kv, ok2 := toInt(seq, maxBytes)
	if !ok || !ok2 || r.KVBytesPerToken == nil || r.WeightsBytesBF16 == nil {
		return 0, append(gaps, "min_devices")
	}
	if s.generative {
		r.KVBytesContext = &kv
	}
	need := *r.WeightsBytesBF16 + kv
	r.MinDevices = minDevices(need)
	return need, gaps
}

// safetensorsTotal sums the elements of every dtype (the Hub's "total" is
// not trusted). packed says the checkpoint stores integer tensors beyond a
// trace (over 1% of elements): for a quantized checkpoint they pack several
// weights per element, so the sum is not the parameter count.
func safetensorsTotal(st map[string]int64) (total int64, packed, ok bool) {
	var ints int64
	for _, dtype := range slices.Sorted(maps.Keys(st)) {
		n := st[dtype]
		if n < 0 || n > maxParams || total > maxParams-n {
			return 0, false, false
		}
		total += n
		switch dtype {
		case "I8", "U8", "I16", "U16", "I32", "U32", "I4", "U4":
			ints += n
		}
	}
	if total == 0 {
		return 0, false, false
	}
	return total, ints*100 > total, true
}

// Bounds on what Architectures keeps of a config's list: a real config
// names one class, a few at most.
const (
	maxArchitectures   = 8
	maxArchitectureLen = 128
)

// Architectures reads config's "architectures": its strings, in order, at
// most maxArchitectures of them; a name that is empty or longer than
// maxArchitectureLen is left out (no real class name is).
func Architectures(config map[string]any) []string {
	var out []string
	for _, a := range (reader{m: config}).strings("architectures") {
		if a != "" && len(a) <= maxArchitectureLen && len(out) < maxArchitectures {
			out = append(out, a)
		}
	}
	return out
}
