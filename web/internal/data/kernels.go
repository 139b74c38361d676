package data

import (
	"context"
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
	// Unblocks are the models that lack an op (inference or train) by their
	// predictions judged against the previous table and none judged against
	// this one, in the previous fix list's order: predicted to run on it (of
	// registrations only). Each kept trace is judged against both tables;
	// a prediction stored without one (before migration 0018) by the ops
	// it listed.
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
		before, _, err := r.MissingOps(ctx, rows[i].Previous)
		if err != nil {
			return nil, err
		}
		after, _, err := r.MissingOps(ctx, rows[i].Table)
		if err != nil {
			return nil, err
		}
		rows[i].Unblocks = unblocked(before, after)
	}
	return rows, nil
}

// unblocked are the models of the fix list before that the fix list after
// does not name, in before's order (its ops by downloads blocked, each
// op's models most downloaded first).
func unblocked(before, after []store.MissingOp) []string {
	still := map[string]bool{}
	for _, o := range after {
		for _, id := range o.ModelIDs {
			still[id] = true
		}
	}
	out := []string{}
	for _, o := range before {
		for _, id := range o.ModelIDs {
			if !still[id] {
				still[id] = true // listed once
				out = append(out, id)
			}
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
