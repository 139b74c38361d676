package web

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

const tableName = "torch_tpu 0.2.0 / torch 2.15.0"

// predictedOn is a passing cpu result with a prediction.
func predictedOn(at time.Time, missing, train []string) compat.Result {
	r := passOn(compat.TargetCPU, at, 10)
	r.Runtime.TorchTPU, r.Runtime.Device = "", "cpu"
	r.TPUOps = &compat.TPUOps{Table: tableName, Traced: 40, Native: 38, Default: 1, Missing: missing, MissingTrain: train}
	return r
}

// opsServer: a (1000 downloads) needs median for inference and train, b
// (500) _aminmax for train only, c (200) nothing; d (100) failed on tpu on
// median with no result elsewhere; e (50) has a prediction without median
// and failed on tpu on median.
func opsServer(t *testing.T) *testServer {
	ts := newTestServer(t, 0, 0, Config{})
	ts.upsert(t,
		store.ModelUpsert{ID: "o/a", Task: "text-generation", Downloads: 1000, SHA: "s"},
		store.ModelUpsert{ID: "o/b", Task: "text-generation", Downloads: 500, SHA: "s"},
		store.ModelUpsert{ID: "o/c", Task: "text-generation", Downloads: 200, SHA: "s"},
		store.ModelUpsert{ID: "o/d", Task: "text-generation", Downloads: 100, SHA: "s"},
		store.ModelUpsert{ID: "o/e", Task: "text-generation", Downloads: 50, SHA: "s"})
	ts.record(t, "o/a", predictedOn(testTime, []string{"aten::median"}, []string{"aten::median"}))
	ts.record(t, "o/b", predictedOn(testTime, nil, []string{"aten::_aminmax"}))
	ts.record(t, "o/c", predictedOn(testTime, nil, nil))
	ts.record(t, "o/d", failOn(compat.TargetTPU, testTime, "aten::median"))
	ts.record(t, "o/e", predictedOn(testTime, nil, nil))
	ts.record(t, "o/e", failOn(compat.TargetTPU, testTime.Add(time.Minute), "aten::median"))
	ts.record(t, "o/a", failOn(compat.TargetTPU, testTime.Add(time.Minute), "aten::median"))
	ctx := context.Background()
	for i, tpu := range []string{"0.1.0", "0.2.0"} {
		ops := map[string]string{"aten::addmm": compat.OpNative, "aten::median": compat.OpFallback, "aten::_aminmax": compat.OpFallback}
		if i == 0 {
			ops["aten::addmm"], ops["aten::old"] = compat.OpFallback, compat.OpNative
		}
		kt := compat.KernelTable{Torch: "2.15.0", TorchTPU: tpu, Ops: ops, ReadAt: testTime.Add(time.Duration(i) * time.Hour)}
		if _, err := ts.db.PutKernelTable(ctx, kt); err != nil {
			t.Fatal(err)
		}
	}
	return ts
}

func TestAPIOps(t *testing.T) {
	ts := opsServer(t)
	r := ts.get(t, "/api/v1/ops")
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	body := decode[opsBody](t, r)
	if body.Table != tableName || len(body.Ops) != 2 || !strings.Contains(body.Caveat, "not a TPU result") {
		t.Fatalf("%+v", body)
	}
	m, a := body.Ops[0], body.Ops[1]
	if m.Op != "aten::median" || m.Downloads != 1000 || m.Inference.Models != 1 || m.Train.Downloads != 1000 ||
		a.Op != "aten::_aminmax" || a.Downloads != 500 || a.Inference.Models != 0 || a.Train.Models != 1 ||
		strings.Join(a.ModelIDs, ",") != "o/b" {
		t.Errorf("ops %+v", body.Ops)
	}
	one := decode[opsBody](t, ts.get(t, "/api/v1/ops?op=aten::_aminmax"))
	if len(one.Ops) != 1 || one.Ops[0].Op != "aten::_aminmax" {
		t.Errorf("?op=: %+v", one.Ops)
	}
	for _, path := range []string{"/api/v1/ops?format=csv", "/ops.csv"} {
		csv := ts.get(t, path)
		lines := strings.Split(strings.TrimSpace(csv.body), "\r\n")
		if csv.status != 200 || !strings.HasPrefix(csv.header.Get("Content-Type"), "text/csv") || len(lines) != 3 ||
			lines[1] != "aten::median,1,1000,1,1000,1,1000,"+tableName+",o/a" {
			t.Errorf("%s: %d %q", path, csv.status, csv.body)
		}
	}
	if r := ts.get(t, "/api/v1/ops?format=xml"); r.status != 400 {
		t.Errorf("format xml: %d", r.status)
	}
	// cached until the data changes: c's new prediction shows at once
	ts.record(t, "o/c", predictedOn(testTime.Add(time.Hour), []string{"aten::nanmedian"}, nil))
	after := decode[opsBody](t, ts.get(t, "/api/v1/ops"))
	if len(after.Ops) != 3 || after.Ops[2].Op != "aten::nanmedian" || after.Ops[2].Downloads != 200 {
		t.Errorf("after a new prediction: %+v", after.Ops)
	}
}

