package web

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/internal/serving"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/api"
	"github.com/google-pytorch/torchtpu-scanner/web/badge"
)

// servingServer has org/llama (LlamaForCausalLM, 2 v6e chips at 8192
// tokens), org/bart (BartForConditionalGeneration, not in the registry) and
// org/plain (no architectures); the registry is stored when withRegistry.
func servingServer(t *testing.T, withRegistry bool) *testServer {
	t.Helper()
	ts := newTestServer(t, 0, 0, Config{})
	ctx := context.Background()
	ts.upsert(t, store.ModelUpsert{ID: "org/llama", Task: "text-generation", Downloads: 300, SHA: "a"},
		store.ModelUpsert{ID: "org/bart", Task: "summarization", Downloads: 200, SHA: "b"},
		store.ModelUpsert{ID: "org/plain", Task: "fill-mask", Downloads: 100, SHA: "c"})
	ctxTokens := int64(8192)
	for id, r := range map[string]readiness.Readiness{
		"org/llama": {Architectures: []string{"LlamaForCausalLM"}, MinDevices: map[string]int{"v5e": 3, "v6e": 2}, ContextTokens: &ctxTokens, Hints: []readiness.Hint{}},
		"org/bart":  {Architectures: []string{"BartForConditionalGeneration"}, Hints: []readiness.Hint{}},
		"org/plain": {Hints: []readiness.Hint{}},
	} {
		if err := ts.db.SetReadiness(ctx, store.ReadinessUpdate{ModelID: id, SHA: "x", Version: readiness.Version, Full: true, Readiness: r}); err != nil {
			t.Fatal(err)
		}
	}
	if withRegistry {
		if err := ts.db.PutServingRegistry(ctx, serving.Registry{Version: serving.Version, VLLMVersion: "0.29.0",
			Archs: map[string]compat.ServingKind{"LlamaForCausalLM": compat.ServingGeneration}}); err != nil {
			t.Fatal(err)
		}
	}
	return ts
}

func TestAPIServing(t *testing.T) {
	ts := servingServer(t, false)
	// before any scan read the registry: null everywhere, and pages kept so
	// far change once it is read (the data's version moves)
	before := decode[api.ModelDetail](t, ts.get(t, "/api/v1/models/org/llama"))
	if before.Serving != nil {
		t.Errorf("serving before the registry: %+v", before.Serving)
	}
	if err := ts.db.PutServingRegistry(context.Background(), serving.Registry{Version: serving.Version, VLLMVersion: "0.29.0",
		Archs: map[string]compat.ServingKind{"LlamaForCausalLM": compat.ServingGeneration}}); err != nil {
		t.Fatal(err)
	}
	d := decode[api.ModelDetail](t, ts.get(t, "/api/v1/models/org/llama"))
	c := d.Serving
	if c == nil || !c.Served || c.Kind == nil || *c.Kind != compat.ServingGeneration || c.Evidence != "declared" ||
		c.Version != serving.Version || c.Command == nil ||
		*c.Command != "vllm serve org/llama --tensor-parallel-size 2 --max-model-len 8192" || c.TensorParallelSize["v5e"] != 4 {
		t.Fatalf("llama serving %+v", c)
	}
	list := decode[api.ModelList](t, ts.get(t, "/api/v1/models"))
	got := map[string]string{}
	for _, m := range list.Models {
		switch {
		case m.Serving == nil:
			got[m.ID] = "null"
		case m.Serving.Served:
			got[m.ID] = string(*m.Serving.Kind)
		default:
			got[m.ID] = "no"
		}
	}
	if got["org/llama"] != "generation" || got["org/bart"] != "no" || got["org/plain"] != "null" {
		t.Errorf("list cells %v", got)
	}
	for q, want := range map[string]string{"generation": "org/llama", "none": "org/bart", "pooling": ""} {
		l := decode[api.ModelList](t, ts.get(t, "/api/v1/models?serve="+q))
		var ids []string
		for _, m := range l.Models {
			ids = append(ids, m.ID)
		}
		if strings.Join(ids, ",") != want {
			t.Errorf("?serve=%s: %v, want %q", q, ids, want)
		}
	}
	if r := ts.get(t, "/api/v1/models?serve=chat"); r.status != 400 || !strings.Contains(r.body, "generation, multimodal, pooling, none") {
		t.Errorf("?serve=chat: %d %s", r.status, r.body)
	}
}

