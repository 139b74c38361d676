package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// cursor is the decoded form of ModelQuery.Cursor: the last row's sort key
// and id, and what it was a cursor for.
type cursor struct {
	Sort    string `json:"s"`
	Reverse bool   `json:"r,omitempty"`
	Filter  uint64 `json:"f"`
	Keys    []any  `json:"k,omitempty"`
	ID      string `json:"id"`
}

func (c cursor) encode() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// decodeCursor parses s as a cursor for the given sort, direction and
// filters; anything else is ErrBadCursor.
func decodeCursor(s, sort string, reverse bool, filter uint64, keys []sortKey) (cursor, error) {
	bad := func(why string) (cursor, error) {
		return cursor{}, fmt.Errorf("%w: %w: %s", ErrInvalid, ErrBadCursor, why)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return bad("not base64")
	}
	var c cursor
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return bad("not a cursor")
	}
	if c.Sort != sort || c.Reverse != reverse || c.Filter != filter {
		return bad("made for another query")
	}
	if len(c.Keys) != len(keys) {
		return bad("wrong key count")
	}
	for i, k := range keys {
		n, ok := c.Keys[i].(json.Number)
		if !ok {
			return bad("key not a number")
		}
		switch k.kind {
		case keyInt:
			v, err := n.Int64()
			if err != nil {
				return bad("key not an integer")
			}
			c.Keys[i] = v
		case keyFloat:
			v, err := n.Float64()
			if err != nil {
				return bad("key not a number")
			}
			c.Keys[i] = v
		}
	}
	return c, nil
}

// filterHash identifies a query's filters, so a cursor is not used with others.
func filterHash(q ModelQuery) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%q|%q|%q|%q|%q|", q.Q, q.Task, strings.ToLower(q.Org), q.Target, q.Hint)
	st := slices.Clone(q.Status)
	slices.Sort(st)
	for _, s := range slices.Compact(st) {
		fmt.Fprintf(h, "%q,", s)
	}
	if len(q.Train) > 0 { // only then: cursors without it stay valid
		tr := slices.Clone(q.Train)
		slices.Sort(tr)
		fmt.Fprint(h, "|train|")
		for _, s := range slices.Compact(tr) {
			fmt.Fprintf(h, "%q,", s)
		}
	}
	if q.Serve != "" { // as train: cursors without it stay valid
		fmt.Fprintf(h, "|serve|%q", q.Serve)
	}
	return h.Sum64()
}

// likePattern is a LIKE pattern matching s anywhere, with LIKE's wildcards
// in s escaped.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// listQuery is ListModels' SQL and arguments.
type listQuery struct {
	sql   string
	args  []any
	keys  []sortKey // with their effective directions
	limit int
	next  cursor // Sort, Reverse and Filter of the next page's cursor
}

// buildList validates q and assembles its query. The page is picked on
// models and current only; results are joined to the page's rows alone.
func buildList(q ModelQuery) (listQuery, error) {
	ord, err := findOrder(q.Sort)
	if err != nil {
		return listQuery{}, err
	}
	if err := validTarget(q.Target, true); err != nil {
		return listQuery{}, err
	}
	keys, reverse := ord.directed(q.Desc)
	idDesc := reverse
	sortName := ord.name

	where, args, err := listFilters(q)
	if err != nil {
		return listQuery{}, err
	}

	filter := filterHash(q)
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor, sortName, reverse, filter, keys)
		if err != nil {
			return listQuery{}, err
		}
		cond, cargs := keysetAfter(keys, idDesc, c)
		where = append(where, cond)
		args = append(args, cargs...)
	}

	limit := clampLimit(q.Limit, 50)
	var sel, order, outerSel, outerOrder []string
	for i, k := range keys {
		sel = append(sel, fmt.Sprintf(", %s AS k%d", k.expr, i))
		outerSel = append(outerSel, fmt.Sprintf(", page.k%d", i))
		order = append(order, k.expr+dir(k.desc))
		outerOrder = append(outerOrder, fmt.Sprintf("page.k%d%s", i, dir(k.desc)))
	}
	order = append(order, listModelID+dir(idDesc))
	outerOrder = append(outerOrder, "page.id"+dir(idDesc))

	join := ""
	if q.Task != "" || q.Org != "" || q.Hint != "" || q.Serve != "" {
		join = listJoinModels
	}
	var b strings.Builder
	fmt.Fprintf(&b, listPageHead, strings.Join(sel, ""), join)
	for _, w := range where {
		b.WriteString("\n\tAND " + w)
	}
	fmt.Fprintf(&b, listPageTail, strings.Join(order, ", "), strings.Join(outerSel, ""), strings.Join(outerOrder, ", "))
	args = append([]any{string(q.Target)}, args...)
	args = append(args, limit+1, string(q.Target))
	return listQuery{sql: b.String(), args: args, keys: keys, limit: limit,
		next: cursor{Sort: sortName, Reverse: reverse, Filter: filter}}, nil
}

