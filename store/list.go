package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// cursor is a position in a model list (ModelQuery.Cursor, a page's next
// cursor): the sort keys and the id of the row a page starts after. It is
// a position, not a token: every well-formed value is one, and the page is
// the rows after it in the query's order and under its filters, whatever
// query wrote it (a keyset needs nothing else). It is written
// "<k0>~<k1>~<id>" (String): the order's keys as decimal numbers, 0 for a
// key the order does not have (sort=id has none), then the model id as is
// (any characters but control characters). CursorPattern is its form.
type cursor struct {
	Keys [cursorKeys]any // int64 or float64
	ID   string
}

// cursorKeys is how many sort keys a cursor holds: the most an order has
// (TestCursorKeys).
const cursorKeys = 2

// CursorPattern is the form of a model list's cursor (cursor), as the
// OpenAPI document states it: two decimal numbers and an id, "~" between.
const CursorPattern = `^-?[0-9]+(\.[0-9]+)?~-?[0-9]+(\.[0-9]+)?~[^\x00-\x1f\x7f]*$`

var cursorRE = regexp.MustCompile(CursorPattern)

// String writes c in its form (CursorPattern).
func (c cursor) String() string {
	var b strings.Builder
	for _, k := range c.Keys {
		b.WriteString(formatKey(k))
		b.WriteByte('~')
	}
	return b.String() + c.ID
}

// formatKey writes a sort key's value as a decimal number (no exponent).
func formatKey(k any) string {
	switch v := k.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) { // no decimal form: the nearest that has one
			switch {
			case math.IsInf(v, 1):
				v = math.MaxFloat64
			case math.IsInf(v, -1):
				v = -math.MaxFloat64
			default:
				v = 0
			}
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return "0"
}

// parseCursor reads a cursor written in its form; anything else is
// ErrBadCursor (and ErrInvalid).
func parseCursor(s string) (cursor, error) {
	if !cursorRE.MatchString(s) {
		return cursor{}, fmt.Errorf("%w: %w: not <number>~<number>~<model id>", ErrInvalid, ErrBadCursor)
	}
	parts := strings.SplitN(s, "~", cursorKeys+1)
	var c cursor
	for i := range cursorKeys {
		c.Keys[i] = parseKey(parts[i])
	}
	c.ID = parts[cursorKeys]
	return c, nil
}

// parseKey is the value of a key written as a decimal number (its form
// checked): an integer while it fits int64, a float64 otherwise (±Inf
// past float64's range, still a position).
func parseKey(s string) any {
	if !strings.Contains(s, ".") {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			return v
		}
	}
	v, _ := strconv.ParseFloat(s, 64) // the form is a number's: at worst out of range, ±Inf
	return v
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
	keys, idDesc := ord.directed(q.Desc)

	where, args, err := listFilters(q)
	if err != nil {
		return listQuery{}, err
	}

	if q.Cursor != "" {
		c, err := parseCursor(q.Cursor)
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
	return listQuery{sql: b.String(), args: args, keys: keys, limit: limit}, nil
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
// ErrBadCursor (and ErrInvalid) for a cursor not in its form (cursor):
// any cursor in it is a position, whatever query wrote it.
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
			return models, cursorAfter(lastID, keys).String(), nil
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
func cursorAfter(id string, keys []any) cursor {
	c := cursor{ID: id, Keys: [cursorKeys]any{int64(0), int64(0)}}
	for i, k := range keys {
		switch v := k.(type) {
		case *int64:
			c.Keys[i] = *v
		case *float64:
			c.Keys[i] = *v
		}
	}
	return c
}
