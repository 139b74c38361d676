package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// The tallies (migrations/*_scale.sql) hold what the summary, the
// runtimes and the comparisons' headlines add up, so that those answers
// read a few rows whatever the number of models. They are kept in step by
// one rule: a model contributes to them through its state (modelState:
// its downloads, task and library, the status rank and root cause of each
// of its current rows, its newest result on any target, and its status and
// train verdict's status on each runtime);
// a write reads the state of each model it touches before and after, and
// adds the difference of the two contributions (tallier). Only the fit
// tallies, which follow a model's readiness alone, are kept by SetReadiness
// and the rename.

// modelState is what one model contributes to the tallies.
type modelState struct {
	exists    bool
	downloads int64
	task      string
	library   string
	// rows are the model's current rows, by target ('' = any target).
	rows map[compat.Target]currentRow
	// newest is its newest result on any target (the current row on ''):
	// what the task tallies read; tested false when none.
	newest newestResult
	// runtimes is the status of its newest result on each runtime, by
	// runtime id.
	runtimes map[int64]compat.Status
	// trains is the status of the train verdict of its newest result on
	// each runtime where that result has one, by runtime id.
	trains map[int64]compat.Status
}

// currentRow is what the tallies read of a current row: its status rank,
// and the root cause of a result held against the model ("" for none).
type currentRow struct {
	rank    int
	failKey string
}

// newestResult is what the task tallies read of a model's newest result.
type newestResult struct {
	tested bool
	task   string
	status compat.Status
	reason string
}

// taskKey is a task tallies row.
type taskKey struct {
	task, library    string
	tested, rejected bool
}

// taskKeyOf is the task tallies row a model counts in: its pipeline tag,
// else the task of its newest result; whether it has a result; and
// whether that result is preflight's "not a transformers model" (skipped,
// unsupported_library). The migration's backfill says the same in SQL.
func taskKeyOf(st modelState) taskKey {
	k := taskKey{task: st.task, library: st.library, tested: st.newest.tested}
	if k.task == "" {
		k.task = st.newest.task
	}
	k.rejected = st.newest.status == compat.StatusSkipped && st.newest.reason == string(compat.ReasonUnsupportedLibrary)
	return k
}

// newModelState is the state of a model just listed: untested on every
// target, on no runtime.
func newModelState(downloads int64, task, library string) modelState {
	st := modelState{exists: true, downloads: downloads, task: task, library: library,
		rows: make(map[compat.Target]currentRow, len(listTargets)), runtimes: map[int64]compat.Status{}, trains: map[int64]compat.Status{}}
	for _, t := range listTargets {
		st.rows[t] = currentRow{rank: statusRank(compat.StatusUntested)}
	}
	return st
}

// with is the state after a listing changed the model's row: the same
// results, other downloads, task and library.
func (st modelState) with(downloads int64, task, library string) modelState {
	st.downloads, st.task, st.library = downloads, task, library
	return st
}

// readModelState reads a model's state; exists is false for an unknown id.
func readModelState(ctx context.Context, tx *sql.Tx, id string) (modelState, error) {
	var r listedRow
	err := tx.QueryRowContext(ctx, sqlStateModel, id).Scan(&r.downloads, &r.task, &r.library)
	if err == sql.ErrNoRows {
		return modelState{}, nil
	}
	if err != nil {
		return modelState{}, fmt.Errorf("model state: %w", err)
	}
	return readModelStateOf(ctx, tx, id, &r, true)
}

// readModelStateOf reads the state of model id, whose row is r. Its
// newest result's task is read only when withTask (else ""): the task
// tallies read it only for a model without a task of its own.
func readModelStateOf(ctx context.Context, tx *sql.Tx, id string, r *listedRow, withTask bool) (modelState, error) {
	st := modelState{exists: true, downloads: r.downloads, task: r.task, library: r.library,
		rows: map[compat.Target]currentRow{}, runtimes: map[int64]compat.Status{}, trains: map[int64]compat.Status{}}
	rows, err := tx.QueryContext(ctx, sqlStateRows, id, withTask)
	if err != nil {
		return st, fmt.Errorf("model state: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			runtime int64
			r       stateRow
		)
		if err := rows.Scan(append([]any{&runtime}, r.dest()...)...); err != nil {
			return st, fmt.Errorf("model state: %w", err)
		}
		st.add(runtime, r)
	}
	return st, rows.Err()
}

