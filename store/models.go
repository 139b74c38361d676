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
	for _, m := range models {
		if err := upsertModel(ctx, tx, m, now); err != nil {
			return fmt.Errorf("store: upsert models: %s: %w", m.ID, err)
		}
	}
	if err := s.touch(ctx, tx); err != nil {
		return fmt.Errorf("store: upsert models: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: upsert models: %w", err)
	}
	return nil
}

func upsertModel(ctx context.Context, tx *sql.Tx, m ModelUpsert, now int64) error {
	if m.ID == "" {
		return fmt.Errorf("%w: model without id", ErrInvalid)
	}
	var tags sql.NullString
	if len(m.Tags) > 0 {
		t, err := jsonText(m.Tags)
		if err != nil {
			return err
		}
		tags = sql.NullString{String: t, Valid: true}
	}
	if _, err := tx.ExecContext(ctx, sqlUpsertModel, m.ID, orgOf(m.ID), m.Task, m.Library, m.Downloads, m.Likes,
		m.Gated, m.SHA, tags, nullTime(m.LastModified), now, now); err != nil {
		return err
	}
	for _, t := range listTargets {
		if _, err := tx.ExecContext(ctx, sqlEnsureCurrent, string(t), m.ID, m.Downloads, m.Likes); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, sqlRuntimeDownloads, m.ID, m.Downloads); err != nil {
		return err
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
			if err := mergeModel(ctx, tx, alias, m.ID); err != nil {
				return fmt.Errorf("merge %s: %w", alias, err)
			}
		}
		if _, err := tx.ExecContext(ctx, sqlUpsertAlias, alias, m.ID); err != nil {
			return err
		}
	}
	return nil
}

// mergeModel moves the history of model old to model into and deletes old.
func mergeModel(ctx context.Context, tx *sql.Tx, old, into string) error {
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
	return rebuildRuntimeCurrent(ctx, tx, into)
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
