package readiness

import "math"

// Generation is one TPU generation as TorchTPU exposes it: the HBM of one
// device and the width of its matrix unit (MXU), to which XLA pads matmul
// dimensions.
type Generation struct {
	Name     string
	HBMBytes int64
	MXU      int64
}

// Generations are the TPU generations readiness counts devices for, oldest
// first. HBM per device, as TorchTPU exposes it:
//   - v5e: 16 GiB, one TensorCore per chip, 4 MXUs of 128×128
//     (cloud.google.com/tpu/docs/v5e).
//   - v5p: 95 GiB per chip, its two TensorCores one device (megacore)
//     (cloud.google.com/tpu/docs/v5p; docs/tpu7x's comparison table: 95 GiB).
//   - v6e: 32 GiB, one TensorCore with two 256×256 MXUs
//     (cloud.google.com/tpu/docs/v6e).
//   - v7x (Ironwood, TPU7x): 192 GiB per chip with two TensorCores, each its
//     own device ("the Ironwood programming model lets you access two TPU
//     devices", cloud.google.com/tpu/docs/tpu7x; torch_tpu's hardware.py gives
//     v7 hosts a device axis of 2), so 96 GiB per device; 256-wide MXUs.
//
// MXU widths as jax/_src/tpu_info.py: 128 before v6, 256 from v6 on.
// internal/harness/devices.json carries the same HBM and MXU figures
// for the harness; a test keeps the two in step.
var Generations = []Generation{
	{Name: "v5e", HBMBytes: 16 << 30, MXU: 128},
	{Name: "v5p", HBMBytes: 95 << 30, MXU: 128},
	{Name: "v6e", HBMBytes: 32 << 30, MXU: 256},
	{Name: "v7x", HBMBytes: 96 << 30, MXU: 256},
}

// ServingHeadroomPct is the share, in percent, added to what serving a
// model needs (weights and KV cache): activations, compiler scratch and
// fragmentation.
const ServingHeadroomPct = 10

// MinDevices is how many devices of a generation serve a model: hold need
// bytes (weights plus the KV cache of one sequence) with ServingHeadroomPct
// more, sharded evenly: ceil(need × 1.1 / HBM per device). It is
// readiness's answer to "does it fit on a TPU", used for min_devices,
// needs_sharding and the summary's one-device share. It is not the scan's
// probe fit (scan.ProbeNeed with internal/harness/fit.json), which asks
// another question: whether one smoke test's weights, in the dtype and
// copies it runs them in, fit the memory of the host or device it runs on.
func MinDevices(need int64, g Generation) int {
	if need <= 0 {
		return 1
	}
	// need × (100 + pct) / 100, rounded up, in integers: need is at most a
	// few 10^14.
	padded := (need*(100+ServingHeadroomPct) + 99) / 100
	return int((padded + g.HBMBytes - 1) / g.HBMBytes)
}

// minDevices is MinDevices for every generation, keyed by name.
func minDevices(need int64) map[string]int {
	out := make(map[string]int, len(Generations))
	for _, g := range Generations {
		out[g.Name] = MinDevices(need, g)
	}
	return out
}

// maxKVPerToken bounds the KV cache of one token: 1 GiB, far above any
// real model's (GPT-3 175B's full multi-head cache is 4.5 MiB).
const maxKVPerToken = 1 << 30

// maxBytes bounds weights plus KV cache: beyond it the sizes are not a real
// model's (it is far above maxParams × 2 bytes plus any real KV cache).
const maxBytes = 1e16

// toInt converts a computed count to int64 when it is finite and at most
// limit.
func toInt(x, limit float64) (int64, bool) {
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > limit {
		return 0, false
	}
	return int64(math.Round(x)), true
}

// GenerationNamed finds a generation by its name (v5e, v5p, v6e, v7x).
func GenerationNamed(name string) (Generation, bool) {
	for _, g := range Generations {
		if g.Name == name {
			return g, true
		}
	}
	return Generation{}, false
}
