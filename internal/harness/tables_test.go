package harness

import (
	"encoding/json"
	"strings"
	"testing"
)

// fitDoc is a minimal fit.json at the edges of what parseFit accepts: a
// factor of exactly 1, no slack, one byte per parameter, one copy.
func fitDoc(mod func(m map[string]any)) []byte {
	m := map[string]any{
		"fit_factor":                 1.0,
		"fit_slack_bytes":            0,
		"dtype_bytes":                map[string]any{"int8": 1},
		"checkpoint_bytes_per_param": map[string]any{"min": 1, "max": 1},
		"train_state_factor":         1,
		"targets": map[string]any{
			"cpu":  map[string]any{"dtype": "int8", "copies": 1},
			"tpu":  map[string]any{"dtype": "int8", "copies": 1},
			"cuda": map[string]any{"dtype": "int8", "copies": 1},
		},
	}
	if mod != nil {
		mod(m)
	}
	data, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return data
}

// TestFitTableBounds: the smallest sane constants load (a factor of 1 is
// "no headroom", not an error; a 1-byte dtype and one copy are real), and
// anything below them is refused with a message naming the constant.
func TestFitTableBounds(t *testing.T) {
	if _, err := parseFit(fitDoc(nil)); err != nil {
		t.Fatalf("the smallest sane table is refused: %v", err)
	}
	target := func(m map[string]any, name string) map[string]any {
		return m["targets"].(map[string]any)[name].(map[string]any)
	}
	for name, tc := range map[string]struct {
		mod  func(m map[string]any)
		want string
	}{
		"factor below 1":           {func(m map[string]any) { m["fit_factor"] = 0.99 }, "fit_factor"},
		"negative slack":           {func(m map[string]any) { m["fit_slack_bytes"] = -1 }, "fit_slack_bytes"},
		"train state below 1":      {func(m map[string]any) { m["train_state_factor"] = 0 }, "train_state_factor"},
		"checkpoint min 0":         {func(m map[string]any) { m["checkpoint_bytes_per_param"] = map[string]any{"min": 0, "max": 1} }, "checkpoint_bytes_per_param"},
		"checkpoint max < min":     {func(m map[string]any) { m["checkpoint_bytes_per_param"] = map[string]any{"min": 2, "max": 1} }, "checkpoint_bytes_per_param"},
		"no copies":                {func(m map[string]any) { target(m, "tpu")["copies"] = 0 }, "target tpu"},
		"dtype of 0 bytes":         {func(m map[string]any) { m["dtype_bytes"] = map[string]any{"int8": 0} }, "target cpu"},
		"dtype not in dtype_bytes": {func(m map[string]any) { target(m, "cuda")["dtype"] = "float8" }, "target cuda"},
	} {
		_, err := parseFit(fitDoc(tc.mod))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", name, err, tc.want)
		}
	}
	// Within range on both sides of each bound: a bigger factor, slack,
	// checkpoint range and copy count load too.
	ok := fitDoc(func(m map[string]any) {
		m["fit_factor"], m["fit_slack_bytes"] = 1.01, 1
		m["checkpoint_bytes_per_param"] = map[string]any{"min": 2, "max": 4}
		target(m, "cpu")["copies"] = 2
	})
	if got, err := parseFit(ok); err != nil || got.FitFactor != 1.01 || got.Targets["cpu"].Copies != 2 {
		t.Errorf("a roomier table: %+v, %v", got, err)
	}
}

// numericsDoc is a numerics.json whose three dtypes all have bounds b.
func numericsDoc(b map[string]float64) []byte {
	m := map[string]any{
		"dtypes": map[string]any{"float32": b, "float16": b, "bfloat16": b},
		"kinds":  map[string]any{"logits": map[string]any{"checks": []string{"max_abs", "top1"}}},
	}
	data, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return data
}

// TestNumericsTableBounds: tolerances must be positive and the shares
// (top-1 agreement, cosine) in (0, 1]: exactly 1 ("all of them", "the same
// direction") is a bound a strict dtype may set; 0 or above 1 is not.
func TestNumericsTableBounds(t *testing.T) {
	edge := func(mod func(b map[string]float64)) map[string]float64 {
		b := map[string]float64{"atol": 1e-6, "rtol": 1e-6, "top1": 1, "tie_rtol": 0, "rel_error": 1e-6, "cosine": 1,
			"train_loss_atol": 1e-6, "train_loss_rtol": 1e-6}
		if mod != nil {
			mod(b)
		}
		return b
	}
	if got, err := parseNumerics(numericsDoc(edge(nil))); err != nil || got.Dtypes["float16"].Top1 != 1 {
		t.Fatalf("top1 and cosine of exactly 1: %+v, %v", got, err)
	}
	for name, mod := range map[string]func(b map[string]float64){
		"atol 0":            func(b map[string]float64) { b["atol"] = 0 },
		"rtol 0":            func(b map[string]float64) { b["rtol"] = 0 },
		"top1 0":            func(b map[string]float64) { b["top1"] = 0 },
		"top1 > 1":          func(b map[string]float64) { b["top1"] = 1.01 },
		"rel_error 0":       func(b map[string]float64) { b["rel_error"] = 0 },
		"cosine 0":          func(b map[string]float64) { b["cosine"] = 0 },
		"cosine > 1":        func(b map[string]float64) { b["cosine"] = 1.01 },
		"train_loss_atol 0": func(b map[string]float64) { b["train_loss_atol"] = 0 },
		"train_loss_rtol 0": func(b map[string]float64) { b["train_loss_rtol"] = 0 },
	} {
		_, err := parseNumerics(numericsDoc(edge(mod)))
		if err == nil || !strings.Contains(err.Error(), "dtype float32") {
			t.Errorf("%s: error %v, want one naming dtype float32", name, err)
		}
	}
	if _, err := parseNumerics([]byte(`{"dtypes": {}, "kinds": {}}`)); err == nil || !strings.Contains(err.Error(), "no kinds") {
		t.Errorf("no kinds: error %v", err)
	}
	noMaxAbs := strings.Replace(string(numericsDoc(edge(nil))), `"max_abs",`, "", 1)
	if _, err := parseNumerics([]byte(noMaxAbs)); err == nil || !strings.Contains(err.Error(), "every kind checks max_abs") {
		t.Errorf("a kind without max_abs: error %v", err)
	}
}
