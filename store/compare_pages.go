package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// ComparePages is Compare of each query (the same pages, in order), read
// in one transaction: the feed's first pages of ten comparisons. The first
// pages of the kept comparisons' long lists are read in one walk of the
// models most downloaded first for all of them, each model's status on
// every runtime read from one range of an index and classified as the
// kept rows are (compare.Classify), rather than one walk per list, which
// reads a row of compare_items per model walked: on a cache miss (the
// first read after a write) the pages those rows are on are read anew.
func (s *SQLite) ComparePages(ctx context.Context, qs []CompareQuery) ([]ComparePage, error) {
	pages, _, err := s.comparePages(ctx, qs)
	return pages, err
}

// comparePages is ComparePages, with the lists it read in the one walk.
func (s *SQLite) comparePages(ctx context.Context, qs []CompareQuery) ([]ComparePage, *sharedWalk, error) {
	curs := make([]*compareCursor, len(qs))
	for i, q := range qs {
		for _, r := range []compat.RuntimeRef{q.Base, q.Head} {
			if err := validTarget(r.Target, false); err != nil {
				return nil, nil, fmt.Errorf("store: compare: %w", err)
			}
		}
		if q.Base == q.Head {
			return nil, nil, fmt.Errorf("store: compare: %w: base and head are the same runtime", ErrInvalid)
		}
		if q.Cursor != "" {
			c, err := parseCompareCursor(q.Cursor)
			if err != nil {
				return nil, nil, fmt.Errorf("store: compare: %w", err)
			}
			curs[i] = &c
		}
	}
	tx, err := s.r.BeginTx(ctx, nil) // one snapshot
	if err != nil {
		return nil, nil, fmt.Errorf("store: compare: %w", err)
	}
	defer tx.Rollback()
	shared := &sharedWalk{}
	pages := make([]ComparePage, len(qs))
	for i, q := range qs {
		shared.page = i
		if pages[i], err = comparePage(ctx, tx, q, clampLimit(q.Limit, 100), curs[i], shared); err != nil {
			return nil, nil, fmt.Errorf("store: compare: %w", err)
		}
	}
	if err := shared.run(ctx, tx, pages); err != nil {
		return nil, nil, fmt.Errorf("store: compare: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, nil, fmt.Errorf("store: compare: %w", err)
	}
	return pages, shared, nil
}

// sharedWalk is the first pages of lists of several comparisons, read in
// one walk (ComparePages).
type sharedWalk struct {
	page  int // the page comparePage reads now
	wants []walkWant
}

// walkWant is one list the walk fills: up to want models of kind.
type walkWant struct {
	page        int
	q           CompareQuery
	ids         [2]int64
	kind        compare.Kind
	want, limit int
	found       []walkFound
}

// walkFound is a model of a list, with its statuses on base and head.
type walkFound struct {
	id         string
	downloads  int64
	base, head compat.Status
}

func (w *sharedWalk) add(q CompareQuery, ids [2]int64, kind compare.Kind, total, limit int) {
	w.wants = append(w.wants, walkWant{page: w.page, q: q, ids: ids, kind: kind, want: min(total, limit+1), limit: limit})
}

// run walks the models most downloaded first until every list holds its
// want, then reads the signatures and failure classes of those it holds
// and puts each list's page into pages.
func (w *sharedWalk) run(ctx context.Context, tx *sql.Tx, pages []ComparePage) error {
	if len(w.wants) == 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, sqlWalkStatuses)
	if err != nil {
		return err
	}
	open := len(w.wants)
	statuses := map[int64]compat.Status{}
	for open > 0 && rows.Next() {
		var (
			id        string
			downloads int64
			all       string
		)
		if err := rows.Scan(&id, &downloads, &all); err != nil {
			rows.Close()
			return err
		}
		if all == "" {
			continue // no result on any runtime
		}
		clear(statuses)
		f := strings.Fields(all)
		for i := 0; i+1 < len(f); i += 2 {
			rt, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				rows.Close()
				return fmt.Errorf("runtime statuses of %s: %w", id, err)
			}
			statuses[rt] = compat.Status(f[i+1])
		}
		for i := range w.wants {
			x := &w.wants[i]
			if len(x.found) == x.want {
				continue
			}
			b, h := statuses[x.ids[0]], statuses[x.ids[1]]
			if compare.Classify(b, h) != x.kind {
				continue
			}
			x.found = append(x.found, walkFound{id: id, downloads: downloads, base: b, head: h})
			if len(x.found) == x.want {
				open--
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	keys, err := w.failKeys(ctx, tx)
	if err != nil {
		return err
	}
	for _, x := range w.wants {
		items := make([]compare.Item, 0, len(x.found))
		for _, f := range x.found {
			base := compare.Entry{Status: f.base, Signature: keys[runtimeModel{x.ids[0], f.id}]}
			head := compare.Entry{Status: f.head, Signature: keys[runtimeModel{x.ids[1], f.id}]}
			items = append(items, compare.ItemOf(f.id, f.downloads, base, head))
		}
		setList(&pages[x.page], x.q, x.kind, items[:min(len(items), x.limit)], len(items) > x.limit)
	}
	return nil
}

type runtimeModel struct {
	runtime int64
	model   string
}

// failKeys are the root causes (shown.failKey) of the found models'
// results held against them, by runtime and model: one query per runtime.
func (w *sharedWalk) failKeys(ctx context.Context, tx *sql.Tx) (map[runtimeModel]string, error) {
	byRuntime := map[int64][]any{}
	seen := map[runtimeModel]bool{}
	for _, x := range w.wants {
		for _, f := range x.found {
			for i, st := range []compat.Status{f.base, f.head} {
				k := runtimeModel{x.ids[i], f.id}
				if st.HeldAgainstModel() && !seen[k] {
					seen[k] = true
					byRuntime[k.runtime] = append(byRuntime[k.runtime], f.id)
				}
			}
		}
	}
	out := map[runtimeModel]string{}
	for rt, ids := range byRuntime {
		query := strings.Replace(sqlRuntimeFailKeys, "%s", strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", "), 1)
		rows, err := tx.QueryContext(ctx, query, append([]any{rt}, ids...)...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var (
				id                 string
				status, sig, class sql.NullString
			)
			if err := rows.Scan(&id, &status, &sig, &class); err != nil {
				rows.Close()
				return nil, err
			}
			out[runtimeModel{rt, id}] = entryOf(status, sig, class).Signature
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

const (
	// sqlWalkStatuses walks the models most downloaded first, each with
	// its status on every runtime it has a result on ("id status ..."),
	// read from the model's range of runtime_current_model.
	sqlWalkStatuses = `SELECT c.model_id, c.downloads,
	ifnull((SELECT group_concat(rc.runtime_id || ' ' || rc.status, ' ') FROM runtime_current rc WHERE rc.model_id = c.model_id), '')
FROM current c WHERE c.target = ''
ORDER BY c.downloads DESC, c.model_id`
	// sqlRuntimeFailKeys reads the statuses, signatures and failure
	// classes of some models (%s) on one runtime (?1).
	sqlRuntimeFailKeys = `SELECT model_id, status, signature, failure_class FROM runtime_current
WHERE runtime_id = ?1 AND model_id IN (%s)`
)
