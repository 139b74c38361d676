package store_test

import (
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// withTrain is r with a verdict matrix whose train verdict has status st.
func withTrain(r compat.Result, st compat.Status) compat.Result {
	r.Modes = map[string]compat.Verdict{
		compat.ModeTrain: {Status: st, Stage: compat.Ptr("numerics"), Metrics: compat.ModeMetrics{
			Losses:          []*float64{compat.Ptr(6.2), compat.Ptr(5.9), nil},
			ReferenceLosses: []*float64{compat.Ptr(6.2), compat.Ptr(5.9), compat.Ptr(5.6)},
			StepMS:          compat.Ptr(12.5),
			PeakMemBytes:    compat.Ptr(int64(1 << 20)),
		}},
		compat.ModeCompiled: {Status: compat.StatusPass, Stage: compat.Ptr("compile"),
			Metrics: compat.ModeMetrics{GraphBreaks: compat.Ptr(int64(2)), GraphBreakReasons: []string{"a", "b"}}},
	}
	r.PrecisionSensitive = true
	return r
}

func TestModesRoundTripAndTheTrainFilter(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "a/passes", "a/fails", "a/old", "a/untested")
	record(t, s, "a/passes", withTrain(result("cpu", "pass", at(1)), compat.StatusPass))
	record(t, s, "a/fails", withTrain(result("cpu", "pass", at(2)), compat.StatusFail))
	record(t, s, "a/old", result("cpu", "pass", at(3))) // from before the matrix: no modes

	hist, err := s.History(ctx, "a/fails", "cpu", 1)
	if err != nil || len(hist) != 1 {
		t.Fatal(hist, err)
	}
	cur := hist[0]
	want := withTrain(result("cpu", "pass", at(2)), compat.StatusFail)
	if got, w := mustJSON(t, cur.Modes), mustJSON(t, want.Modes); got != w {
		t.Errorf("modes read back\n got %s\nwant %s", got, w)
	}
	if !cur.PrecisionSensitive || cur.Train() == nil || cur.Train().Metrics.Losses[2] != nil {
		t.Errorf("precision_sensitive or the null loss lost: %+v", cur)
	}
	hist, err = s.History(ctx, "a/old", "cpu", 1)
	if err != nil || len(hist) != 1 {
		t.Fatal(hist, err)
	}
	if old := hist[0]; old.Modes != nil || old.PrecisionSensitive || old.Train() != nil {
		t.Errorf("a result from before the matrix has modes: %+v", old)
	}

	for _, tc := range []struct {
		train []compat.Status
		want  []string
	}{
		{[]compat.Status{"pass"}, []string{"a/passes"}},
		{[]compat.Status{"fail"}, []string{"a/fails"}},
		{[]compat.Status{"pass", "fail"}, []string{"a/passes", "a/fails"}},
		{[]compat.Status{"oom"}, []string{}},
	} {
		models, _, err := s.ListModels(ctx, store.ModelQuery{Target: "cpu", Train: tc.train})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(models); mustJSON(t, got) != mustJSON(t, tc.want) {
			t.Errorf("train=%v: got %v, want %v", tc.train, got, tc.want)
		}
		for _, m := range models { // the list carries the matrix the table's Train column reads
			if m.Result == nil || m.Result.Train() == nil {
				t.Errorf("train=%v: %s listed without its train verdict", tc.train, m.ID)
			}
		}
	}
	if _, _, err := s.ListModels(ctx, store.ModelQuery{Target: "cpu", Train: []compat.Status{"untested"}}); err == nil {
		t.Error("train=untested accepted: a result either has a train verdict or not")
	}
}

// A train regression is its own event, apart from the inference's: the
// inference passes throughout, the train verdict goes pass → fail → error
// (no verdict) → pass.
func TestTrainRegressionIsItsOwnEvent(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "a/m")
	failed := withTrain(result("cpu", "pass", at(2)), compat.StatusFail)
	tr := failed.Modes[compat.ModeTrain]
	tr.Stage, tr.Signature = compat.Ptr("backward"), compat.Ptr("other:no backward")
	failed.Modes[compat.ModeTrain] = tr

	first := record(t, s, "a/m", withTrain(result("cpu", "pass", at(1)), compat.StatusPass))
	if first.TrainEvent != nil {
		t.Errorf("a first train verdict made a train event: %+v", first.TrainEvent)
	}
	out := record(t, s, "a/m", failed)
	if out.Event != nil {
		t.Errorf("the inference did not change, but an event was written: %+v", out.Event)
	}
	if ev := out.TrainEvent; ev == nil || ev.Kind != compat.EventTrainRegression || ev.FromStatus != "pass" ||
		ev.ToStatus != "fail" || ev.Signature == nil || *ev.Signature != "other:no backward" {
		t.Fatalf("train regression: %+v", out.TrainEvent)
	}
	if out := record(t, s, "a/m", withTrain(result("cpu", "pass", at(3)), compat.StatusError)); out.TrainEvent != nil {
		t.Errorf("the scanner's error in the train step made an event: %+v", out.TrainEvent)
	}
	out = record(t, s, "a/m", withTrain(result("cpu", "pass", at(4)), compat.StatusPass))
	if ev := out.TrainEvent; ev == nil || ev.Kind != compat.EventTrainFix || ev.FromStatus != "fail" {
		t.Fatalf("train fix across an error: %+v", out.TrainEvent)
	}
	evs, err := s.ModelEvents(ctx, "a/m", 10)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind))
		if e.Kind == compat.EventTrainRegression && (e.Stage == nil || *e.Stage != "backward") {
			t.Errorf("the train regression's stage is not the train step's: %v", e.Stage)
		}
	}
	if got := mustJSON(t, kinds); got != `["train_fix","train_regression","new"]` {
		t.Errorf("events newest first: %s", got)
	}
}
