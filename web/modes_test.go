package web

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/api"
	"github.com/google-pytorch/torchtpu-scanner/web/badge"
)

// trained is r with a matrix: the train verdict v (with three losses
// against the reference's), a compile with two graph breaks.
func trained(r compat.Result, v compat.Verdict) compat.Result {
	l := func(x float64) *float64 { return &x }
	if v.Status == compat.StatusPass {
		v.Metrics = compat.ModeMetrics{Losses: []*float64{l(6.25), l(5.5), l(4.75)},
			ReferenceLosses: []*float64{l(6.2503), l(5.5002), l(4.7499)}, StepMS: l(41.5), TokensPerS: l(771.1),
			PeakMemBytes: compat.Ptr(int64(3 << 20))}
	}
	r.Modes = map[string]compat.Verdict{
		compat.ModeTrain: v,
		compat.ModeCompiled: {Status: compat.StatusPass, Stage: compat.Ptr("compile"), Metrics: compat.ModeMetrics{
			Graphs: compat.Ptr(int64(3)), GraphBreaks: compat.Ptr(int64(2)),
			GraphBreakReasons: []string{"<b>call_function graph_break</b>", "Unsupported: print"}}},
		compat.ModeEagerDeferNever: {Status: compat.StatusPass, Stage: compat.Ptr("numerics"),
			Metrics: compat.ModeMetrics{ForwardMS: l(9.87), Precision: compat.Ptr("default")}},
	}
	r.Metrics.GraphBreaks = compat.Ptr(int64(2))
	r.Metrics.GraphBreakReasons = []string{"<b>call_function graph_break</b>", "Unsupported: print"}
	return r
}

