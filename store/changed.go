package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"time"
)

// ForeignWritesSeenWithin bounds how late Changed reports a write made by
// another process (another Store on the same file: `scanner scan` beside
// `scanner serve`, a benchmark writing under a server). This process's own
// writes are seen at once.
const ForeignWritesSeenWithin = 100 * time.Millisecond

// changedMemo keeps Store.Changed in memory, so that a page served from a
// cache checks the data's version without a query. A write of this store
// moves gen on after its commit (commit below): a value read before that
// was read at an older gen and is not used again. Another process's writes
// leave no trace here, so a value is also read again once it is
// ForeignWritesSeenWithin old.
type changedMemo struct {
	gen atomic.Uint64
	cur atomic.Pointer[changedRead]
}

// changedRead is one read of the state row: its value, the gen before the
// read, and when the read started.
type changedRead struct {
	value time.Time
	gen   uint64
	at    time.Time
}

// Changed reports when data last changed: every write transaction that
// changes something moves it forward (strictly, so it differs after each
// change even within one clock tick). The zero time means nothing was ever
// written. It reads one row at most every ForeignWritesSeenWithin unless
// this store wrote since.
func (s *SQLite) Changed(ctx context.Context) (time.Time, error) {
	now := time.Now()
	gen := s.changes.gen.Load()
	if v := s.changes.cur.Load(); v != nil && v.gen == gen && now.Sub(v.at) < ForeignWritesSeenWithin {
		return v.value, nil
	}
	var ns int64
	if err := s.r.QueryRowContext(ctx, sqlChanged).Scan(&ns); err != nil {
		return time.Time{}, fmt.Errorf("store: changed: %w", err)
	}
	var value time.Time
	if ns != 0 {
		value = fromNano(ns)
	}
	s.changes.cur.Store(&changedRead{value: value, gen: gen, at: now})
	return value, nil
}

// commit commits a write transaction that touched (see touch): every such
// transaction commits here or in commitAside, so Changed sees it at once.
func (s *SQLite) commit(tx *sql.Tx) error {
	err := tx.Commit()
	s.changes.gen.Add(1)
	return err
}