// stateRow is a row of sqlStateRows but its first column: a current row,
// or (target ”) the model's status on a runtime and its train verdict's
// (NULL for none).
type stateRow struct {
	target compat.Target
	row    currentRow
	n      newestResult
	train  sql.NullString
}

func (r *stateRow) dest() []any {
	return []any{&r.target, &r.row.rank, &r.row.failKey, &r.n.tested, &r.n.task, &r.n.status, &r.n.reason, &r.train}
}

// add is one row of sqlStateRows: a current row (runtime 0) or the
// model's status on a runtime.
func (st *modelState) add(runtime int64, r stateRow) {
	switch {
	case runtime > 0:
		st.runtimes[runtime] = r.n.status
		if r.train.Valid {
			st.trains[runtime] = compat.Status(r.train.String)
		}
	case r.target == "":
		st.newest = r.n
		fallthrough
	default:
		st.rows[r.target] = r.row
	}
}

// tally is a change of one tallies row: models and their downloads.
type tally struct {
	models    int
	downloads int64
}

func (t *tally) add(sign int, downloads int64) {
	t.models += sign
	t.downloads += int64(sign) * downloads
}

type statusKey struct {
	target compat.Target
	rank   int
}

type failKey struct {
	target compat.Target
	key    string
}

type runtimeKey struct {
	runtime int64
	status  compat.Status
}

// pairKey is a runtime_pairs row, or a train_pairs row (of train
// verdicts' statuses): runtime x < runtime y.
type pairKey struct {
	x, y           int64
	xStatus, yStat compat.Status
}

// tallier gathers, inside one write transaction, the states of the
// models it touches and the tallies' change, and writes the change once
// (flush).
type tallier struct {
	open     map[string]modelState // id → its state before the transaction touched it
	order    []string              // ids in the order first touched
	status   map[statusKey]*tally
	fail     map[failKey]*tally
	task     map[taskKey]*tally
	runtime  map[runtimeKey]*tally
	pairs    map[pairKey]*tally
	trains   map[pairKey]*tally        // train_pairs
	versions map[int64]bool            // runtimes whose models' downloads moved
	moved    map[string]map[int64]bool // id → runtimes its status on changed
	after    map[string]modelState     // id → its state after, for the kept comparisons' lists
	newRuns  bool                      // a result was filed: the runtimes' order may have changed
	// pairShift and trainShift add up the moves of pairs and trains of
	// the models whose statuses stay (shiftRuntimes), until flush
	pairShift, trainShift pairShifts
}

func newTallier() *tallier {
	return &tallier{open: map[string]modelState{}, status: map[statusKey]*tally{}, fail: map[failKey]*tally{}, task: map[taskKey]*tally{},
		runtime: map[runtimeKey]*tally{}, pairs: map[pairKey]*tally{}, trains: map[pairKey]*tally{}, versions: map[int64]bool{},
		moved: map[string]map[int64]bool{}, after: map[string]modelState{}}
}

// begin notes id's state before the transaction changes it (read unless
// given); it does nothing for an id already begun and not yet ended.
func (t *tallier) begin(ctx context.Context, tx *sql.Tx, id string, known *modelState) error {
	if _, ok := t.open[id]; ok {
		return nil
	}
	var st modelState
	if known != nil {
		st = *known
	} else {
		var err error
		if st, err = readModelState(ctx, tx, id); err != nil {
			return err
		}
	}
	t.open[id] = st
	t.order = append(t.order, id)
	return nil
}

// end adds the change of id's contribution from its begun state to its
// state now (read unless given) and closes it.
func (t *tallier) end(ctx context.Context, tx *sql.Tx, id string, known *modelState) error {
	before, ok := t.open[id]
	if !ok {
		return fmt.Errorf("tallies: %s ended without a beginning", id)
	}
	var after modelState
	if known != nil {
		after = *known
	} else {
		var err error
		if after, err = readModelState(ctx, tx, id); err != nil {
			return err
		}
	}
	delete(t.open, id)
	t.diff(id, before, after)
	return nil
}

// endAll ends every model still open, reading its state now.
func (t *tallier) endAll(ctx context.Context, tx *sql.Tx) error {
	for _, id := range t.order {
		if _, ok := t.open[id]; !ok {
			continue
		}
		if err := t.end(ctx, tx, id, nil); err != nil {
			return err
		}
	}
	t.order = t.order[:0]
	return nil
}