func TestOpsPage(t *testing.T) {
	ts := opsServer(t)
	r := ts.get(t, "/ops")
	if r.status != 200 {
		t.Fatalf("%d", r.status)
	}
	for _, want := range []string{`<a href="/ops?op=aten%3A%3Amedian"><code>aten::median</code></a>`, `<a href="/models/o/a">o/a</a>`,
		tableName, "not a TPU result"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("/ops lacks %q", want)
		}
	}
	if i, j := strings.Index(r.body, "aten::median"), strings.Index(r.body, "aten::_aminmax"); i < 0 || j < i {
		t.Errorf("median (1000 downloads) is not listed before _aminmax (500)")
	}
}

// TestPredictionIsNeverATPUPass: the table, the model page and the badge
// JSON say the prediction in its words, and never on the tpu side.
func TestPredictionIsNeverATPUPass(t *testing.T) {
	ts := opsServer(t)
	table := ts.get(t, "/?target=cpu")
	if !strings.Contains(table.body, "TorchTPU 0.2.0: 1 op not implemented (aten::median)") ||
		!strings.Contains(table.body, "TorchTPU 0.2.0: all 40 ops implemented") {
		t.Errorf("the table lacks the predictions")
	}
	page := ts.get(t, "/models/o/b")
	if !strings.Contains(page.body, "TorchTPU 0.2.0: 1 op not implemented (aten::_aminmax (train))") ||
		!strings.Contains(page.body, "The train step needs:") || !strings.Contains(page.body, "not a TPU result") {
		t.Errorf("o/b's page lacks its prediction")
	}
	cpuBadge := decode[map[string]any](t, ts.get(t, "/badge/o/c.json?target=cpu"))
	if cpuBadge["tpu_ops"] != "TorchTPU 0.2.0: all 40 ops implemented" || strings.Contains(cpuBadge["message"].(string), "TorchTPU") {
		t.Errorf("cpu badge %v", cpuBadge)
	}
	// The TorchTPU badge of a model measured on the cpu only says so
	// ("cpu pass", the evidence's rule), and its prediction in its words.
	tpuBadge := decode[map[string]any](t, ts.get(t, "/badge/o/c.json"))
	if tpuBadge["message"] != "cpu pass" || tpuBadge["tpu_ops"] != "TorchTPU 0.2.0: all 40 ops implemented" {
		t.Errorf("the tpu badge of a model tested on cpu only: %v", tpuBadge)
	}
	api := decode[compat.Model](t, ts.get(t, "/api/v1/models/o/a?target=cpu"))
	if api.Result == nil || api.Result.TPUOps == nil || api.Result.TPUOps.Table != tableName {
		t.Errorf("the API's result lacks tpu_ops: %+v", api.Result)
	}
}

// TestPredictionCheck: a tpu failure on a missing op says whether the
// model's prediction had it.
func TestPredictionCheck(t *testing.T) {
	ts := opsServer(t)
	for id, want := range map[string]string{
		"o/a": "The prediction (" + tableName + ", from the cpu run) had aten::median, among the inference&#39;s missing ops.",
		"o/e": "The prediction (" + tableName + ", from the cpu run) did not have aten::median",
		"o/d": "No prediction to compare with",
	} {
		if body := ts.get(t, "/models/"+id).body; !strings.Contains(body, want) {
			t.Errorf("%s's page lacks %q", id, want)
		}
	}
}

