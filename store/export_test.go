package store

import (
	"context"
	"fmt"
	"time"
)

// Hooks for the external tests.

// SetClock replaces the store's clock.
func (s *SQLite) SetClock(now func() time.Time) { s.now = now }

// Restart makes the store act as a new process of this program on this
// machine (the same pid, as a restarted container's, another instance):
// the scans it started before are an earlier process's.
func (s *SQLite) Restart() { s.me = thisProcess() }

// ExplainList returns the query plan of ListModels(q), one detail per line.
func (s *SQLite) ExplainList(ctx context.Context, q ModelQuery) ([]string, error) {
	lq, err := buildList(q)
	if err != nil {
		return nil, err
	}
	return s.explain(ctx, lq.sql, lq.args...)
}

// ExplainNamed returns the plans of the fixed read queries, by name.
func (s *SQLite) ExplainNamed(ctx context.Context) (map[string][]string, error) {
	const id, target = "org/model", "tpu"
	queries := map[string][]any{
		"resolve":         {sqlResolveModel, id},
		"get model":       {sqlGetModel, id},
		"aliases":         {sqlModelAliases, id},
		"current result":  {sqlCurrentResult, id, target},
		"current results": {sqlCurrentResults, id},
		"history":         {sqlHistory, id, 10},
		"history target":  {sqlHistoryTarget, id, target, 10},
		"runtime":         {sqlLatestRuntime, target},
		"failure groups":  {sqlFailureGroups, target, 10},
		"failure example": {sqlFailureExamples, target, "sig", 5},
		"status counts":   {sqlStatusCounts, target},
		"total downloads": {sqlTotalDownloads, target},
		"events":          {sqlEvents, 10},
		"model events":    {sqlModelEvents, id, 10},
		"changed":         {sqlChanged},
		"get current":     {sqlGetCurrent, id, target},
		"dup in scan":     {sqlDuplicateInScan, id, target, "rev", "key", 1},
		"dup unscanned":   {sqlDuplicateUnscanned, id, target, "rev", "key", 1},
		"list scans":      {sqlListScans, 10},
	}
	out := map[string][]string{}
	for name, q := range queries {
		plan, err := s.explain(ctx, q[0].(string), q[1:]...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = plan
	}
	return out, nil
}

func (s *SQLite) explain(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			return nil, err
		}
		plan = append(plan, detail)
	}
	return plan, rows.Err()
}