// diff adds after's contribution and takes away before's.
func (t *tallier) diff(id string, before, after modelState) {
	t.contribute(before, -1)
	t.contribute(after, +1)
	if maps.Equal(before.runtimes, after.runtimes) && maps.Equal(before.trains, after.trains) {
		// The same statuses (a listing): its runtimes and pairs move by
		// its downloads' change alone.
		t.shiftRuntimes(after, after.downloads-before.downloads)
	} else {
		t.contributeRuntimes(before, -1, after)
		t.contributeRuntimes(after, +1, before)
	}
	moved := map[int64]bool{}
	for _, m := range []func(modelState) map[int64]compat.Status{
		func(s modelState) map[int64]compat.Status { return s.runtimes },
		func(s modelState) map[int64]compat.Status { return s.trains },
	} {
		b, a := m(before), m(after)
		for rt, st := range b {
			if x, ok := a[rt]; !ok || x != st {
				moved[rt] = true
			}
		}
		for rt := range a {
			if _, ok := b[rt]; !ok {
				moved[rt] = true
			}
		}
	}
	if before.downloads != after.downloads {
		for rt := range before.runtimes {
			t.versions[rt] = true
		}
		for rt := range after.runtimes {
			t.versions[rt] = true
		}
	}
	if len(moved) > 0 {
		m := t.moved[id]
		if m == nil {
			m = map[int64]bool{}
			t.moved[id] = m
		}
		maps.Copy(m, moved)
		t.after[id] = after
	}
}

// contribute adds st's current rows and task to the tallies with sign.
func (t *tallier) contribute(st modelState, sign int) {
	if !st.exists {
		return
	}
	for target, row := range st.rows {
		bump(t.status, statusKey{target, row.rank}, sign, st.downloads)
		if row.failKey != "" {
			bump(t.fail, failKey{target, row.failKey}, sign, st.downloads)
		}
	}
	if _, ok := st.rows[""]; ok {
		bump(t.task, taskKeyOf(st), sign, st.downloads)
	}
}

// shiftRuntimes adds delta downloads to every runtime, pair and train
// pair tallies row st counts in.
func (t *tallier) shiftRuntimes(st modelState, delta int64) {
	if delta == 0 {
		return
	}
	ids := slices.Sorted(maps.Keys(st.runtimes))
	for _, x := range ids {
		bump(t.runtime, runtimeKey{x, st.runtimes[x]}, 0, 0).downloads += delta
	}
	t.pairShift.add(ids, st.runtimes, delta)
	t.trainShift.add(slices.Sorted(maps.Keys(st.trains)), st.trains, delta)
}

// pairShifts adds up the downloads that models whose statuses stay move
// in pair tallies rows (runtime_pairs or train_pairs). A listing moves
// thousands of models' downloads, each in every pair of the runtimes it
// has a status on (190 pairs for 20 runtimes): the moves are added in a
// table indexed by small numbers, rather than a tallies row looked up
// each, and folded into the rows once (fold).
type pairShifts struct {
	index map[int64]int // runtime id → its place in ids
	ids   []int64
	// cells[i][j] is the pair of runtimes ids[i] < ids[j]: its downloads
	// by the two statuses' places in compat.Statuses (nil: none yet)
	cells [][]*[statusCount * statusCount]int64
	// other has the pairs with a status outside compat.Statuses
	other map[pairKey]*tally
}

const statusCount = 8 // len(compat.Statuses), checked by a test

// statusPlace is s's place in compat.Statuses, -1 for another word.
func statusPlace(s compat.Status) int {
	for i, v := range compat.Statuses {
		if v == s {
			return i
		}
	}
	return -1
}

// add adds delta to every pair of ids (sorted), by their statuses.
func (ps *pairShifts) add(ids []int64, statuses map[int64]compat.Status, delta int64) {
	if len(ids) < 2 {
		return
	}
	places := make([]int, len(ids))
	kinds := make([]int, len(ids))
	for i, id := range ids {
		places[i] = ps.place(id)
		kinds[i] = statusPlace(statuses[id])
	}
	for i, x := range ids {
		for j := i + 1; j < len(ids); j++ {
			if kinds[i] < 0 || kinds[j] < 0 {
				bump(ps.other, pairKey{x, ids[j], statuses[x], statuses[ids[j]]}, 0, 0).downloads += delta
				continue
			}
			c := ps.cells[places[i]][places[j]]
			if c == nil {
				c = new([statusCount * statusCount]int64)
				ps.cells[places[i]][places[j]] = c
			}
			c[kinds[i]*statusCount+kinds[j]] += delta
		}
	}
}

