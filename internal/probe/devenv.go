package probe

import (
	"fmt"
	"regexp"
	"strings"
)

// tpuProcessPortBase is the first TPU_PROCESS_PORT of the probes on one
// host: libtpu's default port (8476); device i gets base+i, so that
// concurrent probes never share one.
const tpuProcessPortBase = 8476

// DeviceEnv is the environment that pins one harness process to device i
// of a host running one probe per device (--devices N), on a host whose
// TPU, as the Env stage named it (Runtime.Device, torch.tpu.get_device_name:
// "TPU v7", "TPU v6e", ...), is device ("" when unknown). The variables are
// torch_tpu's and libtpu's (torch_tpu/csrc/common/env_vars.h):
//
//   - TPU_VISIBLE_DEVICES=i and TPU_VISIBLE_CHIPS=i: torch_tpu takes
//     TPU_VISIBLE_DEVICES as its source of truth for a single device and
//     overwrites libtpu's TPU_VISIBLE_CHIPS with it, defaulting to "0" when
//     unset (csrc/common/environment.cc InitializeSingleDeviceEnvironment).
//   - ALLOW_MULTIPLE_LIBTPU_LOAD=1: several processes load libtpu on one
//     host; torch_tpu sets it for its own multi-process runs ("Avoid
//     multi-process libtpu lock", environment.cc InitializeDistributedEnvironment).
//   - TPU_PROCESS_PORT: a distinct port per process (tpuProcessPortBase+i).
//   - TPU_PROCESS_BOUNDS and TPU_CHIPS_PER_PROCESS_BOUNDS: one process of
//     one chip, in as many dimensions as the generation's topology has
//     (tpuUnitBounds); left out when the generation is unknown, as
//     torch_tpu's own single-device setup leaves them out.
//   - CUDA_VISIBLE_DEVICES=i on CUDA hosts.
func DeviceEnv(i int, device string) []string {
	env := []string{
		fmt.Sprintf("TPU_VISIBLE_DEVICES=%d", i), fmt.Sprintf("TPU_VISIBLE_CHIPS=%d", i),
		"ALLOW_MULTIPLE_LIBTPU_LOAD=1", fmt.Sprintf("TPU_PROCESS_PORT=%d", tpuProcessPortBase+i),
	}
	if b := tpuUnitBounds(device); b != "" {
		env = append(env, "TPU_PROCESS_BOUNDS="+b, "TPU_CHIPS_PER_PROCESS_BOUNDS="+b)
	}
	return append(env, fmt.Sprintf("CUDA_VISIBLE_DEVICES=%d", i))
}

// tpuGeneration finds the generation number in "TPU v4", "TPU v5e",
// "TPU v5p", "TPU v6e", "TPU v7", "TPU v7x", "TPU v5 lite", ...
var tpuGeneration = regexp.MustCompile(`\bv(\d+)`)

// tpuUnitBounds is the bounds string of one chip for the TPU named device:
// "1,1,1,1" for v7, whose topologies have four dimensions (torch_tpu
// _internal/utils/hardware.py _V7_TOPOLOGY "1,1,1,2", ...; environment.cc
// uses "1,1,1,1" chip bounds for a four-dimension topology), "1,1,1" for
// v4, v5e, v5p and v6e (three dimensions), "" for anything else.
func tpuUnitBounds(device string) string {
	name := strings.ToLower(device)
	if !strings.Contains(name, "tpu") {
		return ""
	}
	m := tpuGeneration.FindStringSubmatch(name)
	if m == nil {
		return ""
	}
	switch m[1] {
	case "7":
		return "1,1,1,1"
	case "4", "5", "6":
		return "1,1,1"
	}
	return ""
}