func TestServingPages(t *testing.T) {
	ts := servingServer(t, true)
	page := ts.get(t, "/models/org/llama").body
	for _, want := range []string{"Serving with vLLM-TorchTPU", "served</span> as <strong>generation</strong>",
		"vllm serve org/llama --tensor-parallel-size 2 --max-model-len 8192", "v5e 4 · v6e 2", ">declared<"} {
		if !strings.Contains(page, want) {
			t.Errorf("llama's page lacks %q", want)
		}
	}
	bart := ts.get(t, "/models/org/bart").body
	if !strings.Contains(bart, "not served") || !strings.Contains(bart, "<code>BartForConditionalGeneration</code>") || strings.Contains(bart, "vllm serve") {
		t.Errorf("bart's page: not served, its architecture, no command")
	}
	if plain := ts.get(t, "/models/org/plain").body; !strings.Contains(plain, "names no architecture") {
		t.Errorf("plain's page does not say why serving is unknown")
	}
	table := ts.get(t, "/?serve=none").body
	if !strings.Contains(table, `<option value="none" selected>`) || !strings.Contains(table, "org/bart") || strings.Contains(table, "org/llama") {
		t.Errorf("table ?serve=none: selected filter, bart alone")
	}
	all := ts.get(t, "/").body
	if !strings.Contains(all, `<td data-label="vLLM"><span class="status st-pass" title="vllm-torchtpu `+serving.Version+`, declared">generation</span>`) {
		t.Errorf("table lacks llama's vLLM cell")
	}
}

func TestServeBadge(t *testing.T) {
	ts := servingServer(t, true)
	for id, want := range map[string]string{"org/llama": "generation · declared", "org/bart": "not served · declared",
		"org/plain": "unknown", "org/nope": "unknown"} {
		b := decode[badge.Endpoint](t, ts.get(t, "/badge/"+id+".json?mode=serve"))
		if b.Message != want || b.Label != "vLLM-TorchTPU" {
			t.Errorf("%s: %q %q, want %q", id, b.Label, b.Message, want)
		}
	}
	// the serve badge is not the status badge, and is cached apart from it
	plain := decode[badge.Endpoint](t, ts.get(t, "/badge/org/llama.json"))
	if plain.Message == "generation · declared" {
		t.Errorf("the status badge drew the serving cell")
	}
	if b := decode[badge.Endpoint](t, ts.get(t, "/badge/org/llama.json?mode=serve&label="+url.QueryEscape("vLLM"))); b.Label != "vLLM" {
		t.Errorf("label %q", b.Label)
	}
	if svg := ts.get(t, "/badge/org/llama.svg?mode=serve").body; !strings.Contains(svg, "generation · declared") ||
		!strings.Contains(svg, "declared by the model registry of vllm-torchtpu "+serving.Version+"&#39;s vLLM; nothing was run") {
		t.Errorf("svg: %s", svg)
	}
}