// place is runtime id's place in ids, given one if it has none.
func (ps *pairShifts) place(id int64) int {
	if i, ok := ps.index[id]; ok {
		return i
	}
	if ps.index == nil {
		ps.index, ps.other = map[int64]int{}, map[pairKey]*tally{}
	}
	ps.index[id] = len(ps.ids)
	ps.ids = append(ps.ids, id)
	for i := range ps.cells {
		ps.cells[i] = append(ps.cells[i], nil)
	}
	ps.cells = append(ps.cells, make([]*[statusCount * statusCount]int64, len(ps.ids)))
	return len(ps.ids) - 1
}

// fold adds the shifts to the tallies rows m.
func (ps *pairShifts) fold(m map[pairKey]*tally) {
	for i, row := range ps.cells {
		for j, c := range row {
			if c == nil {
				continue
			}
			for k, d := range c {
				if d != 0 {
					bump(m, pairKey{ps.ids[i], ps.ids[j], compat.Statuses[k/statusCount], compat.Statuses[k%statusCount]}, 0, 0).downloads += d
				}
			}
		}
	}
	for k, v := range ps.other {
		bump(m, k, 0, 0).downloads += v.downloads
	}
}

// contributeRuntimes adds st's runtime and pair tallies with sign. other
// is the state on the other side of the change: pairs of runtimes whose
// statuses and downloads are the same in both cancel out and are skipped.
func (t *tallier) contributeRuntimes(st modelState, sign int, other modelState) {
	if !st.exists {
		return
	}
	ids := slices.Sorted(maps.Keys(st.runtimes))
	same := func(rt int64) bool {
		o, ok := other.runtimes[rt]
		return other.exists && ok && o == st.runtimes[rt] && other.downloads == st.downloads
	}
	for i, x := range ids {
		bump(t.runtime, runtimeKey{x, st.runtimes[x]}, sign, st.downloads)
		for _, y := range ids[i+1:] {
			if same(x) && same(y) {
				continue
			}
			bump(t.pairs, pairKey{x, y, st.runtimes[x], st.runtimes[y]}, sign, st.downloads)
		}
	}
	ids = slices.Sorted(maps.Keys(st.trains))
	sameTrain := func(rt int64) bool {
		o, ok := other.trains[rt]
		return other.exists && ok && o == st.trains[rt] && other.downloads == st.downloads
	}
	for i, x := range ids {
		for _, y := range ids[i+1:] {
			if sameTrain(x) && sameTrain(y) {
				continue
			}
			bump(t.trains, pairKey{x, y, st.trains[x], st.trains[y]}, sign, st.downloads)
		}
	}
}

// bump adds sign models and sign × downloads to m's row k, and returns it.
func bump[K comparable](m map[K]*tally, k K, sign int, downloads int64) *tally {
	v := m[k]
	if v == nil {
		v = &tally{}
		m[k] = v
	}
	v.add(sign, downloads)
	return v
}

// flush writes the tallies' change, moves the versions of the runtimes
// whose models' downloads moved, settles the kept comparisons with the
// runtimes' order and brings their lists up to date. Every model must
// have ended.
func (t *tallier) flush(ctx context.Context, tx *sql.Tx) error {
	if len(t.open) > 0 {
		return fmt.Errorf("tallies: %d models not ended", len(t.open))
	}
	for k, v := range t.status {
		if err := execTally(ctx, tx, sqlAddStatusTally, v, string(k.target), k.rank); err != nil {
			return err
		}
	}
	for k, v := range t.fail {
		if err := execTally(ctx, tx, sqlAddFailTally, v, string(k.target), k.key); err != nil {
			return err
		}
	}
	for k, v := range t.task {
		if err := execTally(ctx, tx, sqlAddTaskTally, v, k.task, k.library, k.tested, k.rejected); err != nil {
			return err
		}
	}
	for k, v := range t.runtime {
		if err := execTally(ctx, tx, sqlAddRuntimeTally, v, k.runtime, string(k.status)); err != nil {
			return err
		}
	}
	t.pairShift.fold(t.pairs)
	t.trainShift.fold(t.trains)
	for k, v := range t.pairs {
		if err := execTally(ctx, tx, sqlAddPairTally, v, k.x, k.y, string(k.xStatus), string(k.yStat)); err != nil {
			return err
		}
	}
	for k, v := range t.trains {
		if err := execTally(ctx, tx, sqlAddTrainPairTally, v, k.x, k.y, string(k.xStatus), string(k.yStat)); err != nil {
			return err
		}
	}
	for rt := range t.versions {
		if _, err := tx.ExecContext(ctx, sqlBumpRuntimeVersion, rt); err != nil {
			return fmt.Errorf("runtime version: %w", err)
		}
	}
	built := map[[2]int64]bool{}
	if t.newRuns {
		var err error
		if built, _, err = settlePairs(ctx, tx); err != nil {
			return err
		}
	}
	if len(t.moved) > 0 {
		if err := t.updateItems(ctx, tx, built); err != nil {
			return err
		}
	}
	*t = *newTallier()
	return nil
}

