package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// A scan's listing names every model it knows, and most of them changed
// in their downloads or likes alone, if at all. Those that changed and
// touch no other model are written together, a statement for them all
// (writeBatch), rather than a few statements each; the tallies follow
// them as they follow a model written alone (the same states before and
// after, given to the tallier).
//
// A listing is planned before it is written (planListing): every model's
// stored row read, the changed ones sorted out, their states read and the
// tallies' change worked out. A scan's listing plans in a read
// transaction, before it takes the write lock (planEarly): a second of
// reads that keeps no write waiting, and runs beside the last listing's
// checkpoint. The write transaction uses that plan only if nothing was
// written since (stillHolds), and plans again otherwise.

// batchListing says whether large upserts write in batches: a variable
// for the tests, which compare both ways.
var batchListing = true

// batched is a model of a listing written with the others: its listed
// row, and the row it had (exists: it had one).
type batched struct {
	m        ModelUpsert
	row, old listedRow
	exists   bool
}

// split sorts the models of an upsert that reads every model at once:
// those whose row changed and that touch no other model (listed once,
// no aliases, neither an alias nor named as one) are written together
// (batch); the rest are written one by one, in their order (rest). A
// model whose row holds the same already and touches no other is in
// neither: writing it would change nothing. A small upsert is all rest.
func (l *listing) split(models []ModelUpsert) (batch []batched, rest []ModelUpsert) {
	if l.rows == nil || !batchListing {
		return nil, models
	}
	listed := make(map[string]int, len(models))
	named := map[string]bool{} // aliases this listing names, ASCII-lowercased
	for _, m := range models {
		listed[m.ID]++
		for _, a := range aliasesOf(m) {
			named[asciiLower(a)] = true
		}
	}
	for _, m := range models {
		if m.ID == "" || listed[m.ID] > 1 || len(aliasesOf(m)) > 0 || (len(named) > 0 && named[asciiLower(m.ID)]) || l.mayBeAlias(m.ID) {
			rest = append(rest, m)
			continue
		}
		row, err := listedRowOf(m)
		if err != nil {
			rest = append(rest, m) // upsertModel says why
			continue
		}
		old, exists := l.rows[m.ID]
		if exists && old == row {
			continue
		}
		batch = append(batch, batched{m: m, row: row, old: old, exists: exists})
	}
	return batch, rest
}

// aliasesOf is m's aliases but those that are m's own id in any case.
func aliasesOf(m ModelUpsert) []string {
	var as []string
	for _, a := range m.Aliases {
		if a != "" && !strings.EqualFold(a, m.ID) {
			as = append(as, a)
		}
	}
	return as
}

// plannedListing is an upsert sorted out before its writes: what is
// stored of the models (l), the models written in a batch and the rest
// (split), and the tallies' change of the batch's models (t, which the
// rest's writes go on adding to).
type plannedListing struct {
	changed int64 // the data's version (sqlChanged) the plan was read at
	l       *listing
	batch   []batched
	rest    []ModelUpsert
	t       *tallier
	// the statements the batch needs beside its models rows: downloads
	// or likes moved, rows on targets to add
	downloads, likes, fill bool
}

// planListing reads what upsert of models needs to know and sorts it out
// (in tx, a read or the write transaction): the listing, its split, the
// batch's states before and after, and their tallies.
func planListing(ctx context.Context, tx *sql.Tx, models []ModelUpsert) (*plannedListing, error) {
	p := &plannedListing{t: newTallier()}
	if err := tx.QueryRowContext(ctx, sqlChanged).Scan(&p.changed); err != nil {
		return nil, err
	}
	var err error
	if p.l, err = newListing(ctx, tx, len(models)); err != nil {
		return nil, err
	}
	p.batch, p.rest = p.l.split(models)
	if len(p.batch) == 0 {
		return p, nil
	}
	states, err := readBatchStates(ctx, tx, p.batch)
	if err != nil {
		return nil, err
	}
	for _, b := range p.batch {
		before := states[b.m.ID] // a new model's: nothing
		if err := p.t.begin(ctx, tx, b.m.ID, &before); err != nil {
			return nil, err
		}
		after := listedState(b.m, b.exists, before)
		if err := p.t.end(ctx, tx, b.m.ID, &after); err != nil {
			return nil, err
		}
		p.downloads = p.downloads || (b.exists && b.old.downloads != b.row.downloads)
		p.likes = p.likes || (b.exists && b.old.likes != b.row.likes)
		p.fill = p.fill || len(after.rows) > len(before.rows) // rows it lacked
	}
	return p, nil
}

// planEarly plans a scan's listing in a read transaction, before the
// write lock: its reads (every model, the changed models' states) then
// keep no write waiting, and run beside the last listing's checkpoint.
// The write transaction uses the plan if nothing was written since
// (stillHolds).
func (s *SQLite) planEarly(ctx context.Context, models []ModelUpsert) (*plannedListing, error) {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	p, err := planListing(ctx, tx, models)
	if err != nil {
		return nil, err
	}
	plannedEarly()
	return p, nil
}

