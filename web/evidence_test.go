package web

import (
	"encoding/csv"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// TestNewHeadline: TorchTPU's figures come from TPU runs only; without a
// TPU verdict the headline says so in words, and the CPU reference's
// figures stand under their own name.
func TestNewHeadline(t *testing.T) {
	sum := func(models, pass, fail, skipped int) store.Summary {
		s := store.Summary{Models: models, Tested: pass + fail, Counts: map[compat.Status]int{
			compat.StatusPass: pass, compat.StatusFail: fail, compat.StatusSkipped: skipped,
			compat.StatusUntested: models - pass - fail - skipped}}
		if pass+fail > 0 {
			r := float64(pass) / float64(pass+fail)
			s.PassRate = &r
		}
		return s
	}
	t.Run("cpu only", func(t *testing.T) {
		h := newHeadline(map[compat.Target]store.Summary{compat.TargetTPU: sum(10, 0, 0, 0), compat.TargetCPU: sum(10, 3, 1, 0),
			compat.TargetCUDA: sum(10, 0, 0, 0)}, store.Predicted{})
		if h.TPU != nil || h.NoTPU != "No TPU results on this instance yet" || h.Sentence() != "No TPU results on this instance yet." {
			t.Errorf("tpu: %+v %q", h.TPU, h.NoTPU)
		}
		if len(h.Others) != 1 || h.Others[0].Target != compat.TargetCPU || h.Others[0].Name != "CPU reference, measured on CPU (not TorchTPU)" ||
			h.Others[0].Tested != 4 || h.Others[0].Passed != 3 || *h.Others[0].PassRate != 0.75 || h.Others[0].Evidence != compat.EvidenceMeasured {
			t.Errorf("others: %+v", h.Others)
		}
		if h.Predicted != nil {
			t.Errorf("predicted figures from nothing: %+v", h.Predicted)
		}
	})
	t.Run("tpu skips only", func(t *testing.T) {
		h := newHeadline(map[compat.Target]store.Summary{compat.TargetTPU: sum(10, 0, 0, 2), compat.TargetCPU: sum(10, 1, 0, 0)}, store.Predicted{})
		if h.TPU != nil || h.NoTPU != "No TPU verdicts on this instance yet: 2 results on TPU, none a verdict (skipped or the scanner's own errors)" {
			t.Errorf("tpu: %+v %q", h.TPU, h.NoTPU)
		}
	})
	t.Run("predicted", func(t *testing.T) {
		// 4 models predicted, 3 with every inference op: predicted figures
		// under their own name, for tpu, and still no TPU figures.
		h := newHeadline(map[compat.Target]store.Summary{compat.TargetTPU: sum(10, 0, 0, 0), compat.TargetCPU: sum(10, 3, 1, 0)},
			store.Predicted{Table: "torch_tpu 0.2.0 / torch 2.15.0", Models: 4, Covered: 3, Downloads: 100, CoveredDownloads: 40})
		p := h.Predicted
		if h.TPU != nil || p == nil || p.Evidence != compat.EvidencePredicted || p.Target != compat.TargetTPU ||
			p.Name != "TorchTPU, predicted from the TorchTPU kernel table of torch_tpu 0.2.0 / torch 2.15.0 (no TPU ran them)" ||
			p.Tested != 4 || p.Passed != 3 || p.Models != 10 || *p.PassRate != 0.75 || *p.WeightedPassRate != 0.4 {
			t.Errorf("predicted: %+v", p)
		}
	})
	t.Run("tpu and cpu", func(t *testing.T) {
		h := newHeadline(map[compat.Target]store.Summary{compat.TargetTPU: sum(10, 1, 1, 1), compat.TargetCPU: sum(10, 5, 0, 0),
			compat.TargetCUDA: sum(10, 0, 2, 0)}, store.Predicted{})
		if h.TPU == nil || h.TPU.Tested != 2 || h.TPU.Passed != 1 || h.TPU.Results != 3 || h.TPU.Models != 10 || h.NoTPU != "" ||
			h.Sentence() != "TorchTPU, measured on TPU: 1 of 2 tested models pass (50.0 %)." {
			t.Errorf("tpu: %+v %q", h.TPU, h.Sentence())
		}
		if len(h.Others) != 2 || h.Others[0].Target != compat.TargetCPU || h.Others[1].Target != compat.TargetCUDA {
			t.Errorf("others: %+v", h.Others)
		}
	})
}

// cpuOnly is a server whose every result is a CPU run: most hosts, which
// have no TPU.
func cpuOnly(t *testing.T) *testServer {
	ts := newTestServer(t, 0, 0, Config{})
	ts.upsert(t, store.ModelUpsert{ID: "org/a-model", Downloads: 10}, store.ModelUpsert{ID: "org/b-model", Downloads: 5},
		store.ModelUpsert{ID: "org/untested"})
	cpuPass := passOn(compat.TargetCPU, testTime, 7)
	cpuPass.Runtime = compat.Runtime{Torch: "2.15.0", Transformers: "5.23.0", Harness: "1", Device: "cpu", DeviceCount: 1}
	ts.record(t, "org/a-model", cpuPass)
	ts.record(t, "org/b-model", failOn(compat.TargetCPU, testTime, "aten::x"))
	return ts
}

// TestTableHeadlineWithoutTPU: on a host without a chip the headline
// says there is no TPU result, in words, and shows the CPU reference's
// figures under their name; each row says what its verdict rests on.
func TestTableHeadlineWithoutTPU(t *testing.T) {
	ts := cpuOnly(t)
	ts.upsert(t, store.ModelUpsert{ID: "org/skipped"})
	skip := passOn(compat.TargetCPU, testTime, 1)
	skip.Status, skip.Reason, skip.Metrics = compat.StatusSkipped, compat.Ptr(compat.ReasonRemoteCode), compat.Metrics{}
	ts.record(t, "org/skipped", skip)
	for _, path := range []string{"/", "/?target=cpu"} {
		body := ts.get(t, path).body
		head, _, _ := strings.Cut(body, `<form class="filters"`)
		for _, want := range []string{"No TPU results on this instance yet.", "CPU reference, measured on CPU (not TorchTPU)",
			`data-evidence="measured" data-target="cpu"`, "50.0 %", `<dd>2 <span class="muted">of 4; 1 more skipped or errors</span></dd>`} {
			if !strings.Contains(head, want) {
				t.Errorf("%s: headline lacks %q:\n%s", path, want, head)
			}
		}
		if strings.Contains(head, "TorchTPU, measured on TPU") {
			t.Errorf("%s: TPU figures without a TPU run", path)
		}
	}
	body := ts.get(t, "/").body
	for _, want := range []string{
		`<small class="ev" data-evidence="measured" title="measured on cpu with torch 2.15.0, transformers 5.23.0, harness 1 on 2026-11-30">measured on cpu</small>`,
		`<small class="ev" data-evidence="none" title="none (no verdict)">none (no verdict)</small>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("table lacks %s", want)
		}
	}

	// A TPU result: its figures, under TorchTPU's name, from it alone.
	ts.record(t, "org/untested", passOn(compat.TargetTPU, testTime, 300))
	body = ts.get(t, "/").body
	head, _, _ := strings.Cut(body, `<form class="filters"`)
	tpu, cpu, ok := strings.Cut(head, "CPU reference")
	if !ok || !strings.Contains(tpu, `<h2 class="figures-h" data-evidence="measured" data-target="tpu">TorchTPU, measured on TPU</h2>`) ||
		!strings.Contains(tpu, "<dd>100.0 %</dd>") || !strings.Contains(tpu, `<dd>1 <span class="muted">of 4</span></dd>`) || strings.Contains(head, "No TPU results") ||
		!strings.Contains(cpu, "<dd>50.0 %</dd>") {
		t.Errorf("headline with a TPU result:\n%s", head)
	}
	if !strings.Contains(body, `>measured on 1 × TPU v6e</small>`) {
		t.Error("the TPU row does not say its evidence")
	}
}

// TestAPIEvidence: every result and event the API serves carries its
// evidence; the summary adds each target's own figures and the headline,
// and keeps the meaning of its fields.
func TestAPIEvidence(t *testing.T) {
	ts := cpuOnly(t)
	d := decode[modelDetail](t, ts.get(t, "/api/v1/models/org/a-model"))
	if d.Result == nil || d.Result.Evidence == nil || d.Result.Evidence.Kind != compat.EvidenceMeasured ||
		d.Result.Evidence.Target != compat.TargetCPU || d.Result.Evidence.Device != "cpu" || d.Result.Evidence.DeviceCount != 1 ||
		d.Result.Evidence.Runtime != "cpu~2.15.0~~5.23.0~1" || !d.Result.Evidence.At.Equal(testTime) {
		t.Errorf("detail result evidence: %+v", d.Result)
	}
	if len(d.History) != 1 || d.History[0].Evidence == nil || len(d.Results) != 1 || d.Results[0].Evidence == nil {
		t.Errorf("history and results without evidence: %+v %+v", d.History, d.Results)
	}
	if len(d.Events) == 0 || d.Events[0].Evidence == nil || d.Events[0].Evidence.Kind != compat.EvidenceMeasured ||
		d.Events[0].Evidence.Target != compat.TargetCPU {
		t.Errorf("events without evidence: %+v", d.Events)
	}
	list := decode[modelList](t, ts.get(t, "/api/v1/models"))
	seen := 0
	for _, m := range list.Models {
		if m.Result != nil {
			seen++
			if m.Result.Evidence == nil || m.Result.Evidence.Kind != compat.EvidenceMeasured {
				t.Errorf("%s: evidence %+v", m.ID, m.Result.Evidence)
			}
		}
	}
	if seen != 2 {
		t.Errorf("%d results listed, want 2", seen)
	}

	sum := decode[summaryBody](t, ts.get(t, "/api/v1/summary"))
	// pass_rate keeps its meaning (every model's newest result, any target)...
	if sum.Tested != 2 || sum.PassRate == nil || *sum.PassRate != 0.5 {
		t.Errorf("summary figures changed meaning: %+v", sum)
	}
	// ...and the additions say where each figure comes from.
	if sum.Headline != "No TPU results on this instance yet." || sum.Predicted != nil ||
		sum.Measured[compat.TargetTPU].Tested != 0 || sum.Measured[compat.TargetTPU].PassRate != nil ||
		sum.Measured[compat.TargetCPU].Tested != 2 || *sum.Measured[compat.TargetCPU].PassRate != 0.5 ||
		sum.Measured[compat.TargetCPU].Name != "CPU reference, measured on CPU (not TorchTPU)" {
		t.Errorf("summary additions: %+v", sum)
	}
}

// TestCSVAndFeedEvidence: the CSV's evidence columns come last and say
// each row's evidence; each feed entry says its change's.
func TestCSVAndFeedEvidence(t *testing.T) {
	ts := cpuOnly(t)
	rows, err := csv.NewReader(strings.NewReader(ts.get(t, "/export.csv?sort=id&order=asc").body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	n, e := len(evidenceCSVColumns), max(slices.Index(rows[0], evidenceCSVColumns[0]), 0) // later groups (serving's) follow
	if head := rows[0]; !slices.Equal(head[e:e+n], evidenceCSVColumns) || !slices.Equal(head[:len(csvColumns)], csvColumns) {
		t.Errorf("header %v", head)
	}
	got := map[string]string{}
	for _, r := range rows[1:] {
		got[r[0]] = strings.Join(r[e:e+n], ",")
	}
	want := map[string]string{
		"org/a-model":  "measured,cpu,cpu,1,cpu~2.15.0~~5.23.0~1,2026-11-30T12:00:00Z,",
		"org/b-model":  "measured,cpu,cpu,1,cpu~2.9.0~0.2.0~~,2026-11-30T12:00:00Z,",
		"org/untested": "none,,,,,,",
	}
	if !maps.Equal(got, want) {
		t.Errorf("CSV evidence %q, want %q", got, want)
	}

	_, items := feedItemsOf(t, ts.get(t, "/feed.json").body)
	changes := 0
	for _, it := range items {
		if !strings.Contains(it["id"].(string), "/events/") {
			continue // a new runtime's item
		}
		changes++
		if text := it["content_text"].(string); !strings.Contains(text, "\n\nEvidence: measured on cpu with ") {
			t.Errorf("feed text lacks the evidence: %q", text)
		}
		if ev := it["_evidence"].(map[string]any); ev["kind"] != "measured" || ev["target"] != "cpu" {
			t.Errorf("feed _evidence %v", ev)
		}
	}
	if changes != 2 {
		t.Errorf("%d status changes in the feed, want 2", changes)
	}
	if atom := ts.get(t, "/feed.atom").body; strings.Count(atom, "Evidence: measured on cpu") < 2 {
		t.Errorf("atom lacks the evidence:\n%.2000s", atom)
	}
}

// TestModelPageEvidence: the model page says what each current result,
// each row of its history and each change of its timeline rests on.
func TestModelPageEvidence(t *testing.T) {
	ts := cpuOnly(t)
	ts.record(t, "org/a-model", passOn(compat.TargetTPU, testTime, 300))
	body := ts.get(t, "/models/org/a-model").body
	for _, want := range []string{
		`<dd data-evidence="measured">measured on 1 × TPU v6e with torch 2.9.0, torch_tpu 0.2.0, transformers 4.57.1, harness 1 on 2026-11-30</dd>`,
		`<dd data-evidence="measured">measured on cpu with torch 2.15.0, transformers 5.23.0, harness 1 on 2026-11-30 <span class="muted">(the CPU reference, not TorchTPU)</span></dd>`,
		`<td data-label="Evidence"><span data-evidence="measured" title="measured on cpu with torch 2.15.0, transformers 5.23.0, harness 1 on 2026-11-30">measured on cpu</span></td>`,
		`<td data-label="Evidence"><span data-evidence="measured" title="measured on 1 × TPU v6e with torch 2.9.0, torch_tpu 0.2.0, transformers 4.57.1, harness 1 on 2026-11-30">measured on 1 × TPU v6e</span></td>`,
		`· <span data-evidence="measured">measured on 1 × TPU v6e</span></span>`, // the event knows its devices
		`· <span data-evidence="measured">measured on cpu</span></span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("model page lacks %s", want)
		}
	}
}

