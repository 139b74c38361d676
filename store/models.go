package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// orgOf is the part of a Hub id before "/", "" for a legacy one-part id.
func orgOf(id string) string {
	org, _, ok := strings.Cut(id, "/")
	if !ok {
		return ""
	}
	return org
}

// listTargets are the targets that current has a row for per model:
// every concrete one, and "" for "any target".
var listTargets = append([]compat.Target{""}, compat.Targets...)

// listTargetsJSON is listTargets as a JSON array, for sqlEnsureCurrent.
var listTargetsJSON = func() string {
	b, err := json.Marshal(listTargets)
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// validTarget accepts a concrete target, or "" where any is allowed.
func validTarget(t compat.Target, allowAny bool) error {
	if (t == "" && allowAny) || slices.Contains(compat.Targets, t) {
		return nil
	}
	return fmt.Errorf("%w: target %q (want tpu, cpu, cuda or none)", ErrInvalid, t)
}

// UpsertModels inserts or updates models in one transaction. A model whose
// data did not change is not written. Each alias (an old id the Hub
// redirects to the model) is pointed at the model; if the old id was itself
// a known model, its results, events and aliases move to the new id and the
// old row goes (the rename is one model's history). An id that had been an
// alias stops being one.
func (s *SQLite) UpsertModels(ctx context.Context, models []ModelUpsert) error {
	var early *plannedListing
	if len(models) >= bulkListing { // a scan's listing: a large write
		var err error
		if early, err = s.planEarly(ctx, models); err != nil {
			return fmt.Errorf("store: upsert models: %w", err)
		}
		s.ckpt.settle() // the last large write's checkpoint first
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: upsert models: %w", err)
	}
	defer tx.Rollback()
	now := unixNano(s.now())
	p, err := early.stillHolds(ctx, tx)
	if err == nil && p == nil { // not planned, or written since: plan again
		if early != nil {
			plannedAgain()
		}
		p, err = planListing(ctx, tx, models)
	}
	if err != nil {
		return fmt.Errorf("store: upsert models: %w", err)
	}
	if err := writeBatch(ctx, tx, p, now); err != nil {
		return fmt.Errorf("store: upsert models: %w", err)
	}
	for _, m := range p.rest {
		if err := upsertModel(ctx, tx, p.t, p.l, m, now); err != nil {
			return fmt.Errorf("store: upsert models: %s: %w", m.ID, err)
		}
	}
	if err := p.t.flush(ctx, tx); err != nil {
		return fmt.Errorf("store: upsert models: %w", err)
	}
	if err := s.touch(ctx, tx); err != nil {
		return fmt.Errorf("store: upsert models: %w", err)
	}
	commit := func() error { return s.commit(tx) }
	if p.l.rows != nil { // a scan's listing: a large write
		commit = func() error { return s.commitAside(ctx, tx) }
	}
	if err := commit(); err != nil {
		return fmt.Errorf("store: upsert models: %w", err)
	}
	return nil
}

// listedRow is what a listing sets of a models row.
type listedRow struct {
	task, library string
	downloads     int64
	likes         int64
	gated         bool
	sha           string
	tags          sql.NullString
	lastModified  sql.NullInt64
}

func (r *listedRow) dest() []any {
	return []any{&r.task, &r.library, &r.downloads, &r.likes, &r.gated, &r.sha, &r.tags, &r.lastModified}
}

// bulkListing is the size from which an upsert reads every model's listed
// row and every alias at once (a scan's listing), rather than asking per
// model: one pass over the models instead of a lookup each.
var bulkListing = 1000 // a variable for the tests, which set it lower

// listing answers an upsert's questions about what is stored: a model's
// listed row, and whether an id may be an alias. Small upserts ask the
// database per model; large ones hold every model and alias, kept in step
// with the upsert's own writes.
type listing struct {
	rows    map[string]listedRow // by id; nil: ask the database
	aliases map[string]bool      // aliases, ASCII-lowercased (NOCASE); nil: ask the database
}

func newListing(ctx context.Context, tx *sql.Tx, n int) (*listing, error) {
	l := &listing{}
	if n < bulkListing {
		return l, nil
	}
	l.rows, l.aliases = map[string]listedRow{}, map[string]bool{}
	rows, err := tx.QueryContext(ctx, sqlListedRows)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var (
			id string
			r  listedRow
		)
		if err := rows.Scan(append([]any{&id}, r.dest()...)...); err != nil {
			rows.Close()
			return nil, err
		}
		l.rows[id] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = tx.QueryContext(ctx, sqlAliases)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		l.aliases[asciiLower(a)] = true
	}
	return l, rows.Err()
}

