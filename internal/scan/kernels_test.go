package scan

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// kernelProber is a fakeProber whose runtime has a TorchTPU kernel table.
type kernelProber struct {
	*fakeProber
	table compat.KernelTable
	err   error
	asked int
}

func (p *kernelProber) KernelTable(ctx context.Context) (compat.KernelTable, error) {
	p.asked++
	return p.table, p.err
}

// TestScanKeepsTheKernelTable: a scan keeps its host's kernel table with
// the runtime, once per versions; a host without one keeps none.
func TestScanKeepsTheKernelTable(t *testing.T) {
	f := newFixture(t)
	kt := compat.KernelTable{Torch: "2.15.0", TorchTPU: "0.2.0", ReadAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Ops: map[string]string{"aten::addmm": compat.OpNative, "aten::median": compat.OpFallback}}
	kp := &kernelProber{fakeProber: f.prober, table: kt}
	f.s.Prober = kp
	ctx := context.Background()
	for range 2 { // two scans: the table is kept once
		if _, err := f.s.Run(ctx, Options{Mode: compat.ModeArch}, Hooks{}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := f.store.KernelTables(ctx)
	if err != nil || len(got) != 1 || got[0].Name() != kt.Name() || got[0].Count(compat.OpFallback) != 1 {
		t.Fatalf("kept %+v, %v", got, err)
	}
	none := newFixture(t)
	none.s.Prober = &kernelProber{fakeProber: none.prober, err: errors.New("torch_tpu not installed")}
	if _, err := none.s.Run(ctx, Options{Mode: compat.ModeArch}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := none.store.KernelTables(ctx); len(got) != 0 {
		t.Errorf("a host without a table kept %+v", got)
	}
}

// versionedProber is a kernelProber that names its table's versions
// without reading it, and takes a kept table instead (as *probe.Runner).
type versionedProber struct {
	*kernelProber
	used []compat.KernelTable
}

func (p *versionedProber) KernelVersions(ctx context.Context) (string, string, error) {
	if p.err != nil {
		return "", "", p.err
	}
	return p.table.Torch, p.table.TorchTPU, nil
}

func (p *versionedProber) UseKernelTable(kt compat.KernelTable) { p.used = append(p.used, kt) }

// TestKernelTableReadOncePerRuntime: a runner whose versions the database
// keeps a table of takes that one and never reads its own (a new process,
// a new runner: still no read); a runner of new versions reads and keeps.
func TestKernelTableReadOncePerRuntime(t *testing.T) {
	f := newFixture(t)
	kt := compat.KernelTable{Torch: "2.15.0+cu132", TorchTPU: "0.2.0", ReadAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Ops: map[string]string{"aten::addmm": compat.OpNative, "aten::median": compat.OpFallback}}
	ctx := context.Background()
	scan := func(table compat.KernelTable) *versionedProber {
		t.Helper()
		p := &versionedProber{kernelProber: &kernelProber{fakeProber: f.prober, table: table}}
		f.s.Prober = p
		if _, err := f.s.Run(ctx, Options{Mode: compat.ModeArch}, Hooks{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if first := scan(kt); first.asked != 1 || len(first.used) != 0 {
		t.Fatalf("the first runner of a runtime: read %d times, handed %d", first.asked, len(first.used))
	}
	second := scan(kt)
	if second.asked != 0 || len(second.used) != 1 || second.used[0].Name() != kt.Name() || len(second.used[0].Ops) != 2 {
		t.Errorf("a second runner of the same runtime: read %d times, handed %+v", second.asked, second.used)
	}
	next := kt
	next.TorchTPU = "0.3.0"
	if third := scan(next); third.asked != 1 || len(third.used) != 0 {
		t.Errorf("a runner of new versions: read %d times, handed %d", third.asked, len(third.used))
	}
	if got, _ := f.store.KernelTables(ctx); len(got) != 2 {
		t.Errorf("kept %d tables, want 2", len(got))
	}
}
