package data

import (
	"context"
	"slices"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// KernelTable is one kept kernel table on /runtimes and in
// /api/v1/runtimes: its counts, and what it implements that the table read
// before it did not (Added) and the reverse (Dropped); both empty for the
// first.
type KernelTable struct {
	Table    string    `json:"table"`
	Torch    string    `json:"torch"`
	TorchTPU string    `json:"torch_tpu"`
	ReadAt   time.Time `json:"read_at"`
	Native   int       `json:"native"`
	Default  int       `json:"default"`
	Fallback int       `json:"fallback"`
	// Previous is the table compared with ("" for the first).
	Previous string   `json:"previous"`
	Added    []string `json:"added"`
	Dropped  []string `json:"dropped"`
	// Unblocks are the models whose every missing op (inference and train)
	// by their predictions against the previous table this one implements,
	// most downloaded first: predicted to run on it (a prediction judged
	// before it, of registrations only).
	Unblocks []string `json:"unblocks"`
}

// KernelTables are the kept kernel tables, newest first, each against the
// one read before it, with the models it unblocks.
func (r *Reader) KernelTables(ctx context.Context) ([]KernelTable, error) {
	kts, err := r.Store.KernelTables(ctx)
	if err != nil {
		return nil, err
	}
	rows := kernelRows(kts)
	for i := range rows {
		if rows[i].Previous == "" || len(rows[i].Added) == 0 {
			continue
		}
		ops, _, err := r.MissingOps(ctx, rows[i].Previous)
		if err != nil {
			return nil, err
		}
		rows[i].Unblocks = unblocked(ops, rows[i].Added)
	}
	return rows, nil
}

// unblocked are the models of a fix list whose every missing op is among
// added, most downloaded first (the list's order: a model's downloads are
// the same in every row it is in).
func unblocked(ops []store.MissingOp, added []string) []string {
	blocked := map[string]bool{}
	order := []string{}
	for _, o := range ops {
		fixed := slices.Contains(added, o.Op)
		for _, id := range o.ModelIDs {
			if _, seen := blocked[id]; !seen {
				order = append(order, id)
				blocked[id] = false
			}
			if !fixed {
				blocked[id] = true
			}
		}
	}
	out := []string{}
	for _, id := range order {
		if !blocked[id] {
			out = append(out, id)
		}
	}
	return out
}

// kernelRows are the kept kernel tables, newest first, each against the one
// read before it.
func kernelRows(oldestFirst []compat.KernelTable) []KernelTable {
	out := make([]KernelTable, 0, len(oldestFirst))
	for i := len(oldestFirst) - 1; i >= 0; i-- {
		kt := oldestFirst[i]
		row := KernelTable{Table: kt.Name(), Torch: kt.Torch, TorchTPU: kt.TorchTPU, ReadAt: kt.ReadAt,
			Native: kt.Count(compat.OpNative), Default: kt.Count(compat.OpDefault), Fallback: kt.Count(compat.OpFallback),
			Added: []string{}, Dropped: []string{}, Unblocks: []string{}}
		if i > 0 {
			d := compat.DiffKernels(oldestFirst[i-1], kt)
			row.Previous, row.Added, row.Dropped = oldestFirst[i-1].Name(), d.Added, d.Dropped
		}
		out = append(out, row)
	}
	return out
}
