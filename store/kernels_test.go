package store_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

func kernelTable(tpu string, at time.Time, ops map[string]string) compat.KernelTable {
	return compat.KernelTable{Torch: "2.15.0", TorchTPU: tpu, Ops: ops, ReadAt: at}
}

// TestKernelTables: a table is kept once per versions, read back oldest
// first, and its write moves Changed; an invalid one is refused.
func TestKernelTables(t *testing.T) {
	s := storetest.MustOpen(t)
	before, err := s.Changed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := kernelTable("0.1.0", at(0), map[string]string{"aten::a": compat.OpNative, "aten::b": compat.OpFallback})
	new := kernelTable("0.2.0", at(5), map[string]string{"aten::a": compat.OpNative, "aten::b": compat.OpDefault})
	for _, kt := range []compat.KernelTable{new, old} {
		if stored, err := s.PutKernelTable(ctx, kt); err != nil || !stored {
			t.Fatalf("put %s: %v %v", kt.Name(), stored, err)
		}
	}
	again := new
	again.ReadAt = at(9)
	if stored, err := s.PutKernelTable(ctx, again); err != nil || stored {
		t.Errorf("put again: %v %v", stored, err)
	}
	if _, err := s.PutKernelTable(ctx, kernelTable("", at(1), map[string]string{"aten::a": "maybe"})); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("an invalid table: %v", err)
	}
	got, err := s.KernelTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !reflect.DeepEqual(got[0], old) || !reflect.DeepEqual(got[1], new) {
		t.Errorf("tables %+v", got)
	}
	after, _ := s.Changed(ctx)
	if !after.After(before) {
		t.Errorf("Changed did not move: %v -> %v", before, after)
	}
}

func predicted(minute int, table string, missing, train []string) compat.Result {
	r := result("cpu", "pass", at(minute))
	r.TPUOps = &compat.TPUOps{Table: table, Traced: 30, Native: 29, Missing: missing, MissingTrain: train}
	return r
}

// TestMissingOps: the fix list sums each op's models' downloads, inference
// and train apart, most downloads first; only the newest prediction of a
// model counts, and tpu results never. Predictions stored without a trace
// are carried to a kept table by what they listed (d's median, judged
// against 0.1.0, which 0.2.0 lacks too); a table not kept lists only the
// predictions that name it.
func TestMissingOps(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "o/a", "o/b", "o/c", "o/d", "o/e") // downloads 1000, 900, 800, 700, 600
	const tb = "torch_tpu 0.2.0 / torch 2.15.0"
	record(t, s, "o/a", predicted(0, tb, []string{"aten::median"}, []string{"aten::median", "aten::_aminmax"}))
	record(t, s, "o/b", predicted(0, tb, nil, []string{"aten::_aminmax"}))
	record(t, s, "o/c", predicted(0, tb, []string{"aten::x"}, nil))
	record(t, s, "o/c", predicted(1, tb, []string{"aten::nanmedian"}, nil)) // c's newest
	record(t, s, "o/d", predicted(0, "torch_tpu 0.1.0 / torch 2.15.0", []string{"aten::median"}, nil))
	tpuRes := result("tpu", "fail", at(2))
	tpuRes.Stage = compat.Ptr(compat.StageForward)
	record(t, s, "o/e", tpuRes)

	if _, err := s.PutKernelTable(ctx, kernelTable("0.2.0", at(0), map[string]string{"aten::a": compat.OpNative})); err != nil {
		t.Fatal(err)
	}
	ops, table, err := s.MissingOps(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.MissingOp{
		{Op: "aten::_aminmax", Models: 2, Downloads: 1900, Train: store.OpNeed{Models: 2, Downloads: 1900},
			ModelIDs: []string{"o/a", "o/b"}},
		{Op: "aten::median", Models: 2, Downloads: 1700, Inference: store.OpNeed{Models: 2, Downloads: 1700},
			Train: store.OpNeed{Models: 1, Downloads: 1000}, ModelIDs: []string{"o/a", "o/d"}},
		{Op: "aten::nanmedian", Models: 1, Downloads: 800, Inference: store.OpNeed{Models: 1, Downloads: 800},
			ModelIDs: []string{"o/c"}},
	}
	if table != tb || !reflect.DeepEqual(ops, want) {
		t.Errorf("table %q\n got %+v\nwant %+v", table, ops, want)
	}
	old, _, err := s.MissingOps(ctx, "torch_tpu 0.1.0 / torch 2.15.0")
	if err != nil || len(old) != 1 || old[0].Op != "aten::median" || old[0].ModelIDs[0] != "o/d" {
		t.Errorf("the old table's list: %+v %v", old, err)
	}
}

