package data

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/internal/httpx"
)

// missingOpsRead is one cached read of Store.MissingOps. Read only.
type missingOpsRead struct {
	ops   []store.MissingOp
	table string
}

// MissingOps is Store.MissingOps through the cache (it reads every
// current prediction): until the data changes.
func (r *Reader) MissingOps(ctx context.Context, table string) ([]store.MissingOp, string, error) {
	changed, err := r.Changed(ctx)
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

// maxOpsParam is the most characters ?table= and ?op= may have (the
// OpenAPI document's maxLength).
const maxOpsParam = 200

// FixList reads the fix list against table (?table=; "" the newest kept),
// of op alone when op is given (?op=); either over maxOpsParam characters
// is a bad request.
func (r *Reader) FixList(ctx context.Context, table, op string) ([]store.MissingOp, string, error) {
	for _, p := range [][2]string{{"table", table}, {"op", op}} {
		if n := utf8.RuneCountInString(p[1]); n > maxOpsParam {
			return nil, "", fmt.Errorf("%w: %s of %d characters (at most %d)", httpx.ErrBadRequest, p[0], n, maxOpsParam)
		}
	}
	ops, table, err := r.MissingOps(ctx, table)
	if err != nil {
		return nil, "", fmt.Errorf("web: ops: %w", err)
	}
	if op != "" {
		keep := []store.MissingOp{}
		for _, o := range ops {
			if o.Op == op {
				keep = append(keep, o)
			}
		}
		ops = keep
	}
	return ops, table, nil
}