// TestMethodologyExplainsEvidence: /methodology#evidence explains every
// tier, and the pages that show evidence link there.
func TestMethodologyExplainsEvidence(t *testing.T) {
	ts := cpuOnly(t)
	body := ts.get(t, "/methodology").body
	_, sec, ok := strings.Cut(body, `<h2 id="evidence">Evidence</h2>`)
	sec, _, _ = strings.Cut(sec, "<h2")
	if !ok {
		t.Fatal("no evidence section")
	}
	for _, k := range compat.EvidenceKinds {
		if !strings.Contains(sec, "<dt><code>"+string(k)+"</code></dt><dd>") {
			t.Errorf("the evidence section does not explain %s", k)
		}
	}
	for _, want := range []string{"No TPU results on this instance yet", "never TorchTPU&#39;s", "cpu pass"} {
		if !strings.Contains(sec, want) {
			t.Errorf("the evidence section lacks %q", want)
		}
	}
	for _, path := range []string{"/", "/models/org/a-model"} {
		if !strings.Contains(ts.get(t, path).body, `href="/methodology#evidence"`) {
			t.Errorf("%s does not link the tiers' explanation", path)
		}
	}
}

// TestFeedEvidenceSaysTheDeviceCount: a status change made by a probe
// sharded over 4 chips says so in the JSON Feed (_evidence.device_count),
// the Atom feed's text, and the API's events (devices_used, evidence).
func TestFeedEvidenceSaysTheDeviceCount(t *testing.T) {
	ts := cpuOnly(t)
	r := passOn(compat.TargetTPU, testTime, 300)
	r.DevicesUsed, r.Sharding = 4, compat.Ptr(compat.ShardingTP)
	ts.record(t, "org/a-model", r)
	_, items := feedItemsOf(t, ts.get(t, "/feed.json?target=tpu").body)
	if len(items) != 1 {
		t.Fatalf("%d tpu items, want 1", len(items))
	}
	if ev := items[0]["_evidence"].(map[string]any); ev["device_count"] != 4.0 || ev["device"] != "TPU v6e" {
		t.Errorf("feed _evidence %v, want 4 × TPU v6e", ev)
	}
	if text := items[0]["content_text"].(string); !strings.Contains(text, "Evidence: measured on 4 × TPU v6e with ") {
		t.Errorf("feed text %q", text)
	}
	if atom := ts.get(t, "/feed.atom?target=tpu").body; !strings.Contains(atom, "Evidence: measured on 4 × TPU v6e with ") {
		t.Errorf("atom lacks the device count:\n%.2000s", atom)
	}
	body := ts.get(t, "/api/v1/models/org/a-model").body
	if !strings.Contains(body, `"devices_used":4,"known_issue"`) && !strings.Contains(body, `"devices_used":4,"evidence":{"kind":"measured","target":"tpu","device":"TPU v6e","device_count":4`) {
		t.Errorf("the API's event lacks its devices: %.3000s", body)
	}
}

