package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// A comparison of two runtimes (internal/compare) is read here a page at
// a time: its headline from the tallies (the runtime pairs and the two
// runtimes' tallies), each list most downloaded first from a cursor. The
// lists of the comparisons the site shows most (each runtime with the one
// before it on its target: the feed's and the default) are kept in
// compare_items, so that a page of a short list is read from its own
// rows; a list of any other comparison, or a long one, is read by walking
// the models most downloaded first and keeping those of the list. The
// train lists (compare.TrainListed) are read the same way, from their
// own tallies (train_pairs) and kept rows (compare_train_items), over
// the train verdicts' statuses that runtime_current copies.

// CompareQuery asks for a page of the comparison of Head with Base.
type CompareQuery struct {
	Base, Head compat.RuntimeRef
	// Limit is the number of models per list: 0 = 100, capped at 1000.
	Limit int
	// Cursor is "" for the first page of every list, else a position in
	// one list (CompareCursorPattern; a Next cursor of an earlier page):
	// the next page of that one list (the others are then empty).
	Cursor string
	// Lists are the lists to read (nil = every one); the others are
	// left empty, their totals counted all the same.
	Lists []compare.Kind
}

// ComparePage is a page of a comparison: Result's lists hold the page,
// its Headline counts the whole comparison (Counts has each list's total).
type ComparePage struct {
	compare.Result
	// Next is the cursor of each list's next page, "" after its last.
	Next map[compare.Kind]string
}

// compareCursor is a position in one list of a comparison (a Next
// cursor): the list, and the downloads and id of the model the page
// starts after. Like a model list's cursor it is a position, not a token:
// every well-formed value is one, whatever comparison wrote it. It is
// written "<list>~<downloads>~<id>" (String; CompareCursorPattern).
type compareCursor struct {
	Kind      compare.Kind
	Downloads any // int64, or float64 past int64's range
	ID        string
}

// CompareCursorPattern is the form of a comparison's cursor: a listed
// kind (compare.Listed, compare.TrainListed), a decimal number and a model
// id, "~" between (TestCompareCursorPattern checks the kinds).
const CompareCursorPattern = `^(fixed|regressed|new|still_failing|train_fixed|train_regressed)~-?[0-9]+(\.[0-9]+)?~[^\x00-\x1f\x7f]*$`

var compareCursorRE = regexp.MustCompile(CompareCursorPattern)

func (c compareCursor) String() string {
	return string(c.Kind) + "~" + formatKey(c.Downloads) + "~" + c.ID
}

func parseCompareCursor(s string) (compareCursor, error) {
	if !compareCursorRE.MatchString(s) {
		return compareCursor{}, fmt.Errorf("%w: %w: not <list>~<downloads>~<model id>", ErrInvalid, ErrBadCursor)
	}
	parts := strings.SplitN(s, "~", 3)
	return compareCursor{Kind: compare.Kind(parts[0]), Downloads: parseKey(parts[1]), ID: parts[2]}, nil
}

