package compat

import (
	"errors"
	"strings"
	"testing"
)

func prediction() *TPUOps {
	return &TPUOps{Table: "torch_tpu 0.2.0 / torch 2.15.0", Traced: 40, Native: 38, Default: 1,
		Missing: []string{"aten::median"}, MissingTrain: []string{}}
}

// TestValidateTPUOps: a prediction rides on a result that did not run on a
// TPU only, with sane counts and op names.
func TestValidateTPUOps(t *testing.T) {
	cpu := good()
	cpu.Target, cpu.Runtime.TorchTPU, cpu.Runtime.Device = TargetCPU, "", "cpu"
	cpu.Metrics.Efficiency = nil
	cpu.Metrics.MFU, cpu.Metrics.MBU = nil, nil
	cpu.TPUOps = prediction()
	if err := cpu.Validate(); err != nil {
		t.Fatalf("a cpu result with a prediction: %v", err)
	}
	for name, tc := range map[string]struct {
		mod   func(r *Result)
		field string
	}{
		"on a tpu result":   {func(r *Result) { r.Target = TargetTPU }, "tpu_ops"},
		"negative count":    {func(r *Result) { r.TPUOps.Native = -1 }, "tpu_ops.native"},
		"control character": {func(r *Result) { r.TPUOps.Missing = []string{"aten::x\x1b[31m"} }, "tpu_ops.missing[0]"},
		"table too long":    {func(r *Result) { r.TPUOps.Table = strings.Repeat("x", 300) }, "tpu_ops.table"},
	} {
		r := cpu
		r.TPUOps = prediction()
		tc.mod(&r)
		err := r.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want a refusal of %s", name, err, tc.field)
		}
	}
}

// TestValidateOpsTrace: a trace (which a worker sends and the store keeps)
// rides on a result off tpu only, with printable op names.
func TestValidateOpsTrace(t *testing.T) {
	cpu := good()
	cpu.Target, cpu.Runtime.TorchTPU, cpu.Runtime.Device = TargetCPU, "", "cpu"
	cpu.Metrics.Efficiency = nil
	cpu.Metrics.MFU, cpu.Metrics.MBU = nil, nil
	cpu.OpsTraced = &OpsTrace{Forward: []string{"aten::mm"}, Train: []string{"aten::_foreach_add_.Scalar"}}
	if err := cpu.Validate(); err != nil {
		t.Fatalf("a cpu result with a trace: %v", err)
	}
	for name, tc := range map[string]struct {
		mod   func(r *Result)
		field string
	}{
		"on a tpu result":   {func(r *Result) { r.Target = TargetTPU }, "ops_traced"},
		"control character": {func(r *Result) { r.OpsTraced.Train = []string{"aten::x\x1b[31m"} }, "ops_traced.train[0]"},
		"too long":          {func(r *Result) { r.OpsTraced.Generate = []string{strings.Repeat("x", MaxOpBytes+1)} }, "ops_traced.generate[0]"},
	} {
		r := cpu
		r.OpsTraced = &OpsTrace{Forward: []string{"aten::mm"}}
		tc.mod(&r)
		err := r.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want a refusal of %s", name, err, tc.field)
		}
	}
}

func TestTPUOpsSummary(t *testing.T) {
	p := prediction()
	if got := p.Summary(); got != "TorchTPU 0.2.0: 1 op not implemented (aten::median)" {
		t.Errorf("%q", got)
	}
	p.Missing = nil
	if got := p.Summary(); got != "TorchTPU 0.2.0: all 40 ops implemented" {
		t.Errorf("%q", got)
	}
	p.Missing = []string{"aten::a", "aten::b"}
	p.MissingTrain = []string{"aten::b", "aten::c", "aten::d"}
	if got := p.Summary(); got != "TorchTPU 0.2.0: 4 ops not implemented (aten::a, aten::b, aten::c (train), and 1 more)" {
		t.Errorf("%q", got)
	}
}

func TestDiffKernels(t *testing.T) {
	old := KernelTable{Ops: map[string]string{"a": OpNative, "b": OpFallback, "c": OpDefault, "d": OpNative}}
	new := KernelTable{Ops: map[string]string{"a": OpNative, "b": OpNative, "c": OpFallback, "e": OpDefault}}
	d := DiffKernels(old, new)
	if strings.Join(d.Added, ",") != "b,e" || strings.Join(d.Dropped, ",") != "c,d" {
		t.Errorf("%+v", d)
	}
}

func TestTPUOpsAgrees(t *testing.T) {
	p := prediction() // missing aten::median
	clean := prediction()
	clean.Missing = nil
	onTPU := func(s Status, class FailureClass, op string) Result {
		r := Result{Target: TargetTPU, Status: s}
		if class != "" {
			r.FailureClass = &class
		}
		if op != "" {
			r.Op = &op
		}
		return r
	}
	for name, tc := range map[string]struct {
		p               *TPUOps
		r               Result
		counted, agreed bool
	}{
		"pass, none missing":      {clean, onTPU(StatusPass, "", ""), true, true},
		"pass, one missing":       {p, onTPU(StatusPass, "", ""), true, false},
		"fails on the missing op": {p, onTPU(StatusFail, ClassUnsupportedOp, "aten::median"), true, true},
		"fails on another op":     {p, onTPU(StatusFail, ClassUnsupportedOp, "aten::mode"), true, false},
		"fails on numerics":       {p, onTPU(StatusFail, ClassNumericsMismatch, ""), false, false},
		"out of memory":           {clean, onTPU(StatusOOM, ClassOOM, ""), false, false},
		"a cpu result":            {clean, Result{Target: TargetCPU, Status: StatusPass}, false, false},
		"error, no verdict":       {clean, onTPU(StatusError, ClassDeviceUnavail, ""), false, false},
	} {
		c, a := tc.p.Agrees(tc.r)
		if c != tc.counted || a != tc.agreed {
			t.Errorf("%s: counted %v agreed %v, want %v %v", name, c, a, tc.counted, tc.agreed)
		}
	}
}
