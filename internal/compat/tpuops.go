package compat

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The kinds of an operator in a runtime's TorchTPU kernel table
// (internal/harness/harness_kernels.py reads them from torch_tpu's
// PrivateUse1 registrations; tpu_ops.json says what each means).
const (
	OpNative   = "native"   // torch_tpu's own kernel
	OpDefault  = "default"  // torch's default backend kernel: it decomposes on the TPU
	OpFallback = "fallback" // torch_tpu's backend fallback: "is not implemented for TPU"
)

// KernelTable is which operators one runtime's torch_tpu implements: read
// once per torch and torch_tpu versions, in a process of its own.
type KernelTable struct {
	Torch    string            `json:"torch"`
	TorchTPU string            `json:"torch_tpu"`
	Ops      map[string]string `json:"ops"` // operator name -> OpNative, OpDefault or OpFallback
	ReadAt   time.Time         `json:"read_at"`
}

// Name is the table's label: "torch_tpu 0.2.0 / torch 2.15.0".
func (k KernelTable) Name() string { return "torch_tpu " + k.TorchTPU + " / torch " + k.Torch }

// Count is how many of the table's operators are of kind.
func (k KernelTable) Count(kind string) int {
	n := 0
	for _, v := range k.Ops {
		if v == kind {
			n++
		}
	}
	return n
}

// Validate refuses a table without versions, without operators, or with a
// kind or a name it cannot hold.
func (k KernelTable) Validate() error {
	for _, v := range []struct{ field, s string }{{"torch", k.Torch}, {"torch_tpu", k.TorchTPU}} {
		if v.s == "" {
			return refuse(v.field, "empty")
		}
		if err := CheckLabel(v.field, v.s, MaxVersionBytes); err != nil {
			return err
		}
	}
	if len(k.Ops) == 0 {
		return refuse("ops", "empty")
	}
	for name, kind := range k.Ops {
		if name == "" || len(name) > MaxOpBytes {
			return refuse("ops", "an operator name of %d bytes", len(name))
		}
		if kind != OpNative && kind != OpDefault && kind != OpFallback {
			return refuse("ops."+name, "kind %q (want native, default or fallback)", kind)
		}
	}
	return nil
}

// Implements reports whether the table's TPU runs name (native or
// default); false for a fallback or an operator the table does not know.
func (k KernelTable) Implements(name string) bool {
	v := k.Ops[name]
	return v == OpNative || v == OpDefault
}

// KernelDiff is what a kernel table implements that an earlier one did not
// (Added), and the reverse (Dropped), each sorted.
type KernelDiff struct {
	Added   []string `json:"added"`
	Dropped []string `json:"dropped"`
}

// DiffKernels compares new with old: an operator is implemented when it is
// native or default.
func DiffKernels(old, new KernelTable) KernelDiff {
	d := KernelDiff{Added: []string{}, Dropped: []string{}}
	for name := range new.Ops {
		if new.Implements(name) && !old.Implements(name) {
			d.Added = append(d.Added, name)
		}
	}
	for name := range old.Ops {
		if old.Implements(name) && !new.Implements(name) {
			d.Dropped = append(d.Dropped, name)
		}
	}
	sort.Strings(d.Added)
	sort.Strings(d.Dropped)
	return d
}

// OpsTrace is what the harness traced of a probe's CPU run: the aten ops
// the forward, generate and the train step dispatched, renamed to the ops
// the TPU reaches (tpu_ops.json). The runner judges it against its host's
// kernel table (Result.TPUOps); the store keeps it (without the notes) and
// judges it again against the newest kernel table it keeps, at the
// result's arrival and at every new table's.
type OpsTrace struct {
	Forward  []string `json:"forward"`
	Generate []string `json:"generate,omitempty"`
	Train    []string `json:"train,omitempty"`
	// Notes say which part could not be traced.
	Notes []string `json:"notes,omitempty"`
}

// validate is Validate's part for the trace: each list at most
// MaxTracedOps names of MaxOpBytes.
func (t OpsTrace) validate() error {
	if err := validateOpLists(opList{"ops_traced.forward", t.Forward}, opList{"ops_traced.generate", t.Generate},
		opList{"ops_traced.train", t.Train}); err != nil {
		return err
	}
	if len(t.Notes) > 8 {
		return refuse("ops_traced.notes", "%d notes, over 8", len(t.Notes))
	}
	return nil
}