// A measured serving verdict (a scan's serving probe) shows on the model
// page, in the API's serving field and on the ?mode=serve badge, labelled
// measured and outranking the declared cell: a pass, then a failure to load.
func TestMeasuredServing(t *testing.T) {
	ts := servingServer(t, true)
	ctx := context.Background()
	v := func(s string) *string { return &s }
	agreed, load, ttft, tps := 16, 12.5, 0.25, 41.0
	rt := compat.ServingRuntime{VLLMTorchTPU: v("0.29.0"), Torch: v("2.13.0"), TorchTPU: v("0.2.0"), Libtpu: v("0.0.50")}
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	pass := compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: "pass", Stage: v("generate"), Runtime: rt, Device: v("TPU v6e"),
		TensorParallelSize: 2, MaxModelLen: 256, Metrics: compat.ServingMetrics{LoadS: &load, TTFTS: &ttft, TokensPerS: &tps, AgreedTokens: &agreed},
		ReferenceTokens: make([]int, 16), MeasuredAt: at}
	if err := ts.db.PutServingResult(ctx, "org/llama", pass); err != nil {
		t.Fatal(err)
	}
	c := decode[api.ModelDetail](t, ts.get(t, "/api/v1/models/org/llama")).Serving
	if c == nil || c.Evidence != "declared" || c.Measured == nil || c.Measured.Evidence != "measured" || c.Measured.Status != "pass" ||
		c.Measured.Metrics.AgreedTokens == nil || *c.Measured.Metrics.AgreedTokens != 16 || c.Measured.Runtime.Key() != "0.29.0~2.13.0~0.2.0~0.0.50" ||
		!c.Measured.MeasuredAt.Equal(at) {
		t.Fatalf("llama serving %+v", c)
	}
	if c := decode[api.ModelDetail](t, ts.get(t, "/api/v1/models/org/bart")).Serving; c == nil || c.Measured != nil {
		t.Errorf("bart (never measured): %+v", c)
	}
	page := ts.get(t, "/models/org/llama").body
	for _, want := range []string{`<span class="status st-pass">pass</span> · <span class="evidence-tier"`, ">measured</span> on 2026-12-06",
		"<code>0.29.0~2.13.0~0.2.0~0.0.50</code>", "16 of 16", "load 12.50 s · first token 0.25 s · 41.0 tokens/s", "TPU v6e"} {
		if !strings.Contains(page, want) {
			t.Errorf("llama's page lacks %q", want)
		}
	}
	if b := decode[badge.Endpoint](t, ts.get(t, "/badge/org/llama.json?mode=serve")); b.Message != "generation · measured" {
		t.Errorf("badge after a measured pass: %q", b.Message)
	}
	for _, m := range decode[api.ModelList](t, ts.get(t, "/api/v1/models")).Models {
		if got := m.Serving != nil && m.Serving.Measured != nil; got != (m.ID == "org/llama") {
			t.Errorf("list: %s measured %v", m.ID, got)
		}
	}
	if table := ts.get(t, "/").body; !strings.Contains(table, `<td data-label="vLLM"><span class="status st-pass" title="measured 2026-12-06, runtime 0.29.0~2.13.0~0.2.0~0.0.50">pass · measured</span>`) {
		t.Errorf("table lacks llama's measured vLLM cell")
	}
	serveList(t, ts, map[string]string{"pass": "org/llama", "fail": "", "declared": "", "generation": "org/llama", "none": "org/bart"})

	fail := compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: "fail", Stage: v("load"), FailureClass: v("load_error"),
		Signature: v("load_error:checkpoint"), Message: v("Cannot load <the> checkpoint"), Runtime: rt, TensorParallelSize: 2, MaxModelLen: 256,
		MeasuredAt: at.Add(time.Hour)}
	if err := ts.db.PutServingResult(ctx, "org/llama", fail); err != nil {
		t.Fatal(err)
	}
	if c := decode[api.ModelDetail](t, ts.get(t, "/api/v1/models/org/llama")).Serving; c == nil || c.Measured == nil || c.Measured.Status != "fail" || !c.Served {
		t.Fatalf("llama serving after a failed load %+v (the declared cell stays served)", c)
	}
	page = ts.get(t, "/models/org/llama").body
	for _, want := range []string{`<span class="status st-fail">fail</span>`, "<code>load_error:checkpoint</code>: Cannot load &lt;the&gt; checkpoint",
		"load — · first token — · — tokens/s"} {
		if !strings.Contains(page, want) {
			t.Errorf("llama's page lacks %q", want)
		}
	}
	if b := decode[badge.Endpoint](t, ts.get(t, "/badge/org/llama.json?mode=serve")); b.Message != "fail · measured" {
		t.Errorf("badge after a measured failure: %q", b.Message)
	}
	serveList(t, ts, map[string]string{"pass": "", "fail": "org/llama", "declared": "", "generation": "org/llama"})

	// a later probe that judged nothing (no CPU reference) leaves the judged
	// failure standing on the badge, in the API, the table, the CSV and ?serve=;
	// the page says what became of the later probe, and why
	noRef := compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: "skipped", Reason: v(compat.ServingReasonNoReference),
		Message: v("the transformers CPU reference gave no <greedy> tokens"), Runtime: rt, MeasuredAt: at.Add(2 * time.Hour)}
	if err := ts.db.PutServingResult(ctx, "org/llama", noRef); err != nil {
		t.Fatal(err)
	}
	if b := decode[badge.Endpoint](t, ts.get(t, "/badge/org/llama.json?mode=serve")); b.Message != "fail · measured" {
		t.Errorf("badge after a probe not judged: %q, want the judged failure's", b.Message)
	}
	if c := decode[api.ModelDetail](t, ts.get(t, "/api/v1/models/org/llama")).Serving; c == nil || c.Measured == nil || c.Measured.Status != "fail" ||
		!c.Measured.MeasuredAt.Equal(at.Add(time.Hour)) || c.Measured.LatestAttempt == nil || c.Measured.LatestAttempt.Status != "skipped" ||
		!c.Measured.LatestAttempt.MeasuredAt.Equal(at.Add(2*time.Hour)) {
		t.Errorf("API after a probe not judged: %+v, want the failure with the later probe as its latest_attempt", c)
	}
	page = ts.get(t, "/models/org/llama").body
	for _, want := range []string{`<span class="status st-fail">fail</span>`, `id="serve-latest"`, "on 2026-12-06 (runtime",
		`<span class="status st-neutral">not judged: no CPU reference</span>: the transformers CPU reference gave no &lt;greedy&gt; tokens`} {
		if !strings.Contains(page, want) {
			t.Errorf("llama's page after a probe not judged lacks %q", want)
		}
	}
	if table := ts.get(t, "/").body; !strings.Contains(table, `fail · measured</span>`) {
		t.Errorf("table after a probe not judged: llama's judged failure is gone")
	}
	serveList(t, ts, map[string]string{"pass": "", "fail": "org/llama", "declared": "", "none": "org/bart"})

	// never judged (no CPU reference): the declared verdict stands on the
	// badge, in the table and in ?serve=; the page says why nothing was judged
	ts = servingServer(t, true)
	if err := ts.db.PutServingResult(ctx, "org/llama", noRef); err != nil {
		t.Fatal(err)
	}
	if b := decode[badge.Endpoint](t, ts.get(t, "/badge/org/llama.json?mode=serve")); b.Message != "generation · declared" {
		t.Errorf("badge after a probe not judged: %q", b.Message)
	}
	if page := ts.get(t, "/models/org/llama").body; !strings.Contains(page, `<span class="status st-neutral">not judged: no CPU reference</span>`) ||
		strings.Contains(page, `id="serve-latest"`) {
		t.Errorf("llama's page does not say the probe was not judged (once)")
	}
	if table := ts.get(t, "/?serve=declared").body; !strings.Contains(table, `<option value="declared" selected>`) ||
		!strings.Contains(table, `<td data-label="vLLM"><span class="status st-pass" title="vllm-torchtpu `+serving.Version+`, declared">generation</span>`) {
		t.Errorf("table ?serve=declared: llama's declared cell")
	}
	serveList(t, ts, map[string]string{"pass": "", "fail": "", "declared": "org/llama", "none": "org/bart"})
}

