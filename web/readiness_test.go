package web

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// readinessServer has three models: org/moe (a Mixtral-like readiness,
// passing on TPU v6e with MFU/MBU), org/custom (remote code, from the
// listing's summary: no device count; a hostile model_type in its hint) and
// org/plain (no readiness yet).
func readinessServer(t *testing.T) *testServer {
	t.Helper()
	ts := newTestServer(t, 0, 0, Config{})
	ctx := context.Background()
	if err := ts.db.UpsertModels(ctx, []store.ModelUpsert{
		{ID: "org/moe", Task: "text-generation", Downloads: 300, SHA: "a"},
		{ID: "org/custom", Task: "text-generation", Downloads: 200, SHA: "b"},
		{ID: "org/plain", Task: "fill-mask", Downloads: 100, SHA: "c"},
	}); err != nil {
		t.Fatal(err)
	}
	moe := readiness.Compute(readiness.Input{Config: map[string]any{
		"architectures": []any{"MixtralForCausalLM"}, "model_type": "mixtral", "hidden_size": 4096.0,
		"intermediate_size": 14336.0, "max_position_embeddings": 32768.0, "num_attention_heads": 32.0,
		"num_experts_per_tok": 2.0, "num_hidden_layers": 32.0, "num_key_value_heads": 8.0, "num_local_experts": 8.0,
		"vocab_size": 32000.0}})
	custom := readiness.Compute(readiness.Input{Summary: true, Safetensors: map[string]int64{"BF16": 7000000000},
		Config: map[string]any{"model_type": "<script>x</script>", "auto_map": map[string]any{"AutoModel": "m.X"}}})
	for id, r := range map[string]readiness.Readiness{"org/moe": moe, "org/custom": custom} {
		if err := ts.db.SetReadiness(ctx, store.ReadinessUpdate{ModelID: id, SHA: "x", Version: readiness.Version, Readiness: r}); err != nil {
			t.Fatal(err)
		}
	}
	flops, bw, mfu, mbu := 918e12, 1638e9, 0.4213, 0.55
	res := compat.Result{Target: compat.TargetTPU, Status: compat.StatusPass, Stage: compat.Ptr(compat.StageGenerate),
		Revision: "a", TestedAt: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC), Mode: compat.Ptr(compat.ModeFull),
		Runtime: compat.Runtime{Torch: "2.15.0", Device: "TPU v6e", DeviceCount: 1},
		Metrics: compat.Metrics{MFU: &mfu, MBU: &mbu, Efficiency: &compat.Efficiency{Device: "tpu-v6e", PeakBF16FLOPS: &flops,
			PeakHBMBytesPerS: &bw, Model: "full"}}}
	if _, err := ts.db.RecordResult(ctx, "org/moe", res); err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestAPIReadiness(t *testing.T) {
	ts := readinessServer(t)
	list := decode[struct {
		Models []map[string]any `json:"models"`
	}](t, ts.get(t, "/api/v1/models"))
	byID := map[string]map[string]any{}
	for _, m := range list.Models {
		if _, ok := m["readiness"]; !ok {
			t.Fatalf("%v has no readiness key", m["id"])
		}
		byID[m["id"].(string)] = m
	}
	moe := byID["org/moe"]["readiness"].(map[string]any)
	if got := slices.Sorted(maps.Keys(moe)); !slices.Equal(got, []string{"architectures", "context_tokens", "hints", "kv_bytes_context", "kv_bytes_per_token",
		"min_devices", "params", "params_source", "weights_bytes_bf16"}) {
		t.Errorf("readiness keys %v", got)
	}
	// Mixtral-8x7B: 46,702,792,704 parameters, 4 v6e devices (internal/readiness's tests derive both).
	if moe["params"] != 46702792704.0 || moe["min_devices"].(map[string]any)["v6e"] != 4.0 {
		t.Errorf("moe readiness %v", moe)
	}
	if byID["org/plain"]["readiness"] != nil {
		t.Errorf("plain: %v, want null", byID["org/plain"]["readiness"])
	}
	metrics := byID["org/moe"]["result"].(map[string]any)["metrics"].(map[string]any)
	if metrics["mfu"] != 0.4213 || metrics["mbu"] != 0.55 {
		t.Errorf("metrics %v", metrics)
	}

	filtered := decode[struct {
		Models []map[string]any `json:"models"`
	}](t, ts.get(t, "/api/v1/models?hint=moe_dynamic_routing"))
	if len(filtered.Models) != 1 || filtered.Models[0]["id"] != "org/moe" {
		t.Errorf("?hint=moe_dynamic_routing: %v", filtered.Models)
	}
	if r := ts.get(t, "/api/v1/models?hint=bogus"); r.status != 400 || !strings.Contains(r.body, "moe_dynamic_routing") {
		t.Errorf("bad hint: %d %s", r.status, r.body)
	}

	sum := decode[map[string]any](t, ts.get(t, "/api/v1/summary"))
	fit := sum["readiness"].(map[string]any)
	one := fit["one_device"].([]any)
	// only org/moe has a device count: 7 v5e, 2 v5p, 4 v6e, 2 v7x → no generation holds it on one device
	if fit["known"] != 1.0 || len(one) != 4 || one[2].(map[string]any)["generation"] != "v6e" || one[2].(map[string]any)["share"] != 0.0 {
		t.Errorf("summary readiness %v", fit)
	}
}

