package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: upsert models: %w", err)
	}
	defer tx.Rollback()
	now := unixNano(s.now())
	t := newTallier()
	for _, m := range models {
		if err := upsertModel(ctx, tx, t, m, now); err != nil {
			return fmt.Errorf("store: upsert models: %s: %w", m.ID, err)
		}
	}
	if err := t.flush(ctx, tx); err != nil {
		return fmt.Errorf("store: upsert models: %w", err)
	}
	if err := s.touch(ctx, tx); err != nil {
		return fmt.Errorf("store: upsert models: %w", err)
	}
	if err := tx.Commit(); err != nil {
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

// upsertModel writes m unless its row holds the same already, and its
// current rows' copies of downloads and likes; then m's aliases (merging
// an alias that was a model of its own). The tallies follow: a model
// whose results did not move (no merge) changes them by its downloads,
// task and library alone, known without reading its results.
func upsertModel(ctx context.Context, tx *sql.Tx, t *tallier, m ModelUpsert, now int64) error {
	if m.ID == "" {
		return fmt.Errorf("%w: model without id", ErrInvalid)
	}
	row := listedRow{task: m.Task, library: m.Library, downloads: m.Downloads, likes: m.Likes, gated: m.Gated,
		sha: m.SHA, lastModified: nullTime(m.LastModified)}
	if len(m.Tags) > 0 {
		tags, err := jsonText(m.Tags)
		if err != nil {
			return err
		}
		row.tags = sql.NullString{String: tags, Valid: true}
	}
	var old listedRow
	err := tx.QueryRowContext(ctx, sqlListedRow, m.ID).Scan(&old.task, &old.library, &old.downloads, &old.likes,
		&old.gated, &old.sha, &old.tags, &old.lastModified)
	exists := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	merging := false
	for _, alias := range m.Aliases {
		if alias == "" || strings.EqualFold(alias, m.ID) {
			continue
		}
		var n int
		if err := tx.QueryRowContext(ctx, sqlModelExists, alias).Scan(&n); err != nil {
			return err
		}
		merging = merging || n > 0
	}
	changed := !exists || old != row
	var before modelState
	switch {
	case merging:
		if err := t.begin(ctx, tx, m.ID, nil); err != nil {
			return err
		}
	case changed && exists:
		if before, err = readModelState(ctx, tx, m.ID); err != nil {
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
		for _, target := range listTargets {
			if _, err := tx.ExecContext(ctx, sqlEnsureCurrent, string(target), m.ID, m.Downloads, m.Likes); err != nil {
				return err
			}
		}
	}
	if _, err := tx.ExecContext(ctx, sqlDropAlias, m.ID); err != nil {
		return err
	}
	for _, alias := range m.Aliases {
		if alias == "" || strings.EqualFold(alias, m.ID) {
			continue
		}
		var n int
		if err := tx.QueryRowContext(ctx, sqlModelExists, alias).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			if err := mergeModel(ctx, tx, t, alias, m.ID); err != nil {
				return fmt.Errorf("merge %s: %w", alias, err)
			}
		}
		if _, err := tx.ExecContext(ctx, sqlUpsertAlias, alias, m.ID); err != nil {
			return err
		}
	}
	switch {
	case merging:
		return t.end(ctx, tx, m.ID, nil)
	case changed:
		after := newModelState(m.Downloads, m.Task, m.Library)
		if exists {
			after = before.with(m.Downloads, m.Task, m.Library)
			for _, target := range listTargets { // rows the listing just gave it
				if _, ok := after.rows[target]; !ok {
					after.rows[target] = currentRow{rank: statusRank(compat.StatusUntested)}
				}
			}
		}
		return t.end(ctx, tx, m.ID, &after)
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
	if _, err := tx.ExecContext(ctx, sqlResetCurrent, id); err != nil {
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