// serveList checks /api/v1/models?serve= for each value: the ids listed.
func serveList(t *testing.T, ts *testServer, want map[string]string) {
	t.Helper()
	for q, w := range want {
		var ids []string
		for _, m := range decode[api.ModelList](t, ts.get(t, "/api/v1/models?serve="+q)).Models {
			ids = append(ids, m.ID)
		}
		if strings.Join(ids, ",") != w {
			t.Errorf("?serve=%s: %v, want %q", q, ids, w)
		}
	}
}

// TestServeFilterValues: the table's vLLM filter, the API's ?serve= and
// the OpenAPI document list the same values (store.ServeValues).
func TestServeFilterValues(t *testing.T) {
	enum := documentedEnum(t, "/api/v1/models", "serve")
	want := store.ServeValues()
	if !slices.Equal(enum, want) || !slices.Contains(want, "pass") || !slices.Contains(want, "declared") {
		t.Errorf("openapi.json's serve enum %v; want the store's %v (with pass and declared)", enum, want)
	}
	ts := servingServer(t, true)
	table := ts.get(t, "/").body
	for _, v := range want {
		if !strings.Contains(table, `<option value="`+v+`">`+v+`</option>`) {
			t.Errorf("the table's vLLM filter lacks %q", v)
		}
		if r := ts.get(t, "/api/v1/models?serve="+v); r.status != 200 {
			t.Errorf("?serve=%s: %d", v, r.status)
		}
	}
}

