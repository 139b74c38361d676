package harness

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// KernelsScript is the harness file that reads a runtime's TorchTPU kernel
// table, run in a process of its own (internal/probe/kernels.go).
const KernelsScript = "harness_kernels.py"

// tpuOpsPath is the table shared with the harness (harness_ops.py reads the
// same file): which op the TPU reaches for each device-dependent op the CPU
// dispatches, and what a kernel table's kinds mean.
const tpuOpsPath = "tpu_ops.json"

// OpsTable is tpu_ops.json.
type OpsTable struct {
	About string            `json:"about"`
	Kinds map[string]string `json:"kinds"`
	Map   map[string]struct {
		TPU *string `json:"tpu"` // nil: the TPU reaches no op for it
		Why string  `json:"why"`
	} `json:"map"`
	SkipNamespaces []string `json:"skip_namespaces"`
	CPUOnlyMarkers []string `json:"cpu_only_markers"`
}

//go:embed tpu_ops.json
var tpuOpsJSON []byte

// TPUOpsTable is the embedded table; one that does not parse fails
// TestTPUOpsTable and panics at start-up.
var TPUOpsTable = must(parseOpsTable(tpuOpsJSON))

func parseOpsTable(data []byte) (OpsTable, error) {
	var t OpsTable
	if err := json.Unmarshal(data, &t); err != nil {
		return t, fmt.Errorf("harness: %s: %w", tpuOpsPath, err)
	}
	for _, k := range []string{compat.OpNative, compat.OpDefault, compat.OpFallback} {
		if t.Kinds[k] == "" {
			return t, fmt.Errorf("harness: %s: kind %q undescribed", tpuOpsPath, k)
		}
	}
	if len(t.CPUOnlyMarkers) == 0 {
		return t, fmt.Errorf("harness: %s: no cpu_only_markers", tpuOpsPath)
	}
	for from, to := range t.Map {
		if !strings.Contains(from, "::") {
			return t, fmt.Errorf("harness: %s: map key %q is not namespace::op", tpuOpsPath, from)
		}
		if to.Why == "" {
			return t, fmt.Errorf("harness: %s: map %q says not why", tpuOpsPath, from)
		}
		if to.TPU == nil {
			continue
		}
		if t.CPUOnly(*to.TPU) {
			return t, fmt.Errorf("harness: %s: map %q -> %q names a CPU-only op", tpuOpsPath, from, *to.TPU)
		}
		if _, again := t.Map[*to.TPU]; again {
			return t, fmt.Errorf("harness: %s: map %q -> %q is mapped again", tpuOpsPath, from, *to.TPU)
		}
	}
	return t, nil
}

// CPUOnly reports whether an op's name says it is the CPU's own
// (cpu_only_markers): no such name may reach a prediction unmapped.
func (t OpsTable) CPUOnly(op string) bool {
	for _, m := range t.CPUOnlyMarkers {
		if strings.Contains(op, m) {
			return true
		}
	}
	return false
}

// ToTPU is the op the TPU reaches for op, and false when it reaches none
// (a map entry of null, a skipped namespace).
func (t OpsTable) ToTPU(op string) (string, bool) {
	if ns, _, ok := strings.Cut(op, "::"); ok {
		for _, s := range t.SkipNamespaces {
			if ns == s {
				return "", false
			}
		}
	}
	if to, ok := t.Map[op]; ok {
		if to.TPU == nil {
			return "", false
		}
		return *to.TPU, true
	}
	return op, true
}

// Judge is the prediction of a trace against a kernel table: every traced
// op (renamed by ToTPU: the harness renamed them already, and renaming is
// idempotent) counted as native or default, or listed missing (a fallback)
// for the inference (forward, generate) or the train step, or unknown (the
// table does not name it).
func (t OpsTable) Judge(kt compat.KernelTable, tr compat.OpsTrace) compat.TPUOps {
	out := compat.TPUOps{Table: kt.Name(), Missing: []string{}, MissingTrain: []string{}}
	seen := map[string]bool{}
	missing, missingTrain, unknown := map[string]bool{}, map[string]bool{}, map[string]bool{}
	judge := func(ops []string, train bool) {
		for _, raw := range ops {
			op, ok := t.ToTPU(raw)
			if !ok {
				continue
			}
			kind, known := kt.Ops[op]
			if !seen[op] {
				seen[op] = true
				switch {
				case !known:
					unknown[op] = true
				case kind == compat.OpNative:
					out.Native++
				case kind == compat.OpDefault:
					out.Default++
				}
			}
			if known && kind == compat.OpFallback {
				if train {
					missingTrain[op] = true
				} else {
					missing[op] = true
				}
			}
		}
	}
	judge(tr.Forward, false)
	judge(tr.Generate, false)
	judge(tr.Train, true)
	out.Traced = len(seen)
	out.Missing, out.MissingTrain = sortedSet(missing), sortedSet(missingTrain)
	if len(unknown) > 0 {
		out.Unknown = sortedSet(unknown)
	}
	return out
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
