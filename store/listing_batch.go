package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// A scan's listing names every model it knows, and most of them changed
// in their downloads or likes alone, if at all. Those that changed and
// touch no other model are written together, a statement for them all
// (upsertBatch), rather than a few statements each; the tallies follow
// them as they follow a model written alone (the same states before and
// after, given to the tallier).

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

// upsertBatch writes the batch's models (split) as upsertModel writes
// each, and hands their states before and after to the tallier.
func upsertBatch(ctx context.Context, tx *sql.Tx, t *tallier, l *listing, batch []batched, now int64) error {
	if len(batch) == 0 {
		return nil
	}
	if err := loadBatch(ctx, tx, batch); err != nil {
		return err
	}
	states, err := readBatchStates(ctx, tx, batch)
	if err != nil {
		return err
	}
	var downloads, likes, fill bool // whether any model needs the statement
	for _, b := range batch {
		before := states[b.m.ID] // a new model's: nothing
		if err := t.begin(ctx, tx, b.m.ID, &before); err != nil {
			return err
		}
		after := listedState(b.m, b.exists, before)
		if err := t.end(ctx, tx, b.m.ID, &after); err != nil {
			return err
		}
		downloads = downloads || (b.exists && b.old.downloads != b.row.downloads)
		likes = likes || (b.exists && b.old.likes != b.row.likes)
		fill = fill || len(after.rows) > len(before.rows) // rows it lacked
	}
	for _, w := range []struct {
		query string
		need  bool
		args  []any
	}{
		{sqlBatchModels, true, []any{now}},
		{sqlBatchDownloads, downloads, nil},
		{sqlBatchLikes, likes, nil},
		{sqlBatchFill, fill, []any{listTargetsJSON}},
		{sqlBatchClear, true, nil},
	} {
		if !w.need {
			continue
		}
		if _, err := tx.ExecContext(ctx, w.query, w.args...); err != nil {
			return fmt.Errorf("listing batch: %w", err)
		}
	}
	for _, b := range batch {
		l.setRow(b.m.ID, b.row)
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
		withTask := b.exists && (b.old.task == "" || r.task == "") // as upsertModel reads its state
		if _, err := stmt.ExecContext(ctx, b.m.ID, orgOf(b.m.ID), r.task, r.library, r.downloads, r.likes, r.gated,
			r.sha, r.tags, r.lastModified, withTask); err != nil {
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
	for _, b := range batch {
		if b.exists {
			states[b.m.ID] = modelState{exists: true, downloads: b.old.downloads, task: b.old.task, library: b.old.library,
				rows: map[compat.Target]currentRow{}, runtimes: map[int64]compat.Status{}, trains: map[int64]compat.Status{}}
		}
	}
	of := func(id string) (modelState, error) {
		st, ok := states[id]
		if !ok {
			return st, fmt.Errorf("listing batch: model states: %s has rows but no model row", id)
		}
		return st, nil
	}
	rows, err := tx.QueryContext(ctx, sqlBatchStateRows)
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
	rows, err = tx.QueryContext(ctx, sqlBatchRuntimes)
	if err != nil {
		return nil, fmt.Errorf("listing batch: model states: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, runtimes string
		if err := rows.Scan(&id, &runtimes); err != nil {
			return nil, fmt.Errorf("listing batch: model states: %w", err)
		}
		st, err := of(id)
		if err != nil {
			return nil, err
		}
		if err := st.addRuntimes(runtimes); err != nil {
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
	last_modified INTEGER,
	with_task     INTEGER NOT NULL
)`
	sqlBatchRow = `INSERT INTO temp.listing_batch (id, org, task, library, downloads, likes, gated, sha, tags, last_modified, with_task)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlBatchClear = `DELETE FROM temp.listing_batch`
	// sqlBatchStateRows is the current rows of sqlStateRows of every
	// model of the batch, each with its model's id first; sqlBatchRuntimes
	// its statuses on runtimes, one row per model (a model has one on
	// most runtimes: a row each would be twenty).
	sqlBatchStateRows = `SELECT b.id, c.target, c.status_rank, ifnull(c.fail_key, ''), c.result_id IS NOT NULL, ifnull(r.task, ''),
	ifnull(c.status, ''), ifnull(r.reason, ''), NULL
FROM temp.listing_batch b CROSS JOIN current c ON c.model_id = b.id
LEFT JOIN results r ON c.target = '' AND (b.with_task OR c.status = 'skipped') AND r.id = c.result_id`
	sqlBatchRuntimes = `SELECT b.id, group_concat(rc.runtime_id || ' ' || rc.status || ' ' || ifnull(rc.train_status, ''), ',')
FROM temp.listing_batch b CROSS JOIN runtime_current rc ON rc.model_id = b.id GROUP BY b.id`
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
