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