// listFilters are the WHERE conditions of q's filters (search, task, org,
// hint, serving, status, train) and their arguments, each validated.
func listFilters(q ModelQuery) (where []string, args []any, err error) {
	if q.Q != "" {
		where = append(where, listWhereQ)
		args = append(args, likePattern(q.Q))
	}
	if q.Task != "" {
		where = append(where, listWhereTask)
		args = append(args, q.Task)
	}
	if q.Org != "" {
		where = append(where, listWhereOrg)
		args = append(args, q.Org)
	}
	if err := validHint(q.Hint); err != nil {
		return nil, nil, err
	}
	if q.Hint != "" {
		where = append(where, listWhereHint)
		args = append(args, q.Hint)
	}
	if err := validServe(q.Serve); err != nil {
		return nil, nil, err
	}
	if w, a := serveFilter(q.Serve); w != "" {
		where = append(where, w)
		args = append(args, a...)
	}
	if len(q.Status) > 0 {
		var in []string
		for _, st := range q.Status {
			if !st.Valid() {
				return nil, nil, fmt.Errorf("%w: status %q", ErrInvalid, st)
			}
			in = append(in, "?")
			args = append(args, statusRank(st))
		}
		where = append(where, fmt.Sprintf(listStatusIn, strings.Join(in, ", ")))
	}

	if len(q.Train) > 0 {
		var in []string
		for _, st := range q.Train {
			if !st.Valid() || st == compat.StatusUntested {
				return nil, nil, fmt.Errorf("%w: train status %q", ErrInvalid, st)
			}
			in = append(in, "?")
			args = append(args, string(st))
		}
		where = append(where, fmt.Sprintf(listTrainIn, strings.Join(in, ", ")))
	}
	return where, args, nil
}

func dir(desc bool) string {
	if desc {
		return " DESC"
	}
	return ""
}

// keysetAfter is the condition "the row comes after cursor c" for the
// order keys, then id: (k0 after v0) OR (k0 = v0 AND k1 after v1) OR … OR
// (all equal AND id after c.ID). The first key's bound is repeated on its
// own (k0 >= v0 or <=), which lets SQLite seek an index on it.
func keysetAfter(keys []sortKey, idDesc bool, c cursor) (string, []any) {
	after := func(desc bool) string {
		if desc {
			return " < ?"
		}
		return " > ?"
	}
	var ors []string
	var args []any
	for i := 0; i <= len(keys); i++ {
		var ands []string
		for j := 0; j < i; j++ {
			ands = append(ands, keys[j].expr+" = ?")
			args = append(args, c.Keys[j])
		}
		if i < len(keys) {
			ands = append(ands, keys[i].expr+after(keys[i].desc))
			args = append(args, c.Keys[i])
		} else {
			ands = append(ands, listModelID+after(idDesc))
			args = append(args, c.ID)
		}
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	cond := "(" + strings.Join(ors, " OR ") + ")"
	if len(keys) > 0 {
		op := " >= ?"
		if keys[0].desc {
			op = " <= ?"
		}
		cond = keys[0].expr + op + " AND " + cond
		args = append([]any{c.Keys[0]}, args...)
	}
	return cond, args
}

// ListModels returns one page of models in q's order, each with its
// current result on q.Target ("" = its newest on any target; nil when
// none), and the cursor of the next page ("" after the last). The order is
// total (ties broken by id, ascending in the sort's natural direction), so
// walking the cursors visits every matching model once. Results in a list
// carry no LogTail (GetModel has it); models carry no Aliases.
//
// The error wraps ErrInvalid for an unknown sort, status or target, and
// ErrBadCursor (and ErrInvalid) for a cursor not made by this store for
// the same sort, direction and filters.
func (s *SQLite) ListModels(ctx context.Context, q ModelQuery) ([]compat.Model, string, error) {
	return listModels(ctx, s.r, q)
}

// ExportModels is ListModels for reading every page of a list (an
// export): the same answer, read through readers of their own that map
// no memory and cache little, so that a whole-table read leaves the
// process's memory as it was.
func (s *SQLite) ExportModels(ctx context.Context, q ModelQuery) ([]compat.Model, string, error) {
	return listModels(ctx, s.bulk, q)
}

func listModels(ctx context.Context, db *sql.DB, q ModelQuery) ([]compat.Model, string, error) {
	lq, err := buildList(q)
	if err != nil {
		return nil, "", fmt.Errorf("store: list models: %w", err)
	}
	rows, err := db.QueryContext(ctx, lq.sql, lq.args...)
	if err != nil {
		return nil, "", fmt.Errorf("store: list models: %w", err)
	}
	defer rows.Close()
	models := make([]compat.Model, 0, lq.limit)
	keys := make([]any, len(lq.keys)) // the sort key of the row read last
	for i, k := range lq.keys {
		if k.kind == keyFloat {
			keys[i] = new(float64)
		} else {
			keys[i] = new(int64)
		}
	}
	var lastID string
	rts := runtimes{}
	for rows.Next() {
		if len(models) == lq.limit { // the extra row: there is a next page
			next, err := lq.cursorAfter(lastID, keys).encode()
			if err != nil {
				return nil, "", fmt.Errorf("store: list models: %w", err)
			}
			return models, next, nil
		}
		var (
			mr modelRow
			rr resultRow
		)
		dest := append([]any{&lastID}, keys...)
		dest = append(dest, mr.dest()...)
		dest = append(dest, rr.dest()...)
		if err := rows.Scan(dest...); err != nil {
			return nil, "", fmt.Errorf("store: list models: %w", err)
		}
		m, err := mr.model()
		if err != nil {
			return nil, "", fmt.Errorf("store: list models: %w", err)
		}
		if m.Result, err = rr.result(rts); err != nil {
			return nil, "", fmt.Errorf("store: list models: %w", err)
		}
		models = append(models, m)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("store: list models: %w", err)
	}
	return models, "", nil
}

// cursorAfter is the cursor of the row with id and the sort key values
// that keys point at.
func (lq listQuery) cursorAfter(id string, keys []any) cursor {
	c := lq.next
	c.ID = id
	for _, k := range keys {
		switch v := k.(type) {
		case *int64:
			c.Keys = append(c.Keys, *v)
		case *float64:
			c.Keys = append(c.Keys, *v)
		}
	}
	return c
}