func TestPagesShowReadiness(t *testing.T) {
	ts := readinessServer(t)
	table := ts.get(t, "/")
	for _, want := range []string{"Chips (v6e)", `name="hint"`, `<option value="moe_dynamic_routing">moe dynamic routing</option>`,
		`data-label="Chips (v6e)" class="num">4</td>`, `class="ready status st-warn" title="needs sharding, moe dynamic routing">needs work<`,
		`class="ready status st-fail" title="remote code, config incomplete">blocked<`,
		`class="ready status st-neutral" title="readiness not computed yet">unknown<`, "Fit one TPU device", "(of 1 sized models)"} {
		if !strings.Contains(table.body, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	if r := ts.get(t, "/?hint=remote_code"); !strings.Contains(r.body, "org/custom") || strings.Contains(r.body, "org/moe\"") ||
		!strings.Contains(r.body, `<option value="remote_code" selected>`) {
		t.Errorf("?hint=remote_code table: %d", r.status)
	}

	page := ts.get(t, "/models/org/moe")
	for _, want := range []string{"TPU readiness", "46,702,792,704", "(from config)", "needs_sharding", "moe_dynamic_routing",
		"MFU", "42.1 % of 918 TFLOP/s (tpu-v6e)", "MBU", "55.0 % of 1638 GB/s (tpu-v6e)",
		`<span class="status st-warn">warn</span> <code>needs_sharding</code>`,
		fmt.Sprintf("one sequence's KV cache, with %d%% headroom</caption>", readiness.ServingHeadroomPct)} {
		if !strings.Contains(page.body, want) {
			t.Errorf("model page lacks %q", want)
		}
	}
	custom := ts.get(t, "/models/org/custom")
	if strings.Contains(custom.body, "<script>x</script>") || !strings.Contains(custom.body, "&lt;script&gt;") {
		t.Error("a model_type from the Hub is not escaped in the readiness block")
	}
	if plain := ts.get(t, "/models/org/plain"); strings.Contains(plain.body, "TPU readiness") {
		t.Error("a model without readiness shows a readiness block")
	}

	meth := ts.get(t, "/methodology")
	for _, want := range append(slices.Clone(readiness.Codes), "TPU v6e (Trillium)", "918.0 TFLOP/s", "1638 GB/s",
		"NVIDIA H200 SXM 141GB", "cloud.google.com/tpu/docs/v6e", `id="readiness"`, `id="efficiency"`, "32768", "96.0 GiB") {
		if !strings.Contains(meth.body, want) {
			t.Errorf("methodology lacks %q", want)
		}
	}
}

func TestExportReadinessColumns(t *testing.T) {
	ts := readinessServer(t)
	rows, err := csv.NewReader(strings.NewReader(ts.get(t, "/export.csv").body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	byID := map[string][]string{}
	for _, r := range rows[1:] {
		byID[r[0]] = r
	}
	moe := byID["org/moe"]
	if moe[col["params"]] != "46702792704" || moe[col["min_devices_v6e"]] != "4" || moe[col["mfu"]] != "0.4213" ||
		moe[col["hints"]] != "needs_sharding moe_dynamic_routing" || moe[col["params_source"]] != "config" {
		t.Errorf("moe row %v", moe)
	}
	if c := byID["org/custom"]; c[col["params"]] != "7000000000" || c[col["min_devices_v6e"]] != "" ||
		c[col["hints"]] != "remote_code config_incomplete" {
		t.Errorf("custom row %v", c)
	}
	if p := byID["org/plain"]; p[col["params"]] != "" || p[col["hints"]] != "" {
		t.Errorf("plain row %v", p)
	}
}

// openapi.json documents ?hint= with readiness's codes and the readiness
// object with the keys the API writes.
func TestOpenAPIReadiness(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		t.Fatal(err)
	}
	at := func(v any, path ...string) any {
		for _, k := range path {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		return v
	}
	for _, path := range []string{"/api/v1/models", "/export.csv"} {
		found := false
		params, _ := at(doc, "paths", path, "get", "parameters").([]any)
		for _, p := range params {
			if at(p, "name") != "hint" {
				continue
			}
			found = true
			var enum []string
			for _, e := range at(p, "schema", "enum").([]any) {
				enum = append(enum, e.(string))
			}
			want := readiness.Codes
			if path == "/export.csv" { // the table's filter form sends it empty for any
				want = append(slices.Clone(want), "")
			}
			if !slices.Equal(enum, want) {
				t.Errorf("%s ?hint= enum %v, want %v", path, enum, want)
			}
		}
		if !found {
			t.Errorf("%s: no hint parameter", path)
		}
	}
	n, ctx := int64(1), int64(2)
	full, err := json.Marshal(readiness.Readiness{Params: &n, ContextTokens: &ctx, KVBytesContext: &ctx, Architectures: []string{"A"}})
	if err != nil {
		t.Fatal(err)
	}
	var written map[string]any
	_ = json.Unmarshal(full, &written)
	documented := slices.Sorted(maps.Keys(at(doc, "components", "schemas", "Readiness", "properties").(map[string]any)))
	if got := slices.Sorted(maps.Keys(written)); !slices.Equal(got, documented) {
		t.Errorf("readiness keys %v, documented %v", got, documented)
	}
	for _, k := range []string{"mfu", "mbu", "efficiency"} {
		if at(doc, "components", "schemas", "Metrics", "properties", k) == nil {
			t.Errorf("Metrics lacks %s", k)
		}
	}
}