// TPUOps is a prediction, never a TPU result: the ops a probe's CPU run
// needs, judged against a runtime's TorchTPU kernel table. It covers
// registrations, not dtypes.
type TPUOps struct {
	Table  string `json:"table"` // KernelTable.Name
	Traced int    `json:"traced"`
	Native int    `json:"native"`
	// Default counts the ops the TPU runs through torch's default kernels.
	Default int `json:"default"`
	// Missing are the inference's (forward, generate) ops the table falls
	// back on; MissingTrain the train step's.
	Missing      []string `json:"missing"`
	MissingTrain []string `json:"missing_train"`
	// Unknown are traced ops the table does not name (another library's
	// namespace, loaded by the model only): not judged.
	Unknown []string `json:"unknown,omitempty"`
	// Evidence is the prediction's (EvidenceOfPrediction); never stored:
	// the web layer sets it as it serves the result.
	Evidence *Evidence `json:"evidence,omitempty"`
}

// MaxTracedOps caps the ops of a trace and of a prediction's lists.
const MaxTracedOps = 4096

// TorchTPUVersion is the torch_tpu version of the prediction's table.
func (t TPUOps) TorchTPUVersion() string {
	v, _, _ := strings.Cut(strings.TrimPrefix(t.Table, "torch_tpu "), " ")
	return v
}

// NotImplemented is every op the prediction says TorchTPU lacks, the
// inference's first, then those only the train step needs.
func (t TPUOps) NotImplemented() []string {
	out := append([]string{}, t.Missing...)
	for _, op := range t.MissingTrain {
		if !contains(t.Missing, op) {
			out = append(out, op)
		}
	}
	return out
}

// Summary is the prediction in one line, as the table, the model page, the
// API and the badge say it: "TorchTPU 0.2.0: all 40 ops implemented", or
// "TorchTPU 0.2.0: 2 ops not implemented (aten::x, aten::y)"; an op only
// the train step needs is marked "(train)". At most three are named.
func (t TPUOps) Summary() string {
	head := "TorchTPU " + t.TorchTPUVersion() + ": "
	missing := t.NotImplemented()
	if len(missing) == 0 {
		return head + fmt.Sprintf("all %d ops implemented", t.Traced)
	}
	names := make([]string, 0, 3)
	for _, op := range missing[:min(3, len(missing))] {
		if !contains(t.Missing, op) {
			op += " (train)"
		}
		names = append(names, op)
	}
	list := strings.Join(names, ", ")
	if len(missing) > 3 {
		list += fmt.Sprintf(", and %d more", len(missing)-3)
	}
	word := "ops"
	if len(missing) == 1 {
		word = "op"
	}
	return head + fmt.Sprintf("%d %s not implemented (%s)", len(missing), word, list)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// validate is Validate's part for the prediction.
func (t TPUOps) validate() error {
	if err := CheckLabel("tpu_ops.table", t.Table, 2*MaxVersionBytes+32); err != nil {
		return err
	}
	for _, c := range []struct {
		field string
		n     int
	}{{"tpu_ops.traced", t.Traced}, {"tpu_ops.native", t.Native}, {"tpu_ops.default", t.Default}} {
		if c.n < 0 || c.n > MaxTracedOps {
			return refuse(c.field, "%d out of 0..%d", c.n, MaxTracedOps)
		}
	}
	return validateOpLists(opList{"tpu_ops.missing", t.Missing}, opList{"tpu_ops.missing_train", t.MissingTrain},
		opList{"tpu_ops.unknown", t.Unknown})
}

// opList is a field's list of op names.
type opList struct {
	field string
	ops   []string
}

// validateOpLists refuses a list of more than MaxTracedOps names, or a name
// that is not a label of at most MaxOpBytes.
func validateOpLists(lists ...opList) error {
	for _, l := range lists {
		if len(l.ops) > MaxTracedOps {
			return refuse(l.field, "%d entries, over %d", len(l.ops), MaxTracedOps)
		}
		for i, op := range l.ops {
			if err := CheckLabel(fmt.Sprintf("%s[%d]", l.field, i), op, MaxOpBytes); err != nil {
				return err
			}
		}
	}
	return nil
}

// Agrees is the one rule for whether the prediction held, against a tpu
// result of the same model: counted is false when the tpu result says
// nothing a prediction of operators could (no verdict, or a failure that
// is not a missing op: numerics, memory, compile); agreed is true for a
// pass predicted with no missing inference op, and for a failure on a
// missing op that the prediction listed for the inference.
func (t TPUOps) Agrees(tpu Result) (counted, agreed bool) {
	switch {
	case tpu.Target != TargetTPU:
		return false, false
	case tpu.Status == StatusPass:
		return true, len(t.Missing) == 0
	case tpu.Status == StatusFail && tpu.FailureClass != nil && *tpu.FailureClass == ClassUnsupportedOp && tpu.Op != nil:
		return true, contains(t.Missing, *tpu.Op)
	}
	return false, false
}