// Compare returns a page of the comparison of q.Head with q.Base (each
// model's newest result on each). The error wraps ErrNotFound when a
// runtime has no results, ErrInvalid for a ref without a concrete target
// or base equal to head, and ErrBadCursor (and ErrInvalid) for a cursor
// not in its form (compareCursor).
func (s *SQLite) Compare(ctx context.Context, q CompareQuery) (ComparePage, error) {
	for _, r := range []compat.RuntimeRef{q.Base, q.Head} {
		if err := validTarget(r.Target, false); err != nil {
			return ComparePage{}, fmt.Errorf("store: compare: %w", err)
		}
	}
	if q.Base == q.Head {
		return ComparePage{}, fmt.Errorf("store: compare: %w: base and head are the same runtime", ErrInvalid)
	}
	var cur *compareCursor
	if q.Cursor != "" {
		c, err := parseCompareCursor(q.Cursor)
		if err != nil {
			return ComparePage{}, fmt.Errorf("store: compare: %w", err)
		}
		cur = &c
	}
	tx, err := s.r.BeginTx(ctx, nil) // one snapshot
	if err != nil {
		return ComparePage{}, fmt.Errorf("store: compare: %w", err)
	}
	defer tx.Rollback()
	page, err := comparePage(ctx, tx, q, clampLimit(q.Limit, 100), cur, nil)
	if err != nil {
		return ComparePage{}, fmt.Errorf("store: compare: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return ComparePage{}, fmt.Errorf("store: compare: %w", err)
	}
	return page, nil
}

// comparePage reads a page of q's comparison. With shared (ComparePages),
// the first pages of its kept long lists are left to shared's one walk.
func comparePage(ctx context.Context, tx *sql.Tx, q CompareQuery, limit int, cur *compareCursor, shared *sharedWalk) (ComparePage, error) {
	var ids [2]int64
	for i, r := range []compat.RuntimeRef{q.Base, q.Head} {
		err := tx.QueryRowContext(ctx, sqlRuntimeID, string(r.Target), r.RetestKey()).Scan(&ids[i])
		if errors.Is(err, sql.ErrNoRows) {
			return ComparePage{}, fmt.Errorf("no results on runtime %s: %w", r.Key(), ErrNotFound)
		}
		if err != nil {
			return ComparePage{}, err
		}
	}
	cells, err := compareCells(ctx, tx, ids[0], ids[1])
	if err != nil {
		return ComparePage{}, err
	}
	train, err := trainCells(ctx, tx, ids[0], ids[1])
	if err != nil {
		return ComparePage{}, err
	}
	page := ComparePage{Result: compare.NewResult(), Next: map[compare.Kind]string{}}
	page.Headline = compare.Tally(cells, train)
	var kept, keptTrain int
	if err := tx.QueryRowContext(ctx, sqlPairKept, ids[0], ids[1]).Scan(&kept, &keptTrain); err != nil {
		return page, err
	}
	var models int64
	if err := tx.QueryRowContext(ctx, sqlModelCount).Scan(&models); err != nil {
		return page, err
	}
	set := func(kind compare.Kind, items []compare.Item, more bool) { setList(&page, q, kind, items, more) }
	walk := map[compare.Kind]int{} // the first pages to read in one walk, with their totals
	for _, kind := range append(slices.Clone(compare.Listed), compare.TrainListed...) {
		page.Next[kind] = ""
		if (cur != nil && cur.Kind != kind) || (q.Lists != nil && !slices.Contains(q.Lists, kind)) {
			continue
		}
		total := page.Headline.Counts[kind]
		if total == 0 {
			continue
		}
		// A short list of a kept comparison is read from its rows and
		// sorted (a row's cost each); otherwise the models are walked most
		// downloaded first, which costs about (limit+1) × models ÷ total
		// rows of about the same cost (measured at 10 000 models). The
		// first pages of a comparison not kept are read in one walk, which
		// goes as far as its longest (walkLists).
		isKept := kept > 0
		if compare.IsTrainListed(kind) {
			isKept = keptTrain > 0
		}
		if !isKept && cur == nil {
			walk[kind] = total
			continue
		}
		gather := isKept && int64(total)*int64(total) <= int64(limit+1)*max(models, 1)
		if shared != nil && cur == nil && isKept && !gather && compare.IsListed(kind) {
			shared.add(q, ids, kind, total, limit)
			continue
		}
		items, more, err := listPage(ctx, tx, ids, kind, isKept, gather, limit, total, cur)
		if err != nil {
			return page, err
		}
		set(kind, items, more)
	}
	if len(walk) == 0 {
		return page, nil
	}
	lists, err := walkLists(ctx, tx, ids, walk, limit)
	if err != nil {
		return page, err
	}
	for kind, items := range lists {
		more := len(items) > limit
		set(kind, items[:min(len(items), limit)], more)
	}
	return page, nil
}

// setList puts a page of list kind into page, with its next page's
// cursor when there are more.
func setList(page *ComparePage, q CompareQuery, kind compare.Kind, items []compare.Item, more bool) {
	*page.List(kind) = items
	if more {
		last := items[len(items)-1]
		page.Next[kind] = compareCursor{Kind: kind, Downloads: last.Downloads, ID: last.ID}.String()
	}
}

// walkLists reads the first page of several lists of the comparison ids
// (base, head) in one walk of the models most downloaded first, each
// classified by compare.Classify and compare.ClassifyTrain into the list of
// its kinds, until every list holds limit+1 models or its total (totals,
// by kind): up to limit+1 models of each, in order.
func walkLists(ctx context.Context, tx *sql.Tx, ids [2]int64, totals map[compare.Kind]int, limit int) (map[compare.Kind][]compare.Item, error) {
	out := make(map[compare.Kind][]compare.Item, len(totals))
	open := map[bool]int{} // lists still open, by whether they are train lists
	for k := range totals {
		out[k] = make([]compare.Item, 0, min(totals[k], limit+1))
		open[compare.IsTrainListed(k)]++
	}
	w := listWalk{totals: totals, limit: limit, out: out, open: open}
	if open[false] == 0 {
		return out, w.walk(ctx, tx, true, sqlListWalkTrained, ids[0], ids[1])
	}
	if err := w.walk(ctx, tx, false, sqlListWalkEvery, ids[0], ids[1]); err != nil || w.open[true] == 0 {
		return out, err
	}
	// Only train lists are open: the rest of the walk reads the models
	// with a train verdict on both runtimes alone (no other can be in a
	// train list), from the last model walked. That skips about half the
	// models, and reading each one's result on base.
	return out, w.walk(ctx, tx, true, sqlListWalkTrainedAfter, ids[0], ids[1], w.last.Downloads, w.last.Downloads, w.last.ID)
}

// listWalk is walkLists' state: the lists' pages so far and how many are
// still open (by whether they are train lists), and the last model walked.
type listWalk struct {
	totals map[compare.Kind]int
	limit  int
	out    map[compare.Kind][]compare.Item
	open   map[bool]int
	last   compare.Item
}

// walk reads query's models into the open lists until the train lists
// (train) or the others (!train: the query reads every model) are full.
func (w *listWalk) walk(ctx context.Context, tx *sql.Tx, train bool, query string, args ...any) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for w.open[train] > 0 && rows.Next() {
		var (
			id                             string
			downloads                      int64
			bStatus, bSig, bCls, bTr, bTrS sql.NullString
			hStatus, hSig, hCls, hTr, hTrS sql.NullString
		)
		if err := rows.Scan(&id, &downloads, &bStatus, &bSig, &bCls, &bTr, &bTrS, &hStatus, &hSig, &hCls, &hTr, &hTrS); err != nil {
			return err
		}
		w.last = compare.Item{ID: id, Downloads: downloads}
		base, head := entryOf(bStatus, bSig, bCls), entryOf(hStatus, hSig, hCls)
		base.Train, base.TrainSignature = compat.Status(bTr.String), bTrS.String
		head.Train, head.TrainSignature = compat.Status(hTr.String), hTrS.String
		for i, kind := range []compare.Kind{compare.Classify(base.Status, head.Status), compare.ClassifyTrain(base.Train, head.Train)} {
			total, ok := w.totals[kind]
			if !ok || len(w.out[kind]) == min(total, w.limit+1) {
				continue
			}
			it := compare.ItemOf(id, downloads, base, head)
			if i == 1 {
				it = compare.TrainItemOf(id, downloads, base, head)
			}
			w.out[kind] = append(w.out[kind], it)
			if len(w.out[kind]) == min(total, w.limit+1) {
				w.open[i == 1]--
			}
		}
	}
	return rows.Err()
}

