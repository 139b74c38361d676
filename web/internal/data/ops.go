package data

import (
	"context"

	"github.com/google-pytorch/torchtpu-scanner/store"
)

// missingOpsRead is one cached read of Store.MissingOps. Read only.
type missingOpsRead struct {
	ops   []store.MissingOp
	table string
}

// MissingOps is Store.MissingOps through the cache (it reads every
// current prediction): until the data changes.
func (r *Reader) MissingOps(ctx context.Context, table string) ([]store.MissingOp, string, error) {
	changed, err := r.Store.Changed(ctx)
	if err != nil {
		return nil, "", err
	}
	v, err := r.Caches.OpsLists.Do(table, changed, func() (missingOpsRead, int, error) {
		ops, used, err := r.Store.MissingOps(ctx, table)
		size := len(table) + len(used)
		for _, o := range ops {
			size += 96 + len(o.Op)
			for _, id := range o.ModelIDs {
				size += 16 + len(id)
			}
		}
		return missingOpsRead{ops, used}, size, err
	})
	return v.ops, v.table, err
}
