package store

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// RuntimeStats is one runtime the scanner has results for, and how models
// did on it. A model counts once per runtime, by its newest result there.
// Tested counts the models with a verdict (pass, fail, oom, timeout,
// crash); PassRate is pass ÷ Tested and WeightedPassRate the same weighted
// by the models' downloads, each nil when its denominator is 0.
type RuntimeStats struct {
	Ref       compat.RuntimeRef
	FirstSeen time.Time // its first result
	LastSeen  time.Time // its newest result
	// Version moves whenever what RuntimeResults returns for it may have
	// changed (a result filed, a model's downloads, a rename): a cache of
	// anything derived from its results is valid while Version is.
	Version          int64
	Models           int // models with a result on it
	Tested           int
	Passed           int
	PassRate         *float64
	WeightedPassRate *float64
}

// Runtimes lists every runtime with a verdict on target ("" = all
// targets), newest first (by first result, then by key); empty when none.
// A runtime whose results are only errors and skips measured nothing and is
// not listed, so that it never becomes compare's default head or the feed's
// "new runtime". The error wraps ErrInvalid for an unknown target.
func (s *SQLite) Runtimes(ctx context.Context, target compat.Target) ([]RuntimeStats, error) {
	if err := validTarget(target, true); err != nil {
		return nil, fmt.Errorf("store: runtimes: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, sqlRuntimeStatuses, string(target))
	if err != nil {
		return nil, fmt.Errorf("store: runtimes: %w", err)
	}
	defer rows.Close()
	byKey := map[string]*runtimeAcc{}
	for rows.Next() {
		var (
			ref         compat.RuntimeRef
			status      compat.Status
			n           int
			downloads   int64
			first, last int64
			version     int64
		)
		if err := rows.Scan(&ref.Target, &ref.Torch, &ref.TorchTPU, &ref.Transformers, &ref.Harness,
			&first, &last, &version, &status, &n, &downloads); err != nil {
			return nil, fmt.Errorf("store: runtimes: %w", err)
		}
		key := ref.Key()
		a := byKey[key]
		if a == nil {
			a = &runtimeAcc{st: RuntimeStats{Ref: ref, FirstSeen: fromNano(first), LastSeen: fromNano(last), Version: version}}
			byKey[key] = a
		}
		a.add(status, n, downloads)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: runtimes: %w", err)
	}
	out := make([]RuntimeStats, 0, len(byKey))
	for _, a := range byKey {
		if a.withVerdict == 0 {
			continue // errors and skips measured nothing: not a public runtime
		}
		out = append(out, a.stats())
	}
	sort.Slice(out, func(i, j int) bool {
		return runtimeNewer(out[i].FirstSeen.UnixNano(), out[i].Ref, out[j].FirstSeen.UnixNano(), out[j].Ref)
	})
	return out, nil
}

// runtimeAcc adds up one runtime's rows (one per status).
type runtimeAcc struct {
	st                  RuntimeStats
	passDL, verdictDL   int64
	passed, withVerdict int
}

func (a *runtimeAcc) add(status compat.Status, n int, downloads int64) {
	a.st.Models += n
	if status.IsVerdict() {
		a.withVerdict += n
		a.verdictDL += downloads
	}
	if status == compat.StatusPass {
		a.passed += n
		a.passDL += downloads
	}
}

func (a *runtimeAcc) stats() RuntimeStats {
	st := a.st
	st.Tested, st.Passed = a.withVerdict, a.passed
	if a.withVerdict > 0 {
		r := float64(a.passed) / float64(a.withVerdict)
		st.PassRate = &r
	}
	if a.verdictDL > 0 {
		r := float64(a.passDL) / float64(a.verdictDL)
		st.WeightedPassRate = &r
	}
	return st
}

// RuntimeResults returns every model's newest result on the runtime ref as
// a comparison entry: id, downloads, status, and the root cause of a
// result held against the model (its signature, else its failure class,
// as the failure groups have it; "" for other statuses), and its train
// verdict's status and signature ("" for none). Empty when the
// runtime has no results; the error wraps ErrInvalid for a ref without a
// concrete target.
func (s *SQLite) RuntimeResults(ctx context.Context, ref compat.RuntimeRef) ([]compare.Entry, error) {
	if err := validTarget(ref.Target, false); err != nil {
		return nil, fmt.Errorf("store: runtime results: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, sqlRuntimeResults, string(ref.Target), ref.RetestKey())
	if err != nil {
		return nil, fmt.Errorf("store: runtime results: %w", err)
	}
	defer rows.Close()
	out := []compare.Entry{}
	for rows.Next() {
		var (
			e     compare.Entry
			sig   sql.NullString
			class sql.NullString
		)
		if err := rows.Scan(&e.ID, &e.Downloads, &e.Status, &sig, &class, &e.Train, &e.TrainSignature); err != nil {
			return nil, fmt.Errorf("store: runtime results: %w", err)
		}
		sh := shown{status: e.Status, signature: fromNullStr[string](sig), class: fromNullStr[compat.FailureClass](class)}
		e.Signature = sh.failKey().String
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: runtime results: %w", err)
	}
	return out, nil
}

// recordRuntime files result resultID (r) of model modelID under its
// runtime: the runtime's first and newest result times, and the model's
// newest result there unless the one filed is newer (by tested_at, then id).
func recordRuntime(ctx context.Context, tx *sql.Tx, modelID string, resultID int64, r compat.Result) error {
	ref, tested := r.Runtime.Ref(r.Target), unixNano(r.TestedAt)
	var rtID int64
	if err := tx.QueryRowContext(ctx, sqlUpsertRuntime, string(ref.Target), ref.RetestKey(), ref.Torch, ref.TorchTPU,
		ref.Transformers, ref.Harness, tested).Scan(&rtID); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	var trainStatus, trainSig sql.NullString
	if tr := r.Train(); tr != nil {
		trainStatus, trainSig = sql.NullString{String: string(tr.Status), Valid: true}, nullStr(tr.Signature)
	}
	if _, err := tx.ExecContext(ctx, sqlUpsertRuntimeCurrent, rtID, modelID, resultID, tested, string(r.Status),
		nullStr(r.Signature), nullStr(r.FailureClass), trainStatus, trainSig); err != nil {
		return fmt.Errorf("runtime current: %w", err)
	}
	return nil
}

// rebuildRuntimeCurrent files a model's results under their runtimes
// anew, after a merge moved another model's results to it.
func rebuildRuntimeCurrent(ctx context.Context, tx *sql.Tx, id string) error {
	for _, q := range []string{sqlDeleteRuntimeCurrent, sqlRebuildRuntimeCurrent} {
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return fmt.Errorf("runtime current: %w", err)
		}
	}
	return nil
}

// Runtimes: see migrations/0003_runtimes.sql. A model counts once per
// runtime, by its newest result there.
const (
	// sqlUpsertRuntime files a result time under its runtime and returns the runtime's id.
	sqlUpsertRuntime = `INSERT INTO runtimes (target, runtime_key, torch, torch_tpu, transformers, harness, first_seen, last_seen)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
ON CONFLICT (target, runtime_key) DO UPDATE SET
	first_seen = min(first_seen, excluded.first_seen), last_seen = max(last_seen, excluded.last_seen)
RETURNING id`
	// sqlUpsertRuntimeCurrent makes a result its model's newest on a
	// runtime unless a newer one is there.
	sqlUpsertRuntimeCurrent = `INSERT INTO runtime_current (runtime_id, model_id, result_id, tested_at, status, signature, failure_class,
	train_status, train_signature)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
ON CONFLICT (runtime_id, model_id) DO UPDATE SET
	result_id = excluded.result_id, tested_at = excluded.tested_at, status = excluded.status,
	signature = excluded.signature, failure_class = excluded.failure_class,
	train_status = excluded.train_status, train_signature = excluded.train_signature
WHERE (excluded.tested_at, excluded.result_id) > (runtime_current.tested_at, runtime_current.result_id)`
	sqlDeleteRuntimeCurrent = `DELETE FROM runtime_current WHERE model_id = ?`
	// sqlRebuildRuntimeCurrent files a model's newest result on each runtime.
	sqlRebuildRuntimeCurrent = `INSERT INTO runtime_current (runtime_id, model_id, result_id, tested_at, status, signature, failure_class,
	train_status, train_signature)
SELECT rt.id, x.model_id, x.id, x.tested_at, x.status, x.signature, x.failure_class, x.train_status,
	CASE WHEN x.train_status IS NOT NULL THEN x.modes ->> '$.train.signature' END
FROM (
	SELECT r.id, r.model_id, r.target, r.runtime_key, r.tested_at, r.status, r.signature, r.failure_class, r.train_status, r.modes,
		row_number() OVER (PARTITION BY r.target, r.runtime_key ORDER BY r.tested_at DESC, r.id DESC) AS n
	FROM results r WHERE r.model_id = ?1
) x
JOIN runtimes rt ON rt.target = x.target AND rt.runtime_key = x.runtime_key
WHERE x.n = 1`

	// sqlRuntimeStatuses is, per runtime and status of the models'
	// newest results there, the models and their downloads (the runtime
	// tallies). ?1 is a target, '' for all.
	sqlRuntimeStatuses = `SELECT rt.target, rt.torch, rt.torch_tpu, rt.transformers, rt.harness, rt.first_seen, rt.last_seen,
	rt.version, t.status, t.models, t.downloads
FROM runtimes rt JOIN runtime_tallies t ON t.runtime_id = rt.id
WHERE (?1 = '' OR rt.target = ?1) AND t.models > 0`
	// sqlRuntimeResults is each model's newest result on one runtime.
	sqlRuntimeResults = `SELECT rc.model_id, m.downloads, rc.status, rc.signature, rc.failure_class,
	ifnull(rc.train_status, ''), ifnull(rc.train_signature, '')
FROM runtimes rt JOIN runtime_current rc ON rc.runtime_id = rt.id JOIN models m ON m.id = rc.model_id
WHERE rt.target = ? AND rt.runtime_key = ?`
)