// execTally adds v to one tallies row (the query's first two arguments
// are v's models and downloads); a change of nothing is not written.
func execTally(ctx context.Context, tx *sql.Tx, query string, v *tally, key ...any) error {
	if v.models == 0 && v.downloads == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, query, append([]any{v.models, v.downloads}, key...)...); err != nil {
		return fmt.Errorf("tallies: %w", err)
	}
	return nil
}

// updateItems brings the kept comparisons' lists up to date for the
// models whose status moved on one of the two runtimes, but for the
// comparisons built whole in this transaction.
func (t *tallier) updateItems(ctx context.Context, tx *sql.Tx, built map[[2]int64]bool) error {
	pairs, err := keptPairs(ctx, tx)
	if err != nil {
		return err
	}
	for _, p := range pairs {
		if built[p] {
			continue
		}
		for id, moved := range t.moved {
			if !moved[p[0]] && !moved[p[1]] {
				continue
			}
			after := t.after[id]
			if err := setItem(ctx, tx, p, id, after); err != nil {
				return err
			}
		}
	}
	return nil
}

// Tallies: see migrations/*_scale.sql.
const (
	sqlStateModel = `SELECT downloads, task, library FROM models WHERE id = ?`
	// sqlStateRows is a model's current rows (runtime 0), with its newest
	// result's status on the row of any target, and that result's task
	// (when ?2) and reason (when it is skipped: the only status whose
	// reason the tallies read), then its status on each runtime
	// (runtime > 0) with its train verdict's status (NULL for none; the
	// last column, NULL on the current rows). The result is read only
	// when needed: it is the largest table's.
	sqlStateRows = `SELECT 0, c.target, c.status_rank, ifnull(c.fail_key, ''), c.result_id IS NOT NULL, ifnull(r.task, ''),
	ifnull(c.status, ''), ifnull(r.reason, ''), NULL
FROM current c LEFT JOIN results r ON c.target = '' AND (?2 OR c.status = 'skipped') AND r.id = c.result_id
WHERE c.model_id = ?1
UNION ALL
SELECT runtime_id, '', 0, '', 0, '', status, '', train_status FROM runtime_current WHERE model_id = ?1`

	sqlAddStatusTally = `INSERT INTO status_tallies (models, downloads, target, status_rank) VALUES (?, ?, ?, ?)
ON CONFLICT DO UPDATE SET models = models + excluded.models, downloads = downloads + excluded.downloads`
	sqlAddFailTally = `INSERT INTO fail_tallies (models, downloads, target, fail_key) VALUES (?, ?, ?, ?)
ON CONFLICT DO UPDATE SET models = models + excluded.models, downloads = downloads + excluded.downloads`
	sqlAddTaskTally = `INSERT INTO task_tallies (models, downloads, task, library, tested, library_rejected) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT DO UPDATE SET models = models + excluded.models, downloads = downloads + excluded.downloads`
	sqlAddRuntimeTally = `INSERT INTO runtime_tallies (models, downloads, runtime_id, status) VALUES (?, ?, ?, ?)
ON CONFLICT DO UPDATE SET models = models + excluded.models, downloads = downloads + excluded.downloads`
	sqlAddPairTally = `INSERT INTO runtime_pairs (models, downloads, x_id, y_id, x_status, y_status) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT DO UPDATE SET models = models + excluded.models, downloads = downloads + excluded.downloads`
	sqlAddTrainPairTally = `INSERT INTO train_pairs (models, downloads, x_id, y_id, x_train, y_train) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT DO UPDATE SET models = models + excluded.models, downloads = downloads + excluded.downloads`
	sqlBumpRuntimeVersion = `UPDATE runtimes SET version = version + 1 WHERE id = ?`
)