// row is model id's listed row; false when there is no such model.
func (l *listing) row(ctx context.Context, tx *sql.Tx, id string) (listedRow, bool, error) {
	if l.rows != nil {
		r, ok := l.rows[id]
		return r, ok, nil
	}
	var r listedRow
	err := tx.QueryRowContext(ctx, sqlListedRow, id).Scan(r.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	return r, err == nil, err
}

// exists reports whether id is a model's id.
func (l *listing) exists(ctx context.Context, tx *sql.Tx, id string) (bool, error) {
	if l.rows != nil {
		_, ok := l.rows[id]
		return ok, nil
	}
	var n int
	err := tx.QueryRowContext(ctx, sqlModelExists, id).Scan(&n)
	return n > 0, err
}

// mayBeAlias reports whether id may be an alias (in any ASCII case).
func (l *listing) mayBeAlias(id string) bool {
	return l.aliases == nil || (len(l.aliases) > 0 && l.aliases[asciiLower(id)])
}

func (l *listing) setRow(id string, r listedRow) {
	if l.rows != nil {
		l.rows[id] = r
	}
}

func (l *listing) dropRow(id string) {
	if l.rows != nil {
		delete(l.rows, id)
	}
}

func (l *listing) addAlias(a string) {
	if l.aliases != nil {
		l.aliases[asciiLower(a)] = true
	}
}

// asciiLower folds ASCII letters only, as SQLite's NOCASE collation does.
func asciiLower(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return 'A' <= r && r <= 'Z' }) {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// upsertModel writes m unless its row holds the same already, and its
// current rows' copies of downloads and likes; then m's aliases (merging
// an alias that was a model of its own). The tallies follow: a model
// whose results did not move (no merge) changes them by its downloads,
// task and library alone.
func upsertModel(ctx context.Context, tx *sql.Tx, t *tallier, l *listing, m ModelUpsert, now int64) error {
	if m.ID == "" {
		return fmt.Errorf("%w: model without id", ErrInvalid)
	}
	row, err := listedRowOf(m)
	if err != nil {
		return err
	}
	old, exists, err := l.row(ctx, tx, m.ID)
	if err != nil {
		return err
	}
	merging := false
	for _, alias := range m.Aliases {
		if alias == "" || strings.EqualFold(alias, m.ID) {
			continue
		}
		is, err := l.exists(ctx, tx, alias)
		if err != nil {
			return err
		}
		merging = merging || is
	}
	changed := !exists || old != row
	var before modelState
	switch {
	case merging:
		if err := t.begin(ctx, tx, m.ID, nil); err != nil {
			return err
		}
	case changed && exists:
		if before, err = readModelStateOf(ctx, tx, m.ID, &old, old.task == "" || m.Task == ""); err != nil {
			return err
		}
		if err := t.begin(ctx, tx, m.ID, &before); err != nil {
			return err
		}
	case changed:
		if err := t.begin(ctx, tx, m.ID, &before); err != nil { // a new model: nothing before
			return err
		}
	}
	if changed {
		if _, err := tx.ExecContext(ctx, sqlUpsertModel, m.ID, orgOf(m.ID), m.Task, m.Library, m.Downloads, m.Likes,
			m.Gated, m.SHA, row.tags, row.lastModified, now, now); err != nil {
			return err
		}
		if err := listCurrent(ctx, tx, m, exists, old, before); err != nil {
			return err
		}
		l.setRow(m.ID, row)
	}
	if l.mayBeAlias(m.ID) {
		if _, err := tx.ExecContext(ctx, sqlDropAlias, m.ID); err != nil {
			return err
		}
	}
	for _, alias := range m.Aliases {
		if alias == "" || strings.EqualFold(alias, m.ID) {
			continue
		}
		is, err := l.exists(ctx, tx, alias)
		if err != nil {
			return err
		}
		if is {
			if err := mergeModel(ctx, tx, t, alias, m.ID); err != nil {
				return fmt.Errorf("merge %s: %w", alias, err)
			}
			l.dropRow(alias)
		}
		if _, err := tx.ExecContext(ctx, sqlUpsertAlias, alias, m.ID); err != nil {
			return err
		}
		l.addAlias(alias)
	}
	switch {
	case merging:
		return t.end(ctx, tx, m.ID, nil)
	case changed:
		after := listedState(m, exists, before)
		return t.end(ctx, tx, m.ID, &after)
	}
	return nil
}

// listedRowOf is the models row that listing m sets.
func listedRowOf(m ModelUpsert) (listedRow, error) {
	row := listedRow{task: m.Task, library: m.Library, downloads: m.Downloads, likes: m.Likes, gated: m.Gated,
		sha: m.SHA, lastModified: nullTime(m.LastModified)}
	if len(m.Tags) > 0 {
		tags, err := stringsJSON(m.Tags)
		if err != nil {
			return row, err
		}
		row.tags = sql.NullString{String: tags, Valid: true}
	}
	return row, nil
}

// listedState is the tallies' state of model m once its listing changed
// its row: a new model's (!exists), or before's with m's downloads, task
// and library and a row on every target.
func listedState(m ModelUpsert, exists bool, before modelState) modelState {
	if !exists {
		return newModelState(m.Downloads, m.Task, m.Library)
	}
	after := before.with(m.Downloads, m.Task, m.Library)
	after.rows = maps.Clone(before.rows) // before's stay as they were
	for _, target := range listTargets { // rows the listing just gave it
		if _, ok := after.rows[target]; !ok {
			after.rows[target] = currentRow{rank: statusRank(compat.StatusUntested)}
		}
	}
	return after
}

// listCurrent keeps model m's current rows in step with its listing: a
// row on every target, with copies of its downloads and likes. A model
// known before (old, its row; before, its state) with a row on every
// target has only the copies that changed rewritten, each by itself, so
// that only the indexes holding that column move.
func listCurrent(ctx context.Context, tx *sql.Tx, m ModelUpsert, exists bool, old listedRow, before modelState) error {
	if !exists || len(before.rows) < len(listTargets) {
		_, err := tx.ExecContext(ctx, sqlEnsureCurrent, listTargetsJSON, m.ID, m.Downloads, m.Likes)
		return err
	}
	if old.downloads != m.Downloads {
		if _, err := tx.ExecContext(ctx, sqlCurrentDownloads, m.ID, m.Downloads); err != nil {
			return err
		}
	}
	if old.likes != m.Likes {
		if _, err := tx.ExecContext(ctx, sqlCurrentLikes, m.ID, m.Likes); err != nil {
			return err
		}
	}
	return nil
}

// mergeModel moves the history of model old to model into and deletes old.
func mergeModel(ctx context.Context, tx *sql.Tx, t *tallier, old, into string) error {
	if err := t.begin(ctx, tx, old, nil); err != nil {
		return err
	}
	if err := addFit(ctx, tx, old, -1); err != nil {
		return err
	}
	for _, q := range []string{sqlMergeResults, sqlMergeEvents, sqlMergeAliases} {
		if _, err := tx.ExecContext(ctx, q, into, old); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, sqlDeleteModel, old); err != nil {
		return err
	}
	if err := rebuildCurrent(ctx, tx, into); err != nil {
		return err
	}
	if err := rebuildRuntimeCurrent(ctx, tx, into); err != nil {
		return err
	}
	return t.end(ctx, tx, old, &modelState{}) // gone
}

// rebuildCurrent points a model's current rows at its newest results.
func rebuildCurrent(ctx context.Context, tx *sql.Tx, id string) error {
	if _, err := tx.ExecContext(ctx, sqlResetCurrent, statusRank(compat.StatusUntested), id); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, sqlNewestPerTarget, id)
	if err != nil {
		return err
	}
	type newest struct {
		target compat.Target
		shown
	}
	var all []newest
	for rows.Next() {
		var (
			n      newest
			tokens sql.NullFloat64
			sig    sql.NullString
			class  sql.NullString
			op     sql.NullString
		)
		if err := rows.Scan(&n.id, &n.target, &n.status, &n.tested, &tokens, &sig, &class, &op); err != nil {
			rows.Close()
			return err
		}
		if tokens.Valid {
			n.tokens = &tokens.Float64
		}
		n.signature, n.class, n.op = fromNullStr[string](sig), fromNullStr[compat.FailureClass](class), fromNullStr[string](op)
		all = append(all, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var top *newest
	for i, n := range all {
		if top == nil || n.tested > top.tested || (n.tested == top.tested && n.id > top.id) {
			top = &all[i]
		}
	}
	if top != nil {
		all = append(all, *top)
		all[len(all)-1].target = ""
	}
	for _, n := range all {
		if err := setCurrent(ctx, tx, id, n.target, n.shown); err != nil {
			return err
		}
	}
	return nil
}

// GetModel returns the model known as id (its id, an alias, or its id in
// another letter case) with its aliases and its current result on target
// ("" = its newest result on any target; Result nil when none). The error
// wraps ErrNotFound for an unknown model, ErrInvalid for an unknown target.
func (s *SQLite) GetModel(ctx context.Context, id string, target compat.Target) (compat.Model, error) {
	if err := validTarget(target, true); err != nil {
		return compat.Model{}, fmt.Errorf("store: get model: %w", err)
	}
	tx, err := s.r.BeginTx(ctx, nil) // one snapshot for the three reads
	if err != nil {
		return compat.Model{}, fmt.Errorf("store: get model: %w", err)
	}
	defer tx.Rollback()
	m, err := getModel(ctx, tx, id, target)
	if err != nil {
		return compat.Model{}, fmt.Errorf("store: get model: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return compat.Model{}, fmt.Errorf("store: get model: %w", err)
	}
	return m, nil
}

func getModel(ctx context.Context, tx *sql.Tx, id string, target compat.Target) (compat.Model, error) {
	canon, err := resolveModel(ctx, tx, id)
	if err != nil {
		return compat.Model{}, err
	}
	var mr modelRow
	if err := tx.QueryRowContext(ctx, sqlGetModel, canon).Scan(mr.dest()...); err != nil {
		return compat.Model{}, err
	}
	m, err := mr.model()
	if err != nil {
		return compat.Model{}, err
	}
	rows, err := tx.QueryContext(ctx, sqlModelAliases, canon)
	if err != nil {
		return compat.Model{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return compat.Model{}, err
		}
		m.Aliases = append(m.Aliases, a)
	}
	if err := rows.Err(); err != nil {
		return compat.Model{}, err
	}
	res, err := scanResults(tx.QueryContext(ctx, sqlCurrentResult, canon, string(target)))
	if err != nil {
		return compat.Model{}, err
	}
	if len(res) > 0 {
		m.Result = &res[0]
	}
	return m, nil
}

// CurrentResults returns the current result of the model known as id on
// each target it has one on (tpu, cpu, cuda order); empty when none. The
// error wraps ErrNotFound for an unknown model.
func (s *SQLite) CurrentResults(ctx context.Context, id string) ([]compat.Result, error) {
	canon, err := resolveModel(ctx, s.r, id)
	if err != nil {
		return nil, fmt.Errorf("store: current results: %w", err)
	}
	res, err := scanResults(s.r.QueryContext(ctx, sqlCurrentResults, canon))
	if err != nil {
		return nil, fmt.Errorf("store: current results: %w", err)
	}
	return res, nil
}

// History returns the results of the model known as id, newest first, on
// target ("" = all), at most limit (0 = 100, capped at 1000); empty when
// none. The error wraps ErrNotFound for an unknown model.
func (s *SQLite) History(ctx context.Context, id string, target compat.Target, limit int) ([]compat.Result, error) {
	if err := validTarget(target, true); err != nil {
		return nil, fmt.Errorf("store: history: %w", err)
	}
	canon, err := resolveModel(ctx, s.r, id)
	if err != nil {
		return nil, fmt.Errorf("store: history: %w", err)
	}
	limit = clampLimit(limit, 100)
	var res []compat.Result
	if target == "" {
		res, err = scanResults(s.r.QueryContext(ctx, sqlHistory, canon, limit))
	} else {
		res, err = scanResults(s.r.QueryContext(ctx, sqlHistoryTarget, canon, string(target), limit))
	}
	if err != nil {
		return nil, fmt.Errorf("store: history: %w", err)
	}
	return res, nil
}

// LatestResult is the newest result (by tested_at) of the model known as id
// on target ("" = any). The error wraps ErrNotFound for an unknown model or
// when it has no result there.
func (s *SQLite) LatestResult(ctx context.Context, id string, target compat.Target) (compat.Result, error) {
	if err := validTarget(target, true); err != nil {
		return compat.Result{}, fmt.Errorf("store: latest result: %w", err)
	}
	canon, err := resolveModel(ctx, s.r, id)
	if err != nil {
		return compat.Result{}, fmt.Errorf("store: latest result: %w", err)
	}
	res, err := scanResults(s.r.QueryContext(ctx, sqlCurrentResult, canon, string(target)))
	if err != nil {
		return compat.Result{}, fmt.Errorf("store: latest result: %w", err)
	}
	if len(res) == 0 {
		return compat.Result{}, fmt.Errorf("store: latest result: %s on %q: %w", canon, target, ErrNotFound)
	}
	return res[0], nil
}

// clampLimit maps 0 or less to def and caps at 1000.
func clampLimit(limit, def int) int {
	if limit <= 0 {
		return def
	}
	return min(limit, 1000)
}

// notFound turns sql.ErrNoRows into ErrNotFound.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return err
}