// TestModeVerdictsCarryTheirEvidence: each mode's verdict says what it
// rests on, its own: a train step measured on the cpu reference while the
// TPU skipped it is "measured on cpu" in the table, the train badge and
// the API; the TPU result's skipped train and its eager pass say none and
// measured on the TPU, row by row on the model page.
func TestModeVerdictsCarryTheirEvidence(t *testing.T) {
	ts := cpuOnly(t)
	cpu := passOn(compat.TargetCPU, testTime.Add(time.Hour), 7)
	cpu.Runtime = compat.Runtime{Torch: "2.15.0", Transformers: "5.23.0", Harness: "1", Device: "cpu", DeviceCount: 1}
	cpu.Modes = map[string]compat.Verdict{compat.ModeTrain: {Status: compat.StatusPass, Stage: compat.Ptr("train")}}
	ts.record(t, "org/b-model", cpu)
	tpu := passOn(compat.TargetTPU, testTime, 300)
	tpu.Modes = map[string]compat.Verdict{
		compat.ModeEager: {Status: compat.StatusPass, Stage: compat.Ptr("numerics")},
		compat.ModeTrain: {Status: compat.StatusSkipped, Reason: compat.Ptr("too_large")},
	}
	ts.record(t, "org/a-model", tpu)

	page := ts.get(t, "/models/org/a-model?target=tpu").body
	for _, want := range []string{
		`<tr data-mode="eager"><th scope="row">Inference, eager</th>
        <td data-label="Status"><span class="status st-pass">pass</span></td>
        <td data-label="Evidence"><span data-evidence="measured" title="measured on 1 × TPU v6e with torch 2.9.0, torch_tpu 0.2.0, transformers 4.57.1, harness 1 on 2026-11-30">measured on 1 × TPU v6e</span></td>`,
		`<td data-label="Evidence"><span data-evidence="none" title="none (no verdict)">none (no verdict)</span></td>`,
	} {
		if !strings.Contains(page, want) {
			i := strings.Index(page, `class="matrix"`)
			t.Errorf("model page lacks %s\n%.3000s", want, page[max(i, 0):])
		}
	}
	table := ts.get(t, "/?target=cpu").body
	if !strings.Contains(table, `<td data-label="Train"><span class="status st-pass">pass</span><br><small class="ev" data-evidence="measured" title="measured on cpu with torch 2.15.0, transformers 5.23.0, harness 1 on 2026-11-30">measured on cpu</small></td>`) {
		t.Errorf("the table's train cell lacks its evidence")
	}
	var m struct {
		Result struct {
			Modes map[string]compat.Verdict `json:"modes"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(ts.get(t, "/api/v1/models/org/a-model").body), &m); err != nil {
		t.Fatal(err)
	}
	modes := m.Result.Modes
	if e := modes[compat.ModeEager].Evidence; e == nil || e.Kind != compat.EvidenceMeasured || e.Target != compat.TargetTPU || e.DeviceCount != 1 {
		t.Errorf("API eager evidence %+v", e)
	}
	if e := modes[compat.ModeTrain].Evidence; e == nil || e.Kind != compat.EvidenceNone {
		t.Errorf("API skipped train evidence %+v", e)
	}
	badge := ts.get(t, "/badge/org/b-model.svg?mode=train&target=cpu").body
	if !strings.Contains(badge, "measured on cpu with torch 2.15.0") {
		t.Errorf("the train badge's title lacks its evidence: %.600s", badge)
	}
	if badge := ts.get(t, "/badge/org/a-model.svg?mode=train").body; strings.Contains(badge, "measured on") {
		t.Errorf("a skipped train step's badge claims a measurement: %.600s", badge)
	}
}
