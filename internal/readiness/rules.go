package readiness

import (
	"fmt"
	"slices"
)

// Rule documents one hint for the methodology page: when it fires and what
// it tells the user to do. The code that fires it is in hints.go and
// quant.go; TestRulesDocumentEveryCode keeps the two lists in step.
type Rule struct {
	Code     string
	Severity Severity
	When     string
	Do       string
}

// Rules lists every hint, in the order Codes (and the hints of a model) come.
var Rules = []Rule{
	{HintRemoteCode, SeverityBlocker,
		"config.json has an auto_map: its classes are code in the model repository, loadable only with trust_remote_code.",
		"Load a transformers-native implementation of the model_type where one exists; otherwise port the architecture. The scanner never runs repository code."},
	{HintQuantizedCUDAOnly, SeverityBlocker,
		"quantization_config names a method whose kernels run on CUDA (or other non-TPU devices) only: GPTQ, AWQ, bitsandbytes, AQLM, VPTQ, EETQ, HIGGS, SpQR, FBGEMM FP8, FP-Quant, NVFP4, HQQ, BitNet, SINQ, EXL2, Marlin, Metal (transformers 5.23's quantizers have no XLA path for any of them).",
		"Use the unquantized bf16 checkpoint the quantized one was made from; min_devices counts bf16 weights."},
	{HintQuantizedNoTPUKernels, SeverityWarn,
		"quantization_config names a method that loads off CUDA only by dequantizing to bf16 (fine-grained FP8, MXFP4), or one with no TPU kernels known (torchao, quanto, compressed-tensors, ...).",
		"Expect the bf16 footprint min_devices counts, not the quantized one; prefer the unquantized checkpoint."},
	{HintNeedsSharding, SeverityWarn,
		fmt.Sprintf("The bf16 weights plus the KV cache of one sequence, with %d%% headroom, need more than one v6e device (32 GiB).", ServingHeadroomPct),
		"Shard the weights and the KV cache across that many devices (tensor parallelism), or use a generation with more HBM per device (v5p, v7x)."},
	{HintMoEDynamicRouting, SeverityWarn,
		"The model is a mixture of experts (num_local_experts, num_experts or n_routed_experts of 2 or more): which experts a token uses depends on the data, while XLA compiles static shapes.",
		"Use a static-shape MoE (a grouped matmul over all experts, or a fixed expert capacity) rather than data-dependent dispatch, and shard the experts across devices."},
	{HintDimsNotAligned, SeverityInfo,
		"The hidden size, the (expert) intermediate size, a head_dim of 128 or more, or the vocabulary is not a multiple of the MXU width: 128 on v5e and v5p, 256 on v6e and v7x. The hint names each size, what it pads to and the share of the padded width that is idle.",
		"Nothing to change in a published checkpoint; when training or pruning, choose multiples of 256."},
	{HintSmallHeadDim, SeverityInfo,
		"head_dim is below 128: attention's QK^T and PV matmuls contract over head_dim and fill only part of the MXU (head_dim/128 on v5e/v5p, head_dim/256 on v6e/v7x).",
		"Expect attention below peak; batching more sequences keeps the rest of the model busier."},
	{HintFP16Checkpoint, SeverityInfo,
		"config.json's torch_dtype is float16, or most of the checkpoint's tensors are F16.",
		"Load with dtype=torch.bfloat16 (TPUs compute in bfloat16): the range only grows, but 3 significand bits are lost, so compare outputs with a float32 reference."},
	{HintConfigIncomplete, SeverityInfo,
		"A number could not be computed: config.json is unknown (a gated model, or only the Hub listing's summary of it), a size is missing, or a size is zero, negative, fractional, not a number or beyond any real model's. The hint names the keys.",
		"Nothing for users; a model's author can give config.json complete sizes (save_pretrained writes them)."},
}

// ValidCode reports whether code is a hint code (for filters).
func ValidCode(code string) bool { return slices.Contains(Codes, code) }

// Level sums a readiness up for the table's marker.
type Level string

// The levels, from the hints' severities.
const (
	LevelReady   Level = "ready"   // no warning or blocker, and min_devices known
	LevelWarn    Level = "warn"    // runs, but a warn hint needs work
	LevelBlocker Level = "blocker" // a blocker hint: does not run on a TPU as is
	LevelUnknown Level = "unknown" // no readiness, or too little known to call it ready
)

// LevelOf is the marker rule: the most severe hint decides; with only info
// hints a model is ready when its device count is known.
func LevelOf(r *Readiness) Level {
	if r == nil {
		return LevelUnknown
	}
	level := LevelReady
	for _, h := range r.Hints {
		switch h.Severity {
		case SeverityBlocker:
			return LevelBlocker
		case SeverityWarn:
			level = LevelWarn
		}
	}
	if level == LevelReady && r.MinDevices == nil {
		return LevelUnknown
	}
	return level
}