// compareCells counts the models of the comparison by their status on
// base and on head ("" for none): the pair's tallies for the models with
// a result on both, each runtime's tallies less those for the others.
func compareCells(ctx context.Context, tx *sql.Tx, base, head int64) ([]compare.Cell, error) {
	x, y := min(base, head), max(base, head)
	rows, err := tx.QueryContext(ctx, sqlPairCells, x, y)
	if err != nil {
		return nil, err
	}
	var cells []compare.Cell
	for rows.Next() {
		var (
			xs, ys compat.Status
			c      compare.Cell
		)
		if err := rows.Scan(&xs, &ys, &c.Models, &c.Downloads); err != nil {
			rows.Close()
			return nil, err
		}
		c.Base, c.Head = xs, ys
		if base != x {
			c.Base, c.Head = ys, xs
		}
		cells = append(cells, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	baseAlone, err := runtimeTally(ctx, tx, base)
	if err != nil {
		return nil, err
	}
	headAlone, err := runtimeTally(ctx, tx, head)
	if err != nil {
		return nil, err
	}
	for _, c := range cells {
		baseAlone[c.Base] = baseAlone[c.Base].less(c)
		headAlone[c.Head] = headAlone[c.Head].less(c)
	}
	for st, v := range baseAlone {
		cells = append(cells, compare.Cell{Base: st, Models: v.models, Downloads: v.downloads})
	}
	for st, v := range headAlone {
		cells = append(cells, compare.Cell{Head: st, Models: v.models, Downloads: v.downloads})
	}
	return cells, nil
}

// trainCells counts the models with a train verdict on both base and head
// by those verdicts' statuses: the pair's train tallies.
func trainCells(ctx context.Context, tx *sql.Tx, base, head int64) ([]compare.Cell, error) {
	x, y := min(base, head), max(base, head)
	rows, err := tx.QueryContext(ctx, sqlTrainCells, x, y)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cells []compare.Cell
	for rows.Next() {
		var c compare.Cell
		if err := rows.Scan(&c.Base, &c.Head, &c.Models, &c.Downloads); err != nil {
			return nil, err
		}
		if base != x {
			c.Base, c.Head = c.Head, c.Base
		}
		cells = append(cells, c)
	}
	return cells, rows.Err()
}

// less is t without the models of c.
func (t tally) less(c compare.Cell) tally {
	return tally{models: t.models - c.Models, downloads: t.downloads - c.Downloads}
}

// runtimeTally is a runtime's tallies by status.
func runtimeTally(ctx context.Context, tx *sql.Tx, rt int64) (map[compat.Status]tally, error) {
	rows, err := tx.QueryContext(ctx, sqlRuntimeTally, rt)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[compat.Status]tally{}
	for rows.Next() {
		var (
			st compat.Status
			v  tally
		)
		if err := rows.Scan(&st, &v.models, &v.downloads); err != nil {
			return nil, err
		}
		out[st] = v
	}
	return out, rows.Err()
}

// listPage reads up to limit models of one list after cur (nil = from
// the top), and whether there are more. total is the list's total: a
// walk stops once it has found as many (a short list need not be walked
// to the last model).
func listPage(ctx context.Context, tx *sql.Tx, ids [2]int64, kind compare.Kind, kept, gather bool, limit, total int, cur *compareCursor) ([]compare.Item, bool, error) {
	var (
		query string
		args  = []any{ids[0], ids[1]}
	)
	switch {
	case gather:
		query, args = sqlListGather, append(args, string(kind))
	case kept:
		query, args = sqlListWalkKept, append(args, string(kind))
	default:
		query, args = kindPairsSQL(sqlListWalk, kind), append(args, kindPairArgs(kind)...)
	}
	train := compare.IsTrainListed(kind)
	if train {
		query = trainSQL(query)
	}
	after := ""
	if cur != nil {
		after = listAfter
		args = append(args, cur.Downloads, cur.Downloads, cur.ID)
	}
	args = append(args, min(limit+1, total))
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(query, after), args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	items := make([]compare.Item, 0, min(limit, 128))
	for rows.Next() {
		if len(items) == limit {
			return items, true, nil
		}
		var (
			id               string
			downloads        int64
			base, head       sql.NullString
			bSig, bCls, hSig sql.NullString
			hCls             sql.NullString
		)
		if err := rows.Scan(&id, &downloads, &base, &bSig, &bCls, &head, &hSig, &hCls); err != nil {
			return nil, false, err
		}
		if train {
			items = append(items, compare.TrainItemOf(id, downloads, trainEntryOf(base, bSig), trainEntryOf(head, hSig)))
			continue
		}
		items = append(items, compare.ItemOf(id, downloads, entryOf(base, bSig, bCls), entryOf(head, hSig, hCls)))
	}
	return items, false, rows.Err()
}

// entryOf is a runtime_current row as a comparison entry (zero for none).
func entryOf(status, sig, class sql.NullString) compare.Entry {
	if !status.Valid {
		return compare.Entry{}
	}
	st := compat.Status(status.String)
	sh := shown{status: st, signature: fromNullStr[string](sig), class: fromNullStr[compat.FailureClass](class)}
	return compare.Entry{Status: st, Signature: sh.failKey().String}
}

// trainEntryOf is a train list row's side (trainSQL's columns: the train
// verdict's status and signature) as a comparison entry.
func trainEntryOf(status, sig sql.NullString) compare.Entry {
	return compare.Entry{Train: compat.Status(status.String), TrainSignature: sig.String}
}

// trainSQL is a list query (or sqlBuildItems) made a train list's: the
// train lists' kept rows, and the train verdicts' statuses and signatures
// where the inference list reads the results' (the failure class column
// reads NULL). kindPairs's train pairs never name "": a side without a
// train verdict (NULL) matches none.
var trainSQL = strings.NewReplacer(
	"compare_items", "compare_train_items",
	"b.status, b.signature, b.failure_class", "b.train_status, b.train_signature, NULL",
	"h.status, h.signature, h.failure_class", "h.train_status, h.train_signature, NULL",
	"(ifnull(b.status, ''), h.status)", "(b.train_status, h.train_status)",
).Replace

// kindPairs are the statuses on base ("" for none) and head of the models
// a listed kind has: compare.Classify's answer, asked once for every pair
// of recordable statuses; and, for a train kind, the train verdicts'
// statuses on both (compare.ClassifyTrain's answer; never "").
var kindPairs = func() map[compare.Kind][][2]compat.Status {
	out := map[compare.Kind][][2]compat.Status{}
	var recordable []compat.Status
	for _, st := range compat.Statuses {
		if st != compat.StatusUntested {
			recordable = append(recordable, st)
		}
	}
	for _, b := range append([]compat.Status{""}, recordable...) {
		for _, h := range recordable {
			if k := compare.Classify(b, h); compare.IsListed(k) {
				out[k] = append(out[k], [2]compat.Status{b, h})
			}
			if k := compare.ClassifyTrain(b, h); k != "" && b != "" {
				out[k] = append(out[k], [2]compat.Status{b, h})
			}
		}
	}
	return out
}()

// kindPairsSQL puts kind's status pairs into query's %[2]s, as the
// parameters kindPairArgs gives.
func kindPairsSQL(query string, kind compare.Kind) string {
	vals := strings.TrimSuffix(strings.Repeat("(?, ?), ", len(kindPairs[kind])), ", ")
	return strings.Replace(query, "%[2]s", vals, 1)
}

func kindPairArgs(kind compare.Kind) []any {
	var args []any
	for _, p := range kindPairs[kind] {
		args = append(args, string(p[0]), string(p[1]))
	}
	return args
}

// keptPairs are the comparisons whose lists are kept, as (base, head) ids.
func keptPairs(ctx context.Context, tx *sql.Tx) ([][2]int64, error) {
	return pairsOf(ctx, tx, sqlKeptPairs)
}

// pairsOf are the (base, head) ids query reads.
func pairsOf(ctx context.Context, tx *sql.Tx, query string) ([][2]int64, error) {
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][2]int64
	for rows.Next() {
		var p [2]int64
		if err := rows.Scan(&p[0], &p[1]); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// settlePairs makes the kept comparisons each runtime and the one before
// it on its target (in the order of Runtimes), dropping the others and
// building the new ones whole, and the train lists of those that lack
// them; it returns those it built whole, and whether it wrote.
func settlePairs(ctx context.Context, tx *sql.Tx) (map[[2]int64]bool, bool, error) {
	rows, err := tx.QueryContext(ctx, sqlRuntimeOrder)
	if err != nil {
		return nil, false, fmt.Errorf("kept comparisons: %w", err)
	}
	var rts []orderedRuntime
	for rows.Next() {
		var r orderedRuntime
		if err := rows.Scan(&r.id, &r.ref.Target, &r.ref.Torch, &r.ref.TorchTPU, &r.ref.Transformers, &r.ref.Harness, &r.first); err != nil {
			rows.Close()
			return nil, false, fmt.Errorf("kept comparisons: %w", err)
		}
		rts = append(rts, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("kept comparisons: %w", err)
	}
	sort.Slice(rts, func(i, j int) bool { return runtimeNewer(rts[i].first, rts[i].ref, rts[j].first, rts[j].ref) })
	want := map[[2]int64]bool{}
	newestOn := map[compat.Target]int64{} // the runtime last seen on each target, walking newest first
	for _, r := range rts {
		if head, ok := newestOn[r.ref.Target]; ok {
			want[[2]int64{r.id, head}] = true
		}
		newestOn[r.ref.Target] = r.id
	}
	have, err := keptPairs(ctx, tx)
	if err != nil {
		return nil, false, fmt.Errorf("kept comparisons: %w", err)
	}
	for _, p := range have {
		if want[p] {
			delete(want, p)
			continue
		}
		if _, err := tx.ExecContext(ctx, sqlDropPair, p[0], p[1]); err != nil {
			return nil, false, fmt.Errorf("kept comparisons: %w", err)
		}
	}
	for p := range want {
		if _, err := tx.ExecContext(ctx, sqlAddPair, p[0], p[1]); err != nil {
			return nil, false, fmt.Errorf("kept comparisons: %w", err)
		}
		for _, kind := range compare.Listed {
			if err := buildItems(ctx, tx, p, kind); err != nil {
				return nil, false, err
			}
		}
	}
	// The train lists of every kept comparison without them: those just
	// added, and those kept before migration 12.
	unbuilt, err := pairsOf(ctx, tx, sqlTrainUnbuilt)
	if err != nil {
		return nil, false, fmt.Errorf("kept comparisons: %w", err)
	}
	for _, p := range unbuilt {
		for _, kind := range compare.TrainListed {
			if err := buildItems(ctx, tx, p, kind); err != nil {
				return nil, false, err
			}
		}
		if _, err := tx.ExecContext(ctx, sqlTrainBuilt, p[0], p[1]); err != nil {
			return nil, false, fmt.Errorf("kept comparisons: %w", err)
		}
	}
	return want, len(want) > 0 || len(unbuilt) > 0, nil
}

// buildItems files every model of one listed or train-listed kind of the
// kept comparison p (base, head).
func buildItems(ctx context.Context, tx *sql.Tx, p [2]int64, kind compare.Kind) error {
	query := kindPairsSQL(sqlBuildItems, kind)
	if compare.IsTrainListed(kind) {
		query = trainSQL(query)
	}
	args := append([]any{p[0], p[1], string(kind)}, kindPairArgs(kind)...)
	if _, err := tx.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("kept comparisons: %w", err)
	}
	return nil
}

// setItem files model id in the kept comparison p (base, head) by its
// state: in the list of its kind, or in none; and in the train list of its
// train kind, or in none.
func setItem(ctx context.Context, tx *sql.Tx, p [2]int64, id string, st modelState) error {
	base, head := st.runtimes[p[0]], st.runtimes[p[1]]
	var err error
	if kind := compare.Classify(base, head); st.exists && compare.IsListed(kind) {
		_, err = tx.ExecContext(ctx, sqlSetItem, p[0], p[1], id, string(kind))
	} else {
		_, err = tx.ExecContext(ctx, sqlDropItem, p[0], p[1], id)
	}
	if err != nil {
		return err
	}
	if kind := compare.ClassifyTrain(st.trains[p[0]], st.trains[p[1]]); st.exists && kind != "" {
		_, err = tx.ExecContext(ctx, trainSQL(sqlSetItem), p[0], p[1], id, string(kind))
	} else {
		_, err = tx.ExecContext(ctx, trainSQL(sqlDropItem), p[0], p[1], id)
	}
	return err
}

// orderedRuntime is a runtime as the order of Runtimes sees it.
type orderedRuntime struct {
	id    int64
	ref   compat.RuntimeRef
	first int64
}

// runtimeNewer is the order of Runtimes: the newest first result first,
// then by key.
func runtimeNewer(aFirst int64, a compat.RuntimeRef, bFirst int64, b compat.RuntimeRef) bool {
	if aFirst != bFirst {
		return aFirst > bFirst
	}
	return a.Key() < b.Key()
}

// Comparisons.
const (
	sqlRuntimeID    = `SELECT id FROM runtimes WHERE target = ? AND runtime_key = ?`
	sqlModelCount   = `SELECT ifnull(sum(models), 0) FROM status_tallies WHERE target = ''`
	sqlPairCells    = `SELECT x_status, y_status, models, downloads FROM runtime_pairs WHERE x_id = ? AND y_id = ? AND models > 0`
	sqlRuntimeTally = `SELECT status, models, downloads FROM runtime_tallies WHERE runtime_id = ? AND models > 0`
	sqlTrainCells   = `SELECT x_train, y_train, models, downloads FROM train_pairs WHERE x_id = ? AND y_id = ? AND models > 0`
	// sqlPairKept says whether a comparison's lists are kept, and its
	// train lists.
	sqlPairKept     = `SELECT count(*), ifnull(max(train_items), 0) FROM compare_pairs WHERE base_id = ? AND head_id = ?`
	sqlKeptPairs    = `SELECT base_id, head_id FROM compare_pairs`
	sqlTrainUnbuilt = `SELECT base_id, head_id FROM compare_pairs WHERE train_items = 0`
	sqlTrainBuilt   = `UPDATE compare_pairs SET train_items = 1 WHERE base_id = ? AND head_id = ?`
	sqlRuntimeOrder = `SELECT id, target, torch, torch_tpu, transformers, harness, first_seen FROM runtimes`
	sqlAddPair      = `INSERT INTO compare_pairs (base_id, head_id) VALUES (?, ?)`
	sqlDropPair     = `DELETE FROM compare_pairs WHERE base_id = ? AND head_id = ?`
	sqlSetItem      = `INSERT INTO compare_items (base_id, head_id, model_id, kind) VALUES (?, ?, ?, ?)
ON CONFLICT DO UPDATE SET kind = excluded.kind WHERE kind <> excluded.kind`
	sqlDropItem = `DELETE FROM compare_items WHERE base_id = ? AND head_id = ? AND model_id = ?`
	// sqlBuildItems files every model of one kind (?3) of a kept
	// comparison (?1 base, ?2 head): each has a result on head.
	sqlBuildItems = `INSERT INTO compare_items (base_id, head_id, model_id, kind)
SELECT ?1, ?2, h.model_id, ?3
FROM runtime_current h LEFT JOIN runtime_current b ON b.runtime_id = ?1 AND b.model_id = h.model_id
WHERE h.runtime_id = ?2 AND (ifnull(b.status, ''), h.status) IN (VALUES %[2]s)`

	// The pages of a list: each row is a model, its downloads, and its
	// status, signature and failure class on base and on head. %[1]s is
	// listAfter after the first page. The downloads are those the
	// current rows copy (the models', kept in step).
	listCols = `c.model_id, c.downloads, b.status, b.signature, b.failure_class, h.status, h.signature, h.failure_class`
	listJoin = `
JOIN runtime_current h ON h.runtime_id = ?2 AND h.model_id = c.model_id
LEFT JOIN runtime_current b ON b.runtime_id = ?1 AND b.model_id = c.model_id`
	listAfter = ` AND (c.downloads < ? OR (c.downloads = ? AND c.model_id > ?))`
	// sqlListGather sorts a kept list's rows (their downloads alone),
	// then reads the statuses of the page's.
	sqlListGather = `WITH page AS MATERIALIZED (
SELECT c.model_id, c.downloads
FROM compare_items i CROSS JOIN current c ON c.target = '' AND c.model_id = i.model_id
WHERE i.base_id = ?1 AND i.head_id = ?2 AND i.kind = ?3%[1]s
ORDER BY c.downloads DESC, c.model_id LIMIT ?)
SELECT page.model_id, page.downloads, b.status, b.signature, b.failure_class, h.status, h.signature, h.failure_class
FROM page
JOIN runtime_current h ON h.runtime_id = ?2 AND h.model_id = page.model_id
LEFT JOIN runtime_current b ON b.runtime_id = ?1 AND b.model_id = page.model_id
ORDER BY page.downloads DESC, page.model_id`
	// sqlListWalkKept walks the models most downloaded first and keeps
	// those of a kept list.
	sqlListWalkKept = `SELECT ` + listCols + `
FROM current c CROSS JOIN compare_items i ON i.base_id = ?1 AND i.head_id = ?2 AND i.model_id = c.model_id` + listJoin + `
WHERE c.target = '' AND i.kind = ?3%[1]s
ORDER BY c.downloads DESC, c.model_id LIMIT ?`
	// sqlListWalk walks the models most downloaded first and keeps those
	// whose statuses on base and head are one of the kind's pairs.
	sqlListWalk = `SELECT ` + listCols + `
FROM current c CROSS JOIN runtime_current h ON h.runtime_id = ?2 AND h.model_id = c.model_id
LEFT JOIN runtime_current b ON b.runtime_id = ?1 AND b.model_id = c.model_id
WHERE c.target = '' AND (ifnull(b.status, ''), h.status) IN (VALUES %[2]s)%[1]s
ORDER BY c.downloads DESC, c.model_id LIMIT ?`
)

// The walks of walkLists.
const (
	// listWalkSQL walks the models with a result on head (?2) most
	// downloaded first, with their statuses, signatures, failure classes
	// and train verdicts on base (?1) and head (walkLists).
	listWalkSQL = `SELECT c.model_id, c.downloads, b.status, b.signature, b.failure_class, b.train_status, b.train_signature,
	h.status, h.signature, h.failure_class, h.train_status, h.train_signature
FROM current c CROSS JOIN runtime_current h ON h.runtime_id = ?2 AND h.model_id = c.model_id
LEFT JOIN runtime_current b ON b.runtime_id = ?1 AND b.model_id = c.model_id
WHERE c.target = ''%s
ORDER BY c.downloads DESC, c.model_id`
	// trainedOnBoth keeps the models with a train verdict on base and on
	// head: the only ones a train list can hold.
	trainedOnBoth = ` AND h.train_status IS NOT NULL AND b.train_status IS NOT NULL`
)

var (
	// sqlListWalkEvery walks every model with a result on head.
	sqlListWalkEvery = fmt.Sprintf(listWalkSQL, "")
	// sqlListWalkTrained walks those with a train verdict on both, and
	// sqlListWalkTrainedAfter those after a model (listAfter's arguments).
	sqlListWalkTrained      = fmt.Sprintf(listWalkSQL, trainedOnBoth)
	sqlListWalkTrainedAfter = fmt.Sprintf(listWalkSQL, trainedOnBoth+listAfter)
)
