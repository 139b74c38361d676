package serving

import (
	"strings"
	"time"
)

// EvidenceMeasured labels a Measured: the serving probe ran
// (internal/serving/measure).
const EvidenceMeasured = "measured"

// Measured is one measured serving probe's verdict (internal/serving/measure
// runs it). It lives here, beside Cell, so that a model's serving cell
// can carry it (compat.Model imports this package; measure imports
// compat). Status, Stage and FailureClass take compat's values.
type Measured struct {
	Evidence           string  `json:"evidence"`
	Status             string  `json:"status"`
	Stage              *string `json:"stage"`
	FailureClass       *string `json:"failure_class"`
	Op                 *string `json:"op"`
	Signature          *string `json:"signature"`
	Message            *string `json:"message"`
	Runtime            Runtime `json:"runtime"`
	Device             *string `json:"device"`
	TensorParallelSize int     `json:"tensor_parallel_size"`
	MaxModelLen        int     `json:"max_model_len"`
	Metrics            Metrics `json:"metrics"`
	Tokens             []int   `json:"tokens,omitempty"`
	ReferenceTokens    []int   `json:"reference_tokens,omitempty"`
	LogTail            string  `json:"log_tail,omitempty"`
	// MeasuredAt is when the probe ended (zero: not said).
	MeasuredAt time.Time `json:"measured_at,omitzero"`
}

// Runtime is the serving probe's own runtime: the versions in the vLLM
// interpreter.
type Runtime struct {
	VLLMTorchTPU *string `json:"vllm-torchtpu"`
	VLLM         *string `json:"vllm"`
	Torch        *string `json:"torch"`
	TorchTPU     *string `json:"torch-tpu"`
	Libtpu       *string `json:"libtpu"`
	Python       *string `json:"python"`
}

// Key names the runtime as the serving probe's retests would:
// "vllm-torchtpu~torch~torch_tpu~libtpu" versions, an unknown one empty.
func (r Runtime) Key() string {
	v := func(p *string) string {
		if p == nil {
			return ""
		}
		return strings.ReplaceAll(*p, "~", "_")
	}
	return strings.Join([]string{v(r.VLLMTorchTPU), v(r.Torch), v(r.TorchTPU), v(r.Libtpu)}, "~")
}

// Metrics are the serving probe's figures; nil when not measured.
type Metrics struct {
	LoadS        *float64 `json:"load_s"`
	TTFTS        *float64 `json:"ttft_s"`
	TokensPerS   *float64 `json:"tokens_per_s"`
	AgreedTokens *int     `json:"agreed_tokens"`
}
