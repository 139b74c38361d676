package show

import (
	"fmt"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
)

// shardingWords name how a sharded probe split the model.
var shardingWords = map[compat.Sharding]string{
	compat.ShardingTP:   "tensor parallel (transformers' own plan)",
	compat.ShardingFSDP: "FSDP2 (fully_shard per layer)",
}

// deviceName is a result's device in short: the TPU generation (v6e),
// cpu, or the device as its runtime named it.
func deviceName(r compat.Result) string {
	if r.Target == compat.TargetCPU {
		return "cpu"
	}
	if d, ok := harness.MatchDevicePeak(string(r.Target), r.Runtime.Device); ok && d.Generation != "" {
		return d.Generation
	}
	if r.Runtime.Device != "" {
		return r.Runtime.Device
	}
	return string(r.Target)
}

// MeasuredChips is the table's note under readiness's estimate: the
// devices a sharded probe ran on ("2 × cpu, measured"); "" for a probe on
// one device.
func MeasuredChips(r *compat.Result) string {
	if r == nil || r.DevicesUsed < 2 {
		return ""
	}
	return fmt.Sprintf("%d × %s, measured", r.DevicesUsed, deviceName(*r))
}

// ShardedOn is the model page's line of a sharded result: its devices and
// how the model was split; "" for a probe on one device.
func ShardedOn(r compat.Result) string {
	if r.DevicesUsed < 2 {
		return ""
	}
	how := "sharding not reported (the probe ended before it was chosen)"
	if r.Sharding != nil {
		how = "sharded by " + shardingWords[*r.Sharding]
	}
	return fmt.Sprintf("%d × %s, %s", r.DevicesUsed, deviceName(r), how)
}
