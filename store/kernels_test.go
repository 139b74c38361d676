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
// model counts, only those of the chosen table, and tpu results never.
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
		{Op: "aten::median", Models: 1, Downloads: 1000, Inference: store.OpNeed{Models: 1, Downloads: 1000},
			Train: store.OpNeed{Models: 1, Downloads: 1000}, ModelIDs: []string{"o/a"}},
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