// TestPredictionRoundTrip: a result's prediction is stored and read back.
func TestPredictionRoundTrip(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "o/a")
	r := predicted(0, "torch_tpu 0.2.0 / torch 2.15.0", []string{"aten::median"}, []string{})
	record(t, s, "o/a", r)
	got, err := s.LatestResult(ctx, "o/a", "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.TPUOps, r.TPUOps) {
		t.Errorf("read back %+v, want %+v", got.TPUOps, r.TPUOps)
	}
}

// TestPredictionHits: each model's newest prediction against its tpu
// result; failures a prediction cannot speak of are not counted.
func TestPredictionHits(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "o/a", "o/b", "o/c", "o/d", "o/e")
	const tb = "torch_tpu 0.2.0 / torch 2.15.0"
	onTPU := func(status compat.Status, op string) compat.Result {
		r := result("tpu", status, at(5))
		if status != compat.StatusPass {
			r.Stage = compat.Ptr(compat.StageForward)
		}
		if op != "" {
			r.FailureClass, r.Op = compat.Ptr(compat.ClassUnsupportedOp), compat.Ptr(op)
		} else if status == compat.StatusFail {
			r.FailureClass = compat.Ptr(compat.ClassNumericsMismatch)
		}
		return r
	}
	record(t, s, "o/a", predicted(0, tb, []string{"aten::median"}, nil)) // fails on median: predicted
	record(t, s, "o/a", onTPU(compat.StatusFail, "aten::median"))
	record(t, s, "o/b", predicted(0, tb, []string{"aten::x"}, nil)) // older: replaced by the one below
	record(t, s, "o/b", predicted(1, tb, nil, nil))                 // passes: agreed
	record(t, s, "o/b", onTPU(compat.StatusPass, ""))
	record(t, s, "o/c", predicted(0, tb, nil, nil)) // fails on an op it did not list
	record(t, s, "o/c", onTPU(compat.StatusFail, "aten::mode"))
	record(t, s, "o/d", predicted(0, tb, nil, nil)) // numerics: not counted
	record(t, s, "o/d", onTPU(compat.StatusFail, ""))
	record(t, s, "o/e", onTPU(compat.StatusPass, "")) // no prediction
	got, err := s.PredictionHits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.PredictionScore{Compared: 3, Agreed: 2, OpFailures: 2, Predicted: 1}); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
}

// traced is a cpu result whose run traced ops, with no prediction of the
// runner's (the store judges it).
func traced(minute int, forward, train []string) compat.Result {
	r := result("cpu", "pass", at(minute))
	r.OpsTraced = &compat.OpsTrace{Forward: forward, Train: train, Notes: []string{"generate not traced: x"}}
	return r
}

