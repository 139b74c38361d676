package store

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compare"
)

// Hooks for the external tests.

// SetBulkListing sets the size from which an upsert reads every model at
// once, and returns the function that puts it back.
func SetBulkListing(n int) func() { return setVar(&bulkListing, n) }

// setVar sets *p to v and returns the function that puts it back.
func setVar[T any](p *T, v T) func() {
	old := *p
	*p = v
	return func() { *p = old }
}

// SetBatchListing sets whether a large upsert writes the models that
// touch no other model in one batch, and returns the function that puts
// it back.
func SetBatchListing(on bool) func() { return setVar(&batchListing, on) }

// SetCommitAside sets whether a large write commits without its
// checkpoint (commitAside), and returns the function that puts it back.
func SetCommitAside(on bool) func() { return setVar(&commitAsideOn, on) }

// SetCheckNowBytes sets the largest database Open checks whole before it
// returns, and returns the function that puts it back.
func SetCheckNowBytes(n int64) func() { return setVar(&checkNowBytes, n) }

// WaitIntactCheck waits for the check of a large database after Open.
func (s *SQLite) WaitIntactCheck() {
	if s.intact.done != nil {
		<-s.intact.done
	}
}

// SetWALCap sets the size past which the checkpointer truncates the WAL,
// and returns the function that puts it back.
func SetWALCap(n int64) func() { return setVar(&walCap, n) }

// WaitCheckpoint waits until the checkpoints asked for have run, and
// returns the last one's error.
func (s *SQLite) WaitCheckpoint() error { return s.ckpt.wait() }

// CheckpointerDone is closed once the checkpointer's goroutine has ended.
func (s *SQLite) CheckpointerDone() <-chan struct{} { return s.ckpt.done }

// SetClock replaces the store's clock.
func (s *SQLite) SetClock(now func() time.Time) { s.now = now }

// Restart makes the store act as a new process of this program on this
// machine (the same pid, as a restarted container's, another instance):
// the scans it started before are an earlier process's.
func (s *SQLite) Restart() { s.me = thisProcess() }

// ComparePagesWalked is ComparePages, with how many lists it read in its
// one walk of the models.
func (s *SQLite) ComparePagesWalked(ctx context.Context, qs []CompareQuery) ([]ComparePage, int, error) {
	pages, shared, err := s.comparePages(ctx, qs)
	if err != nil {
		return nil, 0, err
	}
	return pages, len(shared.wants), nil
}

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
		"state model":     {sqlStateModel, id},
		"state rows":      {sqlStateRows, id, true},
		"listed row":      {sqlListedRow, id},
		"pair cells":      {sqlPairCells, 1, 2},
		"runtime tally":   {sqlRuntimeTally, 1},
		"runtime id":      {sqlRuntimeID, target, "key"},
		"pair kept":       {sqlPairKept, 1, 2},
		"target rows":     {sqlTargetRows, target},
		"fit of":          {sqlFitOf, id},
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

// ExplainCompareLists returns the plans of the three ways of reading a
// page of a comparison's list (gather, walk kept, walk), after a cursor,
// for an inference list and a train list (named "train …").
func (s *SQLite) ExplainCompareLists(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	for _, kind := range []compare.Kind{compare.Fixed, compare.TrainRegressed} {
		for name, q := range map[string]string{"gather": sqlListGather, "walk kept": sqlListWalkKept, "walk": kindPairsSQL(sqlListWalk, kind)} {
			args := []any{1, 2}
			if name == "walk" {
				args = append(args, kindPairArgs(kind)...)
			} else {
				args = append(args, string(kind))
			}
			args = append(args, 10, 10, "org/model", 51)
			if compare.IsTrainListed(kind) {
				q, name = trainSQL(q), "train "+name
			}
			plan, err := s.explain(ctx, fmt.Sprintf(q, listAfter), args...)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out[name] = plan
		}
	}
	for name, q := range map[string][]any{
		"walk all":                     {sqlListWalkEvery, 1, 2},
		"walk all, trained":            {sqlListWalkTrained, 1, 2},
		"walk all, trained, after one": {sqlListWalkTrainedAfter, 1, 2, 10, 10, "m"},
	} {
		plan, err := s.explain(ctx, q[0].(string), q[1:]...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = plan
	}
	return out, nil
}

// KeptPairs are the kept comparisons, as (base, head) runtime ids.
func (s *SQLite) KeptPairs(ctx context.Context) ([][2]int64, error) {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	return keptPairs(ctx, tx)
}

// ListAll reads a whole list of the comparison p (base, head) in pages of
// limit, one way: a kept list's rows sorted (gather), a walk keeping a
// kept list's (kept), or a walk classifying each model.
func (s *SQLite) ListAll(ctx context.Context, p [2]int64, kind compare.Kind, kept, gather bool, limit int) ([]compare.Item, error) {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var all []compare.Item
	var cur *compareCursor
	for range 1000 {
		items, more, err := listPage(ctx, tx, p, kind, kept, gather, limit, math.MaxInt32, cur)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if !more {
			return all, nil
		}
		last := items[len(items)-1]
		cur = &compareCursor{Kind: kind, Downloads: last.Downloads, ID: last.ID}
	}
	return nil, fmt.Errorf("more than 1000 pages")
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

// SetPlannedEarly sets the function called once a scan's listing is
// planned, before its write transaction begins, and returns the function
// that puts it back.
func SetPlannedEarly(f func()) func() { return setVar(&plannedEarly, f) }

// SetPlannedAgain sets the function called when a scan's listing planned
// early is planned again in its write transaction, and returns the
// function that puts it back.
func SetPlannedAgain(f func()) func() { return setVar(&plannedAgain, f) }