// TestServingCSV: /export.csv ends with the serving columns (after every
// earlier group, none of which moves): the cell's verdict, what is
// declared and the newest measured probe; empty where unknown.
func TestServingCSV(t *testing.T) {
	ts := servingServer(t, true)
	v := func(s string) *string { return &s }
	agreed, load, ttft, tps := 16, 12.5, 0.25, 41.0
	m := compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: "pass", Stage: v("generate"),
		Runtime:    compat.ServingRuntime{VLLMTorchTPU: v("0.29.0"), Torch: v("2.13.0"), TorchTPU: v("0.2.0"), Libtpu: v("0.0.50")},
		Metrics:    compat.ServingMetrics{LoadS: &load, TTFTS: &ttft, TokensPerS: &tps, AgreedTokens: &agreed},
		MeasuredAt: time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)}
	if err := ts.db.PutServingResult(context.Background(), "org/llama", m); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(ts.get(t, "/export.csv").body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := rows[0]
	at := slices.Index(head, "evidence_from")
	if at < 0 || len(head) != at+1+15+len(api.TrainEvidenceCSVColumns) ||
		!slices.Equal(head[at+1+15:], api.TrainEvidenceCSVColumns) || !slices.Equal(head[at+1:at+1+15], []string{"serving_evidence", "serving_served", "serving_kind", "serving_version",
		"serving_command", "serving_status", "serving_reason", "serving_signature", "serving_vllm_torchtpu", "serving_runtime",
		"serving_tokens_per_s", "serving_ttft_s", "serving_load_s", "serving_agreed_tokens", "serving_measured_at"}) {
		t.Fatalf("the serving columns do not follow evidence_from, followed by the train evidence's only: %v", head)
	}
	if !slices.Equal(head[:len(api.CSVColumns)], api.CSVColumns) || head[0] != "id" || head[6] != "status" {
		t.Fatalf("an earlier column moved: %v", head)
	}
	got := map[string]string{}
	for _, row := range rows[1:] {
		got[row[0]] = strings.Join(row[at+1:at+1+15], "|")
	}
	want := map[string]string{
		"org/llama": "measured|true|generation|" + serving.Version + "|vllm serve org/llama --tensor-parallel-size 2 --max-model-len 8192|pass||" +
			"|0.29.0|0.29.0~2.13.0~0.2.0~0.0.50|41|0.25|12.5|16|2026-12-06T03:00:00Z",
		"org/bart":  "declared|false||" + serving.Version + "|||||||||||",
		"org/plain": "||||||||||||||",
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s's serving columns:\n got %s\nwant %s", id, got[id], w)
		}
	}
	// a later probe that judged nothing leaves the judged verdict's columns as they were
	noRef := compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: "skipped", Reason: v(compat.ServingReasonNoReference),
		Runtime: m.Runtime, TensorParallelSize: 1, MeasuredAt: m.MeasuredAt.Add(time.Hour)}
	if err := ts.db.PutServingResult(context.Background(), "org/llama", noRef); err != nil {
		t.Fatal(err)
	}
	rows, err = csv.NewReader(strings.NewReader(ts.get(t, "/export.csv").body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows[1:] {
		if row[0] == "org/llama" && strings.Join(row[at+1:at+1+15], "|") != want["org/llama"] {
			t.Errorf("llama's serving columns after a probe not judged:\n got %s\nwant %s", strings.Join(row[at+1:at+1+15], "|"), want["org/llama"])
		}
	}
}

// TestOpenAPIEventKinds: every enum of change kinds in openapi.json (the
// feeds' ?kind=, Event.kind, the webhooks' payload) lists every kind the
// store writes (compat.EventKinds), the serving ones included.
func TestOpenAPIEventKinds(t *testing.T) {
	var doc any
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		t.Fatal(err)
	}
	found := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if enum, ok := v["enum"].([]any); ok && slices.Contains(enum, any("regression")) && slices.Contains(enum, any("flaky")) {
				found++
				for _, k := range compat.EventKinds {
					if !slices.Contains(enum, any(string(k))) {
						t.Errorf("an enum of change kinds lacks %q: %v", k, enum)
					}
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	if found < 4 {
		t.Errorf("%d enums of change kinds found, want the feeds' two, Event's and the webhook payload's", found)
	}
}

// TestServingFeed: a measured serving change is a feed item of its own
// kind (serving_new, serving_regression, serving_fix) in the JSON Feed and
// Atom, filtered by ?kind= like the others, with the serving runtime and
// the probe's evidence; the model's API lists it with its changes.
func TestServingFeed(t *testing.T) {
	ts := servingServer(t, true)
	ctx := context.Background()
	v := func(s string) *string { return &s }
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	for i, st := range []string{"pass", "fail", "pass"} {
		m := compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: st, MeasuredAt: at.Add(time.Duration(i) * time.Hour),
			Runtime: compat.ServingRuntime{VLLMTorchTPU: v("0.29.0"), Torch: v("2.13.0"), TorchTPU: v("0.2.0"), Libtpu: v("0.0.50")},
			Device:  v("TPU v6e"), TensorParallelSize: 2, Revision: "abc123"}
		if st == "fail" {
			m.Signature, m.Message, m.Stage = v("numerics_mismatch:serve_greedy_tokens"), v("<other> tokens"), v("generate")
		}
		if err := ts.db.PutServingResult(ctx, "org/llama", m); err != nil {
			t.Fatal(err)
		}
	}
	_, items := feedItemsOf(t, ts.get(t, "/feed.json").body)
	var titles []string
	for _, it := range items {
		titles = append(titles, it["title"].(string))
	}
	want := []string{"Serving fixed: org/llama serves with vLLM-TorchTPU 0.29.0 on tpu (was fail)",
		"Serving regression: org/llama stops serving with vLLM-TorchTPU 0.29.0 on tpu: fails (generate, numerics_mismatch serve_greedy_tokens)",
		"Serving measured: org/llama serves with vLLM-TorchTPU 0.29.0 on tpu"}
	if !slices.Equal(titles, want) {
		t.Fatalf("feed titles\n got %q\nwant %q", titles, want)
	}
	reg := items[1]
	if tags := fmt.Sprint(reg["tags"]); tags != "[serving_regression tpu fail]" {
		t.Errorf("tags %s", tags)
	}
	if ev, _ := reg["_evidence"].(map[string]any); ev["kind"] != "measured" || ev["runtime"] != "0.29.0~2.13.0~0.2.0~0.0.50" || ev["device"] != "TPU v6e" {
		t.Errorf("evidence %v", ev)
	}
	if html, _ := reg["content_html"].(string); !strings.Contains(html, "&lt;other&gt; tokens") || !strings.Contains(html, "vllm-torchtpu 0.29.0 · torch 2.13.0") ||
		!strings.Contains(html, "<p>Revision abc123 · ") {
		t.Errorf("content_html %s", html)
	}
	_, only := feedItemsOf(t, ts.get(t, "/feed.json?kind=serving_regression").body)
	if len(only) != 1 || only[0]["title"] != want[1] {
		t.Errorf("?kind=serving_regression: %v", only)
	}
	if _, none := feedItemsOf(t, ts.get(t, "/feed.json?kind=regression").body); len(none) != 0 {
		t.Errorf("?kind=regression lists serving changes: %v", none)
	}
	if atom := ts.get(t, "/feed.atom?kind=serving_fix&kind=serving_new").body; !strings.Contains(atom, "Serving fixed: org/llama") ||
		!strings.Contains(atom, "Serving measured: org/llama") || strings.Contains(atom, "Serving regression") {
		t.Errorf("atom ?kind=serving_fix&kind=serving_new: %s", atom)
	}
	d := decode[api.ModelDetail](t, ts.get(t, "/api/v1/models/org/llama"))
	if len(d.Events) != 3 || d.Events[0].Kind != compat.EventServingFix || d.Events[0].Runtime.VLLMTorchTPU != "0.29.0" ||
		d.Events[0].Revision != "abc123" || d.Events[1].Stage == nil || *d.Events[1].Stage != compat.StageGenerate {
		t.Errorf("the model's API events %+v", d.Events)
	}
}

// The serving block's and the vLLM column's status chips use classes the
// stylesheet colours (statusCSS's .st-*), not bare words it has no rule
// for: every class of every status chip on the pages, served and not,
// measured pass, failure and not judged, has a rule in the served style.css.
func TestServingChipClassesAreStyled(t *testing.T) {
	ts := servingServer(t, true)
	ctx := context.Background()
	cssURL, err := ts.pages.AssetURL("style.css")
	if err != nil {
		t.Fatal(err)
	}
	css := ts.get(t, cssURL).body
	chip := regexp.MustCompile(`class="status ([^"]*)"`)
	check := func(what, body string) {
		t.Helper()
		found := chip.FindAllStringSubmatch(body, -1)
		if len(found) == 0 {
			t.Fatalf("%s: no status chip", what)
		}
		for _, f := range found {
			for _, class := range strings.Fields(f[1]) {
				if !strings.Contains(css, "."+class+" {") {
					t.Errorf("%s: chip class %q has no rule in style.css", what, class)
				}
			}
		}
	}
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	for i, m := range []compat.ServingMeasured{
		{Status: "pass"}, {Status: "fail"}, {Status: "oom"},
		{Status: "skipped", Reason: compat.Ptr(compat.ServingReasonNoReference)}, {Status: "error"},
	} {
		m.Evidence, m.TensorParallelSize, m.MeasuredAt = compat.ServingEvidenceMeasured, 1, at.Add(time.Duration(i)*time.Hour)
		if err := ts.db.PutServingResult(ctx, "org/llama", m); err != nil {
			t.Fatal(err)
		}
		check("llama's page after "+m.Status, section(ts.get(t, "/models/org/llama").body, `<section class="serving"`))
		check("the table after "+m.Status, ts.get(t, "/").body)
	}
	check("bart's page (not served)", section(ts.get(t, "/models/org/bart").body, `<section class="serving"`))
}

// section is body from the first start to the </section> after it.
func section(body, start string) string {
	i := strings.Index(body, start)
	if i < 0 {
		return ""
	}
	body = body[i:]
	if j := strings.Index(body, "</section>"); j >= 0 {
		return body[:j]
	}
	return body
}