func TestRuntimesShowKernelTables(t *testing.T) {
	ts := opsServer(t)
	// predictions judged against 0.1.0: f lacked addmm alone (0.2.0 adds it), g addmm and median
	ts.upsert(t, store.ModelUpsert{ID: "o/f", Task: "text-generation", Downloads: 40, SHA: "s"},
		store.ModelUpsert{ID: "o/g", Task: "text-generation", Downloads: 30, SHA: "s"})
	old := func(missing ...string) compat.Result {
		r := predictedOn(testTime, nil, missing)
		r.TPUOps.Table = "torch_tpu 0.1.0 / torch 2.15.0"
		return r
	}
	ts.record(t, "o/f", old("aten::addmm"))
	ts.record(t, "o/g", old("aten::addmm", "aten::median"))
	var body struct {
		KernelTables []kernelTableJSON `json:"kernel_tables"`
	}
	if err := json.Unmarshal([]byte(ts.get(t, "/api/v1/runtimes").body), &body); err != nil {
		t.Fatal(err)
	}
	k := body.KernelTables
	if len(k) != 2 || k[0].Table != tableName || k[0].Native != 1 || k[0].Previous != "torch_tpu 0.1.0 / torch 2.15.0" ||
		strings.Join(k[0].Added, ",") != "aten::addmm" || strings.Join(k[0].Dropped, ",") != "aten::old" || k[1].Previous != "" ||
		strings.Join(k[0].Unblocks, ",") != "o/f" || len(k[1].Unblocks) != 0 {
		t.Errorf("kernel tables %+v", k)
	}
	// the feed announces the new table and the models it unblocks
	var feed struct {
		Items []struct {
			Title       string `json:"title"`
			ContentHTML string `json:"content_html"`
		} `json:"items"`
	}
	for _, path := range []string{"/feed.json", "/feed.json?kind=runtime"} {
		if err := json.Unmarshal([]byte(ts.get(t, path).body), &feed); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, it := range feed.Items {
			if strings.HasPrefix(it.Title, "New TorchTPU kernel table") {
				n++
				if it.Title != "New TorchTPU kernel table "+tableName+": 1 operators added, 1 dropped; predicted to unblock 1 models" ||
					!strings.Contains(it.ContentHTML, `<a href="http://example.com/models/o/f">o/f</a>`) {
					t.Errorf("%s: %q %q", path, it.Title, it.ContentHTML)
				}
			}
		}
		if n != 1 {
			t.Errorf("%s: %d kernel table items, want 1 (the first table has no predecessor)", path, n)
		}
	}
	page := ts.get(t, "/runtimes").body
	for _, want := range []string{"TorchTPU kernel tables", "1 added, 1 dropped", "+ <code>aten::addmm</code>", "− <code>aten::old</code>",
		`predicted to unblock 1: <a href="/models/o/f">o/f</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("/runtimes lacks %q", want)
		}
	}
}

// TestMethodologyHitRate: o/a failed on tpu on aten::median, which its
// prediction listed; o/e failed on it unlisted.
func TestMethodologyHitRate(t *testing.T) {
	ts := opsServer(t)
	body := ts.get(t, "/methodology").body
	if !strings.Contains(body, "the prediction held for 1 of 2 models") ||
		!strings.Contains(body, "it listed the operator of\n1 of the 2 tpu failures on a missing operator") {
		i := strings.Index(body, "data-hit-rate")
		t.Errorf("methodology's hit rate: %.400s", body[max(i, 0):])
	}
	empty := newTestServer(t, 0, 0, Config{})
	if body := empty.get(t, "/methodology").body; !strings.Contains(body, "the hit rate shows here once one does") {
		t.Error("an empty store's methodology does not say the hit rate is to come")
	}
}

// TestPredictedTier: the predictions are figures of their own in the
// summary and the table's headline (predicted, for tpu, from the kernel
// table), and each served prediction carries that evidence, while the
// result it came with stays measured on its own target.
func TestPredictedTier(t *testing.T) {
	ts := opsServer(t)
	// o/a (aten::median missing), o/b, o/c, o/e (nothing missing for
	// inference): 3 of 4, 750 of 1750 downloads.
	sum := decode[map[string]any](t, ts.get(t, "/api/v1/summary"))
	p, ok := sum["predicted"].(map[string]any)
	if !ok || p["evidence"] != "predicted" || p["target"] != "tpu" || p["tested"] != 4.0 || p["passed"] != 3.0 ||
		p["download_weighted_pass_rate"] != 750.0/1750.0 || !strings.Contains(p["name"].(string), "predicted from the TorchTPU kernel table") {
		t.Errorf("summary's predicted figures: %v", sum["predicted"])
	}
	table := ts.get(t, "/")
	if !strings.Contains(table.body, `data-evidence="predicted" data-target="tpu"`) || !strings.Contains(table.body, "Every op implemented") {
		t.Errorf("the headline lacks the predicted figures")
	}
	api := decode[compat.Model](t, ts.get(t, "/api/v1/models/o/c?target=cpu"))
	if api.Result == nil || api.Result.TPUOps == nil || api.Result.TPUOps.Evidence == nil {
		t.Fatalf("the prediction has no evidence: %+v", api.Result)
	}
	if e := *api.Result.TPUOps.Evidence; e.Kind != compat.EvidencePredicted || e.Target != compat.TargetTPU ||
		e.From != "the TorchTPU kernel table of "+tableName {
		t.Errorf("the prediction's evidence: %+v", e)
	}
	if api.Result.Evidence == nil || api.Result.Evidence.Kind != compat.EvidenceMeasured || api.Result.Evidence.Target != compat.TargetCPU {
		t.Errorf("the cpu result's own evidence: %+v", api.Result.Evidence)
	}
}

// TestAPIOpsRefusesWhatTheDocumentRefuses: an empty or padded parameter,
// a format other than json or csv, an over-long table or op are 400 on
// the API (schemathesis found ?format= accepted); /ops.csv, like the CSV
// export, takes an empty one as "any".
func TestAPIOpsRefusesWhatTheDocumentRefuses(t *testing.T) {
	ts := opsServer(t)
	for _, q := range []string{"format=", "table=", "op=", "op=%20aten::median", "format=xml",
		"op=" + strings.Repeat("a", 201), "table=" + strings.Repeat("t", 201)} {
		if r := ts.get(t, "/api/v1/ops?"+q); r.status != 400 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Errorf("/api/v1/ops?%.40s: %d %s", q, r.status, r.header.Get("Content-Type"))
		}
	}
	if r := ts.get(t, "/api/v1/ops?op=aten::median&format=csv"); r.status != 200 {
		t.Errorf("a good query: %d", r.status)
	}
	if r := ts.get(t, "/ops.csv?table="); r.status != 200 {
		t.Errorf("/ops.csv?table=: %d", r.status)
	}
}

// TestNewKernelTableUnblocksTracedModels (issue 36, point 4): models whose
// run traced an op the kernel table lacked move when a newer table
// implements it: their prediction on the model API, the fix list, and the
// new table's row and feed item, which name the models it unblocks.
func TestNewKernelTableUnblocksTracedModels(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	ts.upsert(t,
		store.ModelUpsert{ID: "o/a", Task: "text-generation", Downloads: 1000, SHA: "s"},
		store.ModelUpsert{ID: "o/b", Task: "text-generation", Downloads: 500, SHA: "s"})
	ctx := context.Background()
	put := func(tpu string, hour int, median string) compat.KernelTable {
		kt := compat.KernelTable{Torch: "2.15.0", TorchTPU: tpu, ReadAt: testTime.Add(time.Duration(hour) * time.Hour),
			Ops: map[string]string{"aten::addmm": compat.OpNative, "aten::median": median, "aten::_aminmax": compat.OpFallback}}
		if _, err := ts.db.PutKernelTable(ctx, kt); err != nil {
			t.Fatal(err)
		}
		return kt
	}
	put("0.2.0", 0, compat.OpFallback)
	traced := func(forward ...string) compat.Result {
		r := passOn(compat.TargetCPU, testTime.Add(time.Hour), 10)
		r.Runtime.TorchTPU, r.Runtime.Device = "", "cpu"
		r.OpsTraced = &compat.OpsTrace{Forward: forward}
		return r
	}
	ts.record(t, "o/a", traced("aten::addmm", "aten::median"))
	ts.record(t, "o/b", traced("aten::addmm", "aten::_aminmax"))
	if ops := decode[opsBody](t, ts.get(t, "/api/v1/ops")); len(ops.Ops) != 2 || ops.Ops[0].Op != "aten::median" {
		t.Fatalf("the fix list against 0.2.0: %+v", ops)
	}
	v3 := put("0.3.0", 2, compat.OpNative)

	api := decode[compat.Model](t, ts.get(t, "/api/v1/models/o/a?target=cpu"))
	if p := api.Result.TPUOps; p == nil || p.Table != v3.Name() || len(p.Missing) != 0 {
		t.Errorf("o/a's prediction after 0.3.0: %+v", p)
	}
	if ops := decode[opsBody](t, ts.get(t, "/api/v1/ops")); ops.Table != v3.Name() || len(ops.Ops) != 1 || ops.Ops[0].Op != "aten::_aminmax" {
		t.Errorf("the fix list against 0.3.0: %+v", ops)
	}
	var body struct {
		KernelTables []kernelTableJSON `json:"kernel_tables"`
	}
	if err := json.Unmarshal([]byte(ts.get(t, "/api/v1/runtimes").body), &body); err != nil {
		t.Fatal(err)
	}
	if k := body.KernelTables; len(k) != 2 || k[0].Table != v3.Name() || strings.Join(k[0].Unblocks, ",") != "o/a" {
		t.Errorf("kernel tables %+v", k)
	}
	feed := ts.get(t, "/feed.json?kind=runtime").body
	if !strings.Contains(feed, "New TorchTPU kernel table "+v3.Name()+": 1 operators added, 0 dropped; predicted to unblock 1 models") ||
		!strings.Contains(feed, "/models/o/a") || strings.Contains(feed, "/models/o/b") {
		t.Errorf("the feed: %.600s", feed)
	}
}