func TestTheTrainVerdictOnEverySurface(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	ts.upsert(t, store.ModelUpsert{ID: "org/trains", Downloads: 30}, store.ModelUpsert{ID: "org/no-backward", Downloads: 20},
		store.ModelUpsert{ID: "org/old", Downloads: 10})
	ts.record(t, "org/trains", trained(passOn(compat.TargetTPU, testTime, 312), compat.Verdict{Status: compat.StatusPass,
		Stage: compat.Ptr("numerics")}))
	sensitive := trained(passOn(compat.TargetTPU, testTime, 100), compat.Verdict{Status: compat.StatusFail,
		Stage: compat.Ptr("backward"), Signature: compat.Ptr("other:no_backward has no autograd <x>"),
		Message: compat.Ptr("RuntimeError: no autograd")})
	sensitive.PrecisionSensitive = true
	ts.record(t, "org/no-backward", sensitive)
	ts.record(t, "org/old", passOn(compat.TargetTPU, testTime, 50)) // from before the matrix

	// API: the matrix as stored, and the train filter
	d := decode[compat.Model](t, ts.get(t, "/api/v1/models/org/trains?target=tpu"))
	if tr := d.Result.Train(); tr == nil || tr.Status != compat.StatusPass || len(tr.Metrics.ReferenceLosses) != 3 ||
		*d.Result.Metrics.GraphBreaks != 2 {
		t.Fatalf("API detail: %+v", d.Result)
	}
	list := decode[api.ModelList](t, ts.get(t, "/api/v1/models?target=tpu&train=fail"))
	if len(list.Models) != 1 || list.Models[0].ID != "org/no-backward" {
		t.Errorf("?train=fail: %+v", list.Models)
	}
	if r := ts.get(t, "/api/v1/models?train=untested"); r.status != 400 {
		t.Errorf("?train=untested: %d", r.status)
	}

	// CSV: the train columns, last
	rows, err := csv.NewReader(strings.NewReader(ts.get(t, "/export.csv?target=tpu").body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := rows[0]
	col := func(name string) int {
		for i, h := range head {
			if h == name {
				return i
			}
		}
		t.Fatalf("no CSV column %s in %v", name, head)
		return -1
	}
	got := map[string][]string{}
	for _, r := range rows[1:] {
		got[r[0]] = []string{r[col("train_status")], r[col("train_stage")], r[col("train_step_ms")], r[col("graph_breaks")]}
	}
	if strings.Join(got["org/trains"], "|") != "pass|numerics|41.5|2" || strings.Join(got["org/no-backward"], "|") != "fail|backward||2" ||
		strings.Join(got["org/old"], "|") != "|||" {
		t.Errorf("CSV train columns: %v", got)
	}
	if head[len(head)-1-len(api.KnownCSVColumns)-len(api.EvidenceCSVColumns)-len(api.ServingCSVColumns)-
		len(api.TrainEvidenceCSVColumns)] != "graph_breaks" {
		t.Errorf("the matrix's columns are not followed by the known issue's, the evidence's, the serving's and the train evidence's only: %v", head)
	}
	// The train verdict's own evidence (issue 37): measured by the run that trained, none where no train step ran
	for id, want := range map[string]string{"org/trains": "measured", "org/no-backward": "measured", "org/old": "none"} {
		for _, r := range rows[1:] {
			if r[0] == id && (r[col("train_evidence")] != want || (want == "measured") != (r[col("train_evidence_runtime")] != "")) {
				t.Errorf("%s: train evidence %q (runtime %q), want %s", id, r[col("train_evidence")], r[col("train_evidence_runtime")], want)
			}
		}
	}

	// Table: the Train column and filter
	body := ts.get(t, "/?target=tpu&train=fail").body
	if !strings.Contains(body, `id="f-train"`) || !strings.Contains(body, `<option value="fail" selected>`) ||
		!strings.Contains(body, "org/no-backward") || strings.Contains(body, `href="/models/org/trains"`) {
		t.Errorf("table filtered by train=fail:\n%s", body)
	}
	body = ts.get(t, "/?target=tpu").body
	if !strings.Contains(body, `<td data-label="Train"><span class="status`) || !strings.Contains(body, "(backward)") {
		t.Errorf("table without the Train column's verdicts:\n%s", body)
	}

	// Model page: the matrix, the loss chart, graph breaks (escaped), the precision hint
	body = ts.get(t, "/models/org/trains").body
	for _, want := range []string{`data-mode="train"`, `data-mode="compiled"`, `data-mode="eager_defer_never"`,
		"Train step", `id="train-loss-tpu"`, "<svg", "CPU float32 reference", "6.25", "4.7499",
		"&lt;b&gt;call_function graph_break&lt;/b&gt;", "Graph breaks (compile)", "step 41.5 ms", "forward 9.9 ms"} {
		if !strings.Contains(body, want) {
			t.Errorf("model page lacks %q", want)
		}
	}
	if strings.Contains(body, "<b>call_function") {
		t.Error("a graph-break reason reached the page unescaped")
	}
	body = ts.get(t, "/models/org/no-backward").body
	if !strings.Contains(body, "Precision.HIGHEST") || !strings.Contains(body, "other:no_backward has no autograd &lt;x&gt;") {
		t.Errorf("model page: no precision hint or train signature:\n%s", body)
	}
	if body := ts.get(t, "/models/org/old").body; strings.Contains(body, "data-mode=") || strings.Contains(body, "train-loss") {
		t.Error("a result from before the matrix shows one")
	}

	// Badges: ?mode=train draws the train verdict, not the status
	for path, want := range map[string]string{
		"/badge/org/trains.svg?mode=train":      "TorchTPU train: passing",
		"/badge/org/no-backward.svg?mode=train": "TorchTPU train: failing · backward",
		"/badge/org/no-backward.svg":            "TorchTPU: passing · 100 tok/s",
		"/badge/org/old.svg?mode=train":         "TorchTPU train: untested",
		"/badge/org/trains.svg?mode=bogus":      "unknown",
	} {
		if r := ts.get(t, path); r.status != 200 || !strings.Contains(r.body, want) {
			t.Errorf("%s: %d, want %q in\n%s", path, r.status, want, r.body)
		}
	}
	if e := decode[badge.Endpoint](t, ts.get(t, "/badge/org/no-backward.json?mode=train")); e.Message != "failing · backward" {
		t.Errorf("endpoint badge ?mode=train: %+v", e)
	}
}

// The feed lists a train regression as its own kind of change, apart from
// the inference's (which did not change), and ?kind= picks it.
func TestTheFeedListsATrainRegressionApart(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	ts.upsert(t, store.ModelUpsert{ID: "org/m"})
	ts.record(t, "org/m", trained(passOn(compat.TargetTPU, testTime, 312), compat.Verdict{Status: compat.StatusPass}))
	ts.record(t, "org/m", trained(passOn(compat.TargetTPU, testTime.Add(time.Hour), 312), compat.Verdict{
		Status: compat.StatusFail, Stage: compat.Ptr("backward"), Signature: compat.Ptr("other:no_backward")}))
	body := ts.get(t, "/feed.json").body
	if !strings.Contains(body, "Train regression: org/m fails in the train step on tpu (backward, other no_backward)") {
		t.Errorf("feed without the train regression:\n%s", body)
	}
	if strings.Contains(body, "Regression: org/m") {
		t.Errorf("the inference did not regress, but the feed says so:\n%s", body)
	}
	if only := ts.get(t, "/feed.json?kind=train_regression").body; !strings.Contains(only, "Train regression") ||
		strings.Contains(only, "New: org/m") {
		t.Errorf("?kind=train_regression:\n%s", only)
	}
}
