package harness

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// TestTPUOpsTable: the embedded table loads, names no CPU-only op as the
// TPU's, and renames the CPU's SDPA to the op torch routes PrivateUse1 to.
func TestTPUOpsTable(t *testing.T) {
	tb := TPUOpsTable
	if got, ok := tb.ToTPU("aten::_scaled_dot_product_flash_attention_for_cpu"); !ok || got != "aten::_scaled_dot_product_fused_attention_overrideable" {
		t.Errorf("sdpa for cpu -> %q, %v", got, ok)
	}
	if _, ok := tb.ToTPU("aten::_fused_sdp_choice"); ok {
		t.Error("_fused_sdp_choice reaches an op on the TPU")
	}
	if _, ok := tb.ToTPU("profiler::_record_function_enter_new"); ok {
		t.Error("a profiler op is judged")
	}
	if got, ok := tb.ToTPU("aten::addmm"); !ok || got != "aten::addmm" {
		t.Errorf("an unmapped op -> %q, %v", got, ok)
	}
	n := 0
	for from := range tb.Map {
		if tb.CPUOnly(from) {
			n++
		}
		if to, ok := tb.ToTPU(from); ok && tb.CPUOnly(to) {
			t.Errorf("%s -> %s: a CPU-only name", from, to)
		}
	}
	if n == 0 {
		t.Error("the map renames no CPU-only op")
	}
}

func TestParseOpsTableRefuses(t *testing.T) {
	var base map[string]any
	if err := json.Unmarshal(tpuOpsJSON, &base); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		mod  func(m map[string]any)
		want string
	}{
		"a kind undescribed": {func(m map[string]any) { delete(m["kinds"].(map[string]any), "fallback") }, "fallback"},
		"no markers":         {func(m map[string]any) { m["cpu_only_markers"] = []string{} }, "cpu_only_markers"},
		"to a cpu op": {func(m map[string]any) {
			m["map"].(map[string]any)["aten::x"] = map[string]any{"tpu": "aten::y_for_cpu", "why": "w"}
		}, "CPU-only"},
		"no why":       {func(m map[string]any) { m["map"].(map[string]any)["aten::x"] = map[string]any{"tpu": "aten::y"} }, "not why"},
		"no namespace": {func(m map[string]any) { m["map"].(map[string]any)["x"] = map[string]any{"tpu": nil, "why": "w"} }, "namespace"},
		"mapped twice": {func(m map[string]any) {
			m["map"].(map[string]any)["aten::x"] = map[string]any{"tpu": "aten::_fused_sdp_choice", "why": "w"}
		}, "mapped again"},
	} {
		data, _ := json.Marshal(base)
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		tc.mod(m)
		data, _ = json.Marshal(m)
		if _, err := parseOpsTable(data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, tc.want)
		}
	}
}

// TestHarnessReadsTheTPUOpsTable keeps harness_ops.py on the shared table:
// it opens tpu_ops.json and names none of the table's ops itself.
func TestHarnessReadsTheTPUOpsTable(t *testing.T) {
	src, err := files.ReadFile("harness_ops.py")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), `"tpu_ops.json"`) {
		t.Error("harness_ops.py does not read tpu_ops.json")
	}
	code := regexp.MustCompile(`(?s)""".*?"""`).ReplaceAllString(string(src), "") // docstrings may name ops
	for from, to := range TPUOpsTable.Map {
		if strings.Contains(code, from) {
			t.Errorf("harness_ops.py's code names %s: a copy of the table", from)
		}
		if to.TPU != nil && strings.Contains(code, *to.TPU) {
			t.Errorf("harness_ops.py's code names %s: a copy of the table", *to.TPU)
		}
	}
	if _, err := files.ReadFile(tpuOpsPath); err != nil {
		t.Errorf("the table is not embedded with the harness: %v", err)
	}
}

func TestJudge(t *testing.T) {
	kt := compat.KernelTable{Torch: "2.15.0", TorchTPU: "0.2.0", Ops: map[string]string{
		"aten::addmm": compat.OpNative, "aten::index.Tensor": compat.OpDefault, "aten::median": compat.OpFallback,
		"aten::_scaled_dot_product_fused_attention_overrideable": compat.OpNative,
		"aten::_scaled_dot_product_flash_attention_for_cpu":      compat.OpFallback,
		"aten::_aminmax": compat.OpFallback, "aten::_fused_sdp_choice": compat.OpFallback,
	}}
	got := TPUOpsTable.Judge(kt, compat.OpsTrace{
		Forward:  []string{"aten::addmm", "aten::_scaled_dot_product_flash_attention_for_cpu", "aten::_fused_sdp_choice", "aten::median"},
		Generate: []string{"aten::index.Tensor", "torchvision::nms"},
		Train:    []string{"aten::addmm", "aten::median", "aten::_aminmax"},
	})
	want := compat.TPUOps{Table: "torch_tpu 0.2.0 / torch 2.15.0", Traced: 6, Native: 2, Default: 1,
		Missing: []string{"aten::median"}, MissingTrain: []string{"aten::_aminmax", "aten::median"},
		Unknown: []string{"torchvision::nms"}}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("judge:\n got %s\nwant %s", gj, wj)
	}
	if s := got.Summary(); s != "TorchTPU 0.2.0: 2 ops not implemented (aten::median, aten::_aminmax (train))" {
		t.Errorf("summary %q", s)
	}
	clean := TPUOpsTable.Judge(kt, compat.OpsTrace{Forward: []string{"aten::addmm", "aten::_scaled_dot_product_flash_attention_for_cpu"}})
	if s := clean.Summary(); s != "TorchTPU 0.2.0: all 2 ops implemented" {
		t.Errorf("summary %q", s)
	}
}
