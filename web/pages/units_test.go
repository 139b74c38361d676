package pages

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
)

// TestMetricRowsShowFamilyNumerics: the relative error and cosine similarity
// of non-logit outputs are shown when measured, and not when not.
func TestMetricRowsShowFamilyNumerics(t *testing.T) {
	rel, cos := 0.0123, 0.9999876
	rows := metricRows(compat.Metrics{RelError: &rel, CosineSimilarity: &cos})
	got := map[string]string{}
	for _, r := range rows {
		got[r.Name] = r.Value
	}
	if got["Relative error vs CPU"] != "0.0123" || got["Cosine similarity vs CPU"] != "0.999988" {
		t.Errorf("rows = %v", got)
	}
	for _, r := range metricRows(compat.Metrics{}) {
		if strings.Contains(r.Name, "Relative error") || strings.Contains(r.Name, "Cosine") {
			t.Errorf("unmeasured %s shown", r.Name)
		}
	}
}

// The other extensions (tolerance, compiled step, time to first token,
// perplexity, parameters) show, each with its value, exactly when measured.
func TestMetricRowsShowExtensionsWhenMeasured(t *testing.T) {
	tol, step, ttft, ppl := 0.002, 12.5, 80.25, 7.5
	params := int64(600_000_000)
	measured := compat.Metrics{Tolerance: &tol, CompiledStepMS: &step, TTFTMS: &ttft, Perplexity: &ppl, ParamCount: &params}
	want := map[string]string{"Tolerance": "0.002", "Compiled step": "12.5 ms", "Time to first token": "80.2", "Perplexity": "7.5",
		"Parameters": "600"}
	got := map[string]string{}
	for _, r := range metricRows(measured) {
		got[r.Name] = r.Value
	}
	for name, value := range want {
		if v, ok := got[name]; !ok || !strings.Contains(v, value) {
			t.Errorf("measured %s: row %q (shown %v), want it to hold %q", name, v, ok, value)
		}
	}
	for _, r := range metricRows(compat.Metrics{}) {
		if _, ok := want[r.Name]; ok {
			t.Errorf("unmeasured %s shown as %q", r.Name, r.Value)
		}
	}
}

// containsTarget finds a target in a list, and only that target.
func TestContainsTarget(t *testing.T) {
	for _, c := range []struct {
		ts   []compat.Target
		t    compat.Target
		want bool
	}{
		{nil, compat.TargetTPU, false},
		{[]compat.Target{compat.TargetCPU}, compat.TargetTPU, false},
		{[]compat.Target{compat.TargetCPU, compat.TargetCUDA}, compat.TargetTPU, false},
		{[]compat.Target{compat.TargetCPU, compat.TargetTPU}, compat.TargetTPU, true},
		{[]compat.Target{compat.TargetTPU}, compat.TargetTPU, true},
	} {
		if got := containsTarget(c.ts, c.t); got != c.want {
			t.Errorf("containsTarget(%v, %s) = %v, want %v", c.ts, c.t, got, c.want)
		}
	}
}

// Form tokens are valid for their model (any case) within their life,
// and for no other model, after it, or from another server's key.
func TestFormTokens(t *testing.T) {
	now := testTime
	f := newFormTokens(func() time.Time { return now })
	stamp, tok := f.issue("Org/Model")
	if !f.valid("Org/Model", stamp, tok) || !f.valid("org/model", stamp, tok) {
		t.Error("a fresh token refused")
	}
	if f.valid("org/other", stamp, tok) || f.valid("Org/Model", stamp+"1", tok) || f.valid("Org/Model", "x", tok) || f.valid("Org/Model", stamp, tok[:63]) {
		t.Error("a token for something else accepted")
	}
	if newFormTokens(func() time.Time { return now }).valid("Org/Model", stamp, tok) {
		t.Error("another process's key accepted the token")
	}
	now = now.Add(formTokenLife + time.Second)
	if f.valid("Org/Model", stamp, tok) {
		t.Error("an expired token accepted")
	}
	now = testTime.Add(-2 * time.Minute)
	if f.valid("Org/Model", stamp, tok) {
		t.Error("a token from the future accepted")
	}
}

// TestRequestsOff: without a desk there is no route, no form, and the
// OpenAPI document does not promise them.
// The compare page's two selects list every runtime and each marks the one
// compared on its side; without a comparison neither marks any.
func TestRuntimeOptionsSelectTheComparedPair(t *testing.T) {
	v1, v2 := store.RuntimeStats{Ref: rtV1.Ref("tpu")}, store.RuntimeStats{Ref: rtV2.Ref("tpu")}
	rts := []store.RuntimeStats{v2, v1}
	selected := func(opts []runtimeOption) (keys []string) {
		if len(opts) != len(rts) {
			t.Errorf("%d options for %d runtimes", len(opts), len(rts))
		}
		for _, o := range opts {
			if o.Selected {
				keys = append(keys, o.Key)
			}
		}
		return keys
	}
	for _, c := range []struct {
		name             string
		cmp              *data.Comparison
		wantBase, wantHd []string
	}{
		{"v1 to v2", &data.Comparison{Base: v1, Head: v2}, []string{keyV1}, []string{keyV2}},
		{"v2 to v1", &data.Comparison{Base: v2, Head: v1}, []string{keyV2}, []string{keyV1}},
		{"no comparison", nil, nil, nil},
	} {
		base, head := runtimeOptions(rts, c.cmp)
		if got := selected(base); !slices.Equal(got, c.wantBase) {
			t.Errorf("%s: base selects %v, want %v", c.name, got, c.wantBase)
		}
		if got := selected(head); !slices.Equal(got, c.wantHd) {
			t.Errorf("%s: head selects %v, want %v", c.name, got, c.wantHd)
		}
	}
}

// Two torch_tpu releases on tpu, as a scanner would record them, and
// the tests' now.
var (
	testTime     = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rtV1         = compat.Runtime{Python: "3.11.9", Torch: "2.15.0", TorchTPU: "0.1.0", Transformers: "5.23.0", Harness: "1", Device: "TPU v6e", DeviceCount: 1}
	rtV2         = compat.Runtime{Python: "3.11.9", Torch: "2.15.0", TorchTPU: "0.2.0", Transformers: "5.23.0", Harness: "1", Device: "TPU v6e", DeviceCount: 1}
	keyV1, keyV2 = rtV1.Ref("tpu").Key(), rtV2.Ref("tpu").Key()
)