// plannedEarly is called once a listing is planned early, plannedAgain
// when its plan did not hold: hooks for the tests.
var plannedEarly, plannedAgain = func() {}, func() {}

// stillHolds returns p if the data is at the version p was read at in
// tx, the write transaction (every write moves it: touch), and nil if p
// is nil or something was written since.
func (p *plannedListing) stillHolds(ctx context.Context, tx *sql.Tx) (*plannedListing, error) {
	if p == nil {
		return nil, nil
	}
	var changed int64
	if err := tx.QueryRowContext(ctx, sqlChanged).Scan(&changed); err != nil {
		return nil, err
	}
	if changed != p.changed {
		return nil, nil
	}
	return p, nil
}

// writeBatch writes p's batch (split) as upsertModel writes each model.
func writeBatch(ctx context.Context, tx *sql.Tx, p *plannedListing, now int64) error {
	if len(p.batch) == 0 {
		return nil
	}
	if err := loadBatch(ctx, tx, p.batch); err != nil {
		return err
	}
	for _, w := range []struct {
		query string
		need  bool
		args  []any
	}{
		{sqlBatchModels, true, []any{now}},
		{sqlBatchDownloads, p.downloads, nil},
		{sqlBatchLikes, p.likes, nil},
		{sqlBatchFill, p.fill, []any{listTargetsJSON}},
		{sqlBatchClear, true, nil},
	} {
		if !w.need {
			continue
		}
		if _, err := tx.ExecContext(ctx, w.query, w.args...); err != nil {
			return fmt.Errorf("listing batch: %w", err)
		}
	}
	for _, b := range p.batch {
		p.l.setRow(b.m.ID, b.row)
	}
	return nil
}

// loadBatch fills the temporary table listing_batch with the batch.
func loadBatch(ctx context.Context, tx *sql.Tx, batch []batched) error {
	if _, err := tx.ExecContext(ctx, sqlBatchTable); err != nil {
		return fmt.Errorf("listing batch: %w", err)
	}
	stmt, err := tx.PrepareContext(ctx, sqlBatchRow)
	if err != nil {
		return fmt.Errorf("listing batch: %w", err)
	}
	defer stmt.Close()
	for _, b := range batch {
		r := b.row
		if _, err := stmt.ExecContext(ctx, b.m.ID, orgOf(b.m.ID), r.task, r.library, r.downloads, r.likes, r.gated,
			r.sha, r.tags, r.lastModified); err != nil {
			return fmt.Errorf("listing batch: %s: %w", b.m.ID, err)
		}
	}
	return nil
}

// readBatchStates reads the states of the batch's models that exist, as
// readModelStateOf reads one's: their current rows, then their statuses
// on the runtimes, a row per model.
func readBatchStates(ctx context.Context, tx *sql.Tx, batch []batched) (map[string]modelState, error) {
	states := make(map[string]modelState, len(batch))
	ids, withTask := []string{}, []string{} // JSON arrays, never null
	for _, b := range batch {
		if b.exists {
			states[b.m.ID] = modelState{exists: true, downloads: b.old.downloads, task: b.old.task, library: b.old.library,
				rows: map[compat.Target]currentRow{}, runtimes: map[int64]compat.Status{}, trains: map[int64]compat.Status{}}
			ids = append(ids, b.m.ID)
			if b.old.task == "" || b.row.task == "" { // as upsertModel reads its state
				withTask = append(withTask, b.m.ID)
			}
		}
	}
	if len(ids) == 0 {
		return states, nil
	}
	// In the order of the indexes read (model_id first), not the
	// listing's (by downloads): a leaf page read for one model serves the
	// next ones. On the bench's database the current rows of 10 000
	// models missed SQLite's page cache 19 000 times in id order, 50 000
	// in the listing's, and took a quarter of the time.
	slices.Sort(ids)
	idsJSON, err := stringsJSON(ids)
	if err != nil {
		return nil, err
	}
	withTaskJSON, err := stringsJSON(withTask)
	if err != nil {
		return nil, err
	}
	of := func(id string) (modelState, error) {
		st, ok := states[id]
		if !ok {
			return st, fmt.Errorf("listing batch: model states: %s has rows but no model row", id)
		}
		return st, nil
	}
	rows, err := tx.QueryContext(ctx, sqlBatchStateRows, idsJSON, withTaskJSON)
	if err != nil {
		return nil, fmt.Errorf("listing batch: model states: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id string
			r  stateRow
		)
		if err := rows.Scan(append([]any{&id}, r.dest()...)...); err != nil {
			return nil, fmt.Errorf("listing batch: model states: %w", err)
		}
		st, err := of(id)
		if err != nil {
			return nil, err
		}
		st.add(0, r)
		states[id] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing batch: model states: %w", err)
	}
	rows, err = tx.QueryContext(ctx, sqlBatchRuntimes, idsJSON)
	if err != nil {
		return nil, fmt.Errorf("listing batch: model states: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id       string
			runtimes sql.NullString
		)
		if err := rows.Scan(&id, &runtimes); err != nil {
			return nil, fmt.Errorf("listing batch: model states: %w", err)
		}
		if !runtimes.Valid {
			continue // on no runtime
		}
		st, err := of(id)
		if err != nil {
			return nil, err
		}
		if err := st.addRuntimes(runtimes.String); err != nil {
			return nil, fmt.Errorf("listing batch: model states: %s: %w", id, err)
		}
	}
	return states, rows.Err()
}

