package readiness

import "fmt"

// quantPath is what becomes of a quantized checkpoint on a TPU.
type quantPath int

const (
	quantCUDAOnly    quantPath = iota // kernels for CUDA (or other non-TPU devices) only
	quantDequantized                  // transformers dequantizes to bf16 off CUDA: runs at the bf16 size
	quantUnverified                   // no TPU kernels known; a PyTorch fallback may or may not run
)

// quantMethod says where a quantization method's kernels run.
type quantMethod struct {
	name string // as people call it
	path quantPath
	runs string // where its kernels run, from transformers 5.23's quantizers/
}

// quantMethods are transformers 5.23's quantization methods
// (utils/quantization_config.py QuantizationMethod), with where their
// kernels run according to quantizers/quantizer_*.py. None has an XLA/TPU
// path there.
var quantMethods = map[string]quantMethod{
	"gptq":         {"GPTQ", quantCUDAOnly, "its kernels (ExLlama, Marlin, Triton) run on CUDA; gptqmodel adds CPU, nothing for XLA"},
	"awq":          {"AWQ", quantCUDAOnly, "its GEMM/GEMV kernels run on CUDA (and Intel XPU)"},
	"bitsandbytes": {"bitsandbytes", quantCUDAOnly, "its 4-bit and 8-bit kernels run on CUDA (with CPU and XPU backends), not XLA"},
	"aqlm":         {"AQLM", quantCUDAOnly, "its kernels run on CUDA (and CPU)"},
	"vptq":         {"VPTQ", quantCUDAOnly, "transformers refuses to load it without a GPU"},
	"eetq":         {"EETQ", quantCUDAOnly, "transformers refuses to load it without a GPU"},
	"higgs":        {"HIGGS", quantCUDAOnly, "its FLUTE kernels run on CUDA only"},
	"spqr":         {"SpQR", quantCUDAOnly, "transformers refuses to load it without a GPU"},
	"fbgemm_fp8":   {"FBGEMM FP8", quantCUDAOnly, "its fbgemm-gpu kernels need a CUDA GPU (or XPU)"},
	"fp_quant":     {"FP-Quant", quantCUDAOnly, "its kernels run on CUDA (Blackwell) or XPU"},
	"nvfp4":        {"NVFP4", quantCUDAOnly, "its kernels need a CUDA GPU"},
	"hqq":          {"HQQ", quantCUDAOnly, "its kernels run on CUDA (and CPU)"},
	"bitnet":       {"BitNet", quantCUDAOnly, "its packed ternary kernels target CUDA"},
	"sinq":         {"SINQ", quantCUDAOnly, "its GemLite kernels run on CUDA"},
	"exl2":         {"EXL2", quantCUDAOnly, "ExLlamaV2's kernels run on CUDA only"},
	"marlin":       {"Marlin", quantCUDAOnly, "its kernels run on CUDA only"},
	"metal":        {"Metal", quantCUDAOnly, "its kernels run on Apple GPUs (MPS) only"},
	"fp8":          {"FP8", quantDequantized, "transformers dequantizes fine-grained FP8 checkpoints to bf16 when no CUDA or XPU device is present (quantizer_finegrained_fp8.py)"},
	"mxfp4":        {"MXFP4", quantDequantized, "transformers dequantizes MXFP4 to bf16 on accelerators other than cuda, xpu and cpu (quantizer_mxfp4.py)"},
}

// quantConfig returns the quantization_config of config.json, or of its
// text_config, or nil.
func quantConfig(root, text reader) map[string]any {
	for _, r := range []reader{root, text} {
		if q, ok := r.m["quantization_config"].(map[string]any); ok {
			return q
		}
	}
	return nil
}

// quantMethodOf names a quantization_config's method. Older bitsandbytes
// configs carry only load_in_4bit / load_in_8bit.
func quantMethodOf(q map[string]any) string {
	r := reader{m: q}
	if m := lower(r.str("quant_method")); m != "" {
		return m
	}
	if b4, _ := r.flag("load_in_4bit"); b4 {
		return "bitsandbytes"
	}
	if b8, _ := r.flag("load_in_8bit"); b8 {
		return "bitsandbytes"
	}
	return "unknown"
}

// quantHint is the hint for a quantized checkpoint.
func quantHint(q map[string]any) Hint {
	key := quantMethodOf(q)
	m, known := quantMethods[key]
	if !known {
		m = quantMethod{name: fmt.Sprintf("%q", clip(key)), path: quantUnverified}
	}
	switch m.path {
	case quantCUDAOnly:
		return Hint{Code: HintQuantizedCUDAOnly, Severity: SeverityBlocker, Text: fmt.Sprintf(
			"The checkpoint is quantized with %s: %s, so it does not run on a TPU as is. "+
				"Use the unquantized (bf16) checkpoint it was made from; min_devices counts bf16 weights.", m.name, m.runs)}
	case quantDequantized:
		return Hint{Code: HintQuantizedNoTPUKernels, Severity: SeverityWarn, Text: fmt.Sprintf(
			"The checkpoint is quantized with %s: %s. On a TPU it loads at the bf16 size min_devices counts, "+
				"without the memory saving; keeping it small needs a TPU-native quantized format.", m.name, m.runs)}
	}
	return Hint{Code: HintQuantizedNoTPUKernels, Severity: SeverityWarn, Text: fmt.Sprintf(
		"The checkpoint is quantized with %s, for which no TPU kernels are known: it may load through a slow "+
			"PyTorch fallback or not at all. Prefer the unquantized (bf16) checkpoint; min_devices counts bf16 weights.", m.name)}
}
