package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/data"
)

// TestSweepCoverage: GET /api/v1/sweep and /methodology show how many models of Google's sweep get a real verdict,
// per task, from the store's current results, and name the scanner's own errors as its gap; a new result changes
// the figure (recomputed when the data changes, not cached past it).
func TestSweepCoverage(t *testing.T) {
	ctx := context.Background()
	db := storetest.MustOpen(t)
	ups := []store.ModelUpsert{
		{ID: "openai-community/gpt2", Task: "text-generation", Library: "transformers"},
		{ID: "Qwen/Qwen3-0.6B", Task: "text-generation", Library: "transformers"},
		{ID: "google/gemma-4-12B-it", Task: "any-to-any", Library: "transformers"},
		{ID: "google/ddpm-cifar10-32", Task: "unconditional-image-generation", Library: "diffusers"},
		{ID: "not/in-the-sweep", Task: "text-generation", Library: "transformers"},
	}
	if err := db.UpsertModels(ctx, ups); err != nil {
		t.Fatal(err)
	}
	at := testTime
	record := func(id string, r compat.Result) {
		t.Helper()
		at = at.Add(time.Minute)
		r.Target, r.Revision, r.TestedAt, r.Runtime = compat.TargetCPU, "r", at, storetest.Runtime
		r.Runtime.TorchTPU, r.Runtime.Device = "", "cpu"
		if _, err := db.RecordResult(ctx, id, r); err != nil {
			t.Fatal(err)
		}
	}
	sig := "harness_inputs:config:vision_config"
	record("openai-community/gpt2", compat.Result{Status: compat.StatusPass, Stage: compat.Ptr(compat.StageGenerate)})
	record("Qwen/Qwen3-0.6B", compat.Result{Status: compat.StatusFail, Stage: compat.Ptr(compat.StageForward),
		FailureClass: compat.Ptr(compat.ClassUnsupportedOp), Signature: compat.Ptr("unsupported_op:aten::foo")})
	record("google/gemma-4-12B-it", compat.Result{Status: compat.StatusError, Stage: compat.Ptr(compat.StageConfig),
		FailureClass: compat.Ptr(compat.ClassOther), Signature: &sig})
	record("google/ddpm-cifar10-32", compat.Result{Status: compat.StatusSkipped,
		Reason: compat.Ptr(compat.ReasonUnsupportedLibrary)})
	record("not/in-the-sweep", compat.Result{Status: compat.StatusPass, Stage: compat.Ptr(compat.StageGenerate)})

	ts := newTestServer(t, 0, 0, Config{Store: db})
	b := decode[data.SweepBody](t, ts.get(t, "/api/v1/sweep?target=cpu"))
	if b.Target != "cpu" || b.Source.Repository != "google-pytorch/torch_tpu" || b.Source.Models.Commit == "" {
		t.Errorf("target %q source %+v", b.Target, b.Source)
	}
	// 200 models in the list; 2 verdicts (pass, fail), 1 skip, 1 scanner error, the rest untested
	if b.Models != 200 || b.Verdicts != 2 || b.Skipped != 1 || b.ScannerError != 1 || b.Untested != 196 ||
		b.Share == nil || *b.Share != 0.01 {
		t.Errorf("counts %+v share %v", b.Counts, b.Share)
	}
	tasks := map[string]data.SweepTask{}
	for _, tc := range b.Tasks {
		tasks[tc.Task] = tc
	}
	if len(tasks) != 43 {
		t.Errorf("%d tasks, want 43", len(tasks))
	}
	if tg := tasks["text-generation"]; tg.Verdicts != 2 || tg.Share == nil || *tg.Share != 2.0/float64(tg.Models) {
		t.Errorf("text-generation %+v", tg)
	}
	if a := tasks["any-to-any"]; a.ScannerError != 1 || a.Verdicts != 0 {
		t.Errorf("any-to-any %+v", a)
	}
	var gap *string
	for _, g := range b.Gaps {
		if g.ModelID == "google/gemma-4-12B-it" {
			gap = g.Signature
		}
		if g.ModelID == "not/in-the-sweep" || g.ModelID == "openai-community/gpt2" {
			t.Errorf("gap %+v", g)
		}
	}
	if gap == nil || *gap != sig {
		t.Errorf("the scanner's error is not named among the gaps: %v", gap)
	}

	page := strings.Join(strings.Fields(ts.get(t, "/methodology").body), " ")
	for _, want := range []string{`id="sweep"`, `<strong id="sweep-verdicts">2 of 200</strong> (1%)`,
		`<strong id="sweep-gap">1</strong>`, "examples/benchmarks/e2e/harness/gen_utils/models.csv",
		`<a href="/models/google/gemma-4-12B-it">google/gemma-4-12B-it</a> (any-to-any) at <code>config</code>: <code>` + sig,
		"<tr><td><code>any-to-any</code></td><td>5</td><td>0</td><td>0%</td><td>0</td><td>1</td><td>4</td></tr>"} {
		if !strings.Contains(page, want) {
			t.Errorf("methodology lacks %q", want)
		}
	}

	// A new verdict moves the figure at once.
	record("google/gemma-4-12B-it", compat.Result{Status: compat.StatusPass, Stage: compat.Ptr(compat.StageGenerate)})
	b = decode[data.SweepBody](t, ts.get(t, "/api/v1/sweep?target=cpu"))
	if b.Verdicts != 3 || b.ScannerError != 0 {
		t.Errorf("after a new result: %+v", b.Counts)
	}
	if page := ts.get(t, "/methodology").body; !strings.Contains(page, `<strong id="sweep-verdicts">3 of 200</strong>`) {
		t.Error("methodology did not recompute the figure")
	}
	if tpu := decode[data.SweepBody](t, ts.get(t, "/api/v1/sweep?target=tpu")); tpu.Verdicts != 0 || tpu.Untested != 200 {
		t.Errorf("tpu: %+v", tpu.Counts)
	}
}