// TestNewKernelTableMovesPredictions (issue 36, point 4): the store keeps
// each result's trace and judges it against the newest kept kernel table,
// at the result's arrival and at a newer table's: a new table that adds an
// op moves the models that needed it (their tpu_ops, the fix list, the
// predicted tally), while the fix list of the older table stays as it was.
func TestNewKernelTableMovesPredictions(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "o/a", "o/b", "o/c") // downloads 1000, 900, 800
	ops := map[string]string{"aten::mm": compat.OpNative, "aten::median": compat.OpFallback,
		"aten::_aminmax": compat.OpFallback, "aten::sum": compat.OpDefault}
	v2 := kernelTable("0.2.0", at(0), ops)
	if _, err := s.PutKernelTable(ctx, v2); err != nil {
		t.Fatal(err)
	}
	record(t, s, "o/a", traced(1, []string{"aten::mm", "aten::median"}, []string{"aten::mm", "aten::median"}))
	record(t, s, "o/b", traced(1, []string{"aten::mm", "aten::sum"}, []string{"aten::_aminmax"}))
	// c's runner judged against its own host's table; the store's newest
	// (0.2.0) judges again
	c := traced(1, []string{"aten::median", "aten::mm"}, nil)
	c.TPUOps = &compat.TPUOps{Table: "torch_tpu 0.1.0 / torch 2.15.0", Traced: 2, Missing: []string{"aten::mm", "aten::median"}, MissingTrain: []string{}}
	record(t, s, "o/c", c)
	got, err := s.LatestResult(ctx, "o/c", "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if p := got.TPUOps; p == nil || p.Table != v2.Name() || !reflect.DeepEqual(p.Missing, []string{"aten::median"}) || p.Traced != 2 || got.OpsTraced != nil {
		t.Fatalf("c judged at arrival: %+v (trace read back %+v)", p, got.OpsTraced)
	}
	check := func(label string, wantOps map[string][]string, wantTally store.Predicted) {
		t.Helper()
		list, table, err := s.MissingOps(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		gotOps := map[string][]string{}
		for _, o := range list {
			gotOps[o.Op] = o.ModelIDs
		}
		if table != wantTally.Table || !reflect.DeepEqual(gotOps, wantOps) {
			t.Errorf("%s: fix list of %q: %v, want %v", label, table, gotOps, wantOps)
		}
		tally, err := s.PredictedTally(ctx)
		if err != nil || tally != wantTally {
			t.Errorf("%s: tally %+v %v, want %+v", label, tally, err, wantTally)
		}
	}
	check("0.2.0", map[string][]string{"aten::median": {"o/a", "o/c"}, "aten::_aminmax": {"o/b"}},
		store.Predicted{Table: v2.Name(), Models: 3, Covered: 1, Downloads: 2700, CoveredDownloads: 900})

	// 0.3.0 implements median: a and c move, b (which needs _aminmax) not
	ops3 := map[string]string{"aten::mm": compat.OpNative, "aten::median": compat.OpNative,
		"aten::_aminmax": compat.OpFallback, "aten::sum": compat.OpDefault}
	v3 := kernelTable("0.3.0", at(10), ops3)
	if stored, err := s.PutKernelTable(ctx, v3); err != nil || !stored {
		t.Fatal(stored, err)
	}
	for id, missing := range map[string][]string{"o/a": {}, "o/c": {}} {
		got, err := s.LatestResult(ctx, id, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		if p := got.TPUOps; p == nil || p.Table != v3.Name() || !reflect.DeepEqual(p.Missing, missing) || len(p.MissingTrain) != 0 {
			t.Errorf("%s after 0.3.0: %+v", id, got.TPUOps)
		}
	}
	check("0.3.0", map[string][]string{"aten::_aminmax": {"o/b"}},
		store.Predicted{Table: v3.Name(), Models: 3, Covered: 3, Downloads: 2700, CoveredDownloads: 2700})
	old, table, err := s.MissingOps(ctx, v2.Name())
	if err != nil || table != v2.Name() || len(old) != 2 || old[0].Op != "aten::median" || !reflect.DeepEqual(old[0].ModelIDs, []string{"o/a", "o/c"}) {
		t.Errorf("0.2.0's fix list, asked for: %q %+v %v", table, old, err)
	}
	// a result arriving now is judged against 0.3.0 too
	upsert(t, s, "o/d")
	record(t, s, "o/d", traced(2, []string{"aten::median"}, nil))
	if got, err := s.LatestResult(ctx, "o/d", "cpu"); err != nil || got.TPUOps == nil || got.TPUOps.Table != v3.Name() || len(got.TPUOps.Missing) != 0 {
		t.Errorf("d: %+v %v", got, err)
	}
}

// TestTraceRefusedOnTPU: a tpu result carries no trace (it is measured).
func TestTraceRefusedOnTPU(t *testing.T) {
	s := storetest.MustOpen(t)
	upsert(t, s, "o/a")
	r := result("tpu", "pass", at(0))
	r.OpsTraced = &compat.OpsTrace{Forward: []string{"aten::mm"}}
	if _, err := s.RecordResult(ctx, "o/a", r); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a tpu result with a trace: %v", err)
	}
}