// addRuntimes adds a model's statuses on runtimes, as sqlBatchRuntimes
// lists them: "id status train" triples (train "" for no train verdict),
// comma-separated.
func (st *modelState) addRuntimes(list string) error {
	for triple := range strings.SplitSeq(list, ",") {
		id, rest, ok := strings.Cut(triple, " ")
		status, train, ok2 := strings.Cut(rest, " ")
		rt, err := strconv.ParseInt(id, 10, 64)
		if !ok || !ok2 || err != nil || rt <= 0 {
			return fmt.Errorf("runtime status %q", triple)
		}
		st.add(rt, stateRow{n: newestResult{status: compat.Status(status)}, train: sql.NullString{String: train, Valid: train != ""}})
	}
	return nil
}

const (
	// sqlBatchTable is the temporary table of a listing's batch (one per
	// connection; emptied before the transaction ends).
	sqlBatchTable = `CREATE TEMP TABLE IF NOT EXISTS listing_batch (
	id            TEXT PRIMARY KEY,
	org           TEXT NOT NULL,
	task          TEXT NOT NULL,
	library       TEXT NOT NULL,
	downloads     INTEGER NOT NULL,
	likes         INTEGER NOT NULL,
	gated         INTEGER NOT NULL,
	sha           TEXT NOT NULL,
	tags          TEXT,
	last_modified INTEGER
)`
	sqlBatchRow = `INSERT INTO temp.listing_batch (id, org, task, library, downloads, likes, gated, sha, tags, last_modified)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlBatchClear = `DELETE FROM temp.listing_batch`
	// sqlBatchStateRows is the current rows of sqlStateRows of the models
	// of a JSON array of ids (?1), each with its model's id first, the
	// task of the newest result read for those of the array ?2;
	// sqlBatchRuntimes their statuses on runtimes, one row per model (a
	// model has one on most runtimes: a row each would be twenty). They
	// read in a read transaction too: the ids are an argument, not the
	// temporary table.
	sqlBatchStateRows = `SELECT b.value, c.target, c.status_rank, ifnull(c.fail_key, ''), c.result_id IS NOT NULL, ifnull(r.task, ''),
	ifnull(c.status, ''), ifnull(r.reason, ''), NULL
FROM json_each(?1) b CROSS JOIN current c ON c.model_id = b.value
LEFT JOIN results r ON c.target = '' AND (c.status = 'skipped' OR b.value IN (SELECT value FROM json_each(?2))) AND r.id = c.result_id`
	sqlBatchRuntimes = `SELECT b.value, (SELECT group_concat(rc.runtime_id || ' ' || rc.status || ' ' || ifnull(rc.train_status, ''), ',')
	FROM runtime_current rc WHERE rc.model_id = b.value)
FROM json_each(?1) b`
	// sqlBatchModels writes the batch's models rows (?1: now), as
	// sqlUpsertModel writes one.
	sqlBatchModels = `INSERT INTO models (id, org, task, library, downloads, likes, gated, sha, tags, last_modified, first_seen, updated_at)
SELECT id, org, task, library, downloads, likes, gated, sha, tags, last_modified, ?1, ?1 FROM temp.listing_batch WHERE true` + upsertModelSet
	// sqlBatchDownloads and sqlBatchLikes keep the copies of one column
	// in the batch's current rows in step (sqlCurrentDownloads, Likes);
	// sqlBatchFill gives every model of the batch a row on each target
	// of a JSON array (?1) that it lacks (sqlEnsureCurrent).
	// The queries name the batch's rows first (CROSS JOIN, IN): the
	// temporary table has no statistics, and the planner would rather
	// scan every current row than look up each of the batch's.
	sqlBatchDownloads = `UPDATE current SET downloads = (SELECT b.downloads FROM temp.listing_batch b WHERE b.id = current.model_id)
WHERE model_id IN (SELECT id FROM temp.listing_batch)
	AND downloads <> (SELECT b.downloads FROM temp.listing_batch b WHERE b.id = current.model_id)`
	sqlBatchLikes = `UPDATE current SET likes = (SELECT b.likes FROM temp.listing_batch b WHERE b.id = current.model_id)
WHERE model_id IN (SELECT id FROM temp.listing_batch)
	AND likes <> (SELECT b.likes FROM temp.listing_batch b WHERE b.id = current.model_id)`
	sqlBatchFill = `INSERT INTO current (target, model_id, downloads, likes)
SELECT t.value, b.id, b.downloads, b.likes FROM temp.listing_batch b, json_each(?1) t
WHERE NOT EXISTS (SELECT 1 FROM current c WHERE c.target = t.value AND c.model_id = b.id)`
)
