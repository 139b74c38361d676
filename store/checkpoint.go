package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
)

// A commit in WAL mode appends the pages it changed to the -wal file, and
// SQLite copies them back into the database (a checkpoint) in the commit
// of the connection whose write took the WAL past 1000 pages
// (wal_autocheckpoint). For a small write that copy is a few pages; for a
// scan's listing it is the tens of megabytes of pages it dirtied, about a
// second of the listing's commit. A large write therefore commits aside
// (commitAside): without the checkpoint, which the store's checkpointer
// runs beside the next writes, on a connection of its own. The cost is
// not gone: it is paid off the write path.
//
// Durability does not depend on when a checkpoint runs: a commit is in the
// WAL, and a crash in the middle of a checkpoint leaves the WAL to be
// copied again at the next open. Close checkpoints (the last connection's
// close copies the WAL back and deletes it).

// walAutocheckpoint is SQLite's default wal_autocheckpoint, which the
// writer keeps for every write but a large one.
const walAutocheckpoint = 1000

// walCap is the size of the -wal file above which the checkpointer, once
// it has copied every page back, truncates it: a listing leaves some 80 MB
// behind, which SQLite would otherwise keep (and reuse) until Close.
var walCap int64 = 64 << 20 // a variable for the tests

// commitAsideOn says whether large writes commit aside: a variable for
// the tests, which compare both ways.
var commitAsideOn = true

// checkpointer runs the checkpoints of the writes that commit aside, one
// at a time, from the goroutine it starts; Close stops it.
type checkpointer struct {
	db     *sql.DB // one connection, its own
	wal    string  // the -wal file
	wake   chan struct{}
	ctx    context.Context // cancelled by close: a checkpoint under way stops
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has ended
	mu     sync.Mutex    // guards err, idle
	err    error         // the last checkpoint's error (nil: it went well)
	idle   *sync.Cond    // signalled when a checkpoint ends
	busy   bool          // a checkpoint is asked for or under way
}

// checkpointParams: the checkpointer never waits on a lock
// (_busy_timeout=0): a checkpoint that a reader or the writer would block
// copies what it can (PASSIVE) or is left to the next one (TRUNCATE).
const checkpointParams = "_busy_timeout=0&_synchronous=NORMAL&_cache_size=-2048"

func newCheckpointer(path string) *checkpointer {
	db := openPoolMapping(path+"?"+checkpointParams, 0)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{db: db, wal: path + "-wal", wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel,
		done: make(chan struct{})}
	c.idle = sync.NewCond(&c.mu)
	go c.run()
	return c
}

// ask asks for a checkpoint; asks while one is pending make one.
func (c *checkpointer) ask() {
	c.mu.Lock()
	c.busy = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.wake:
		}
		err := c.checkpoint(c.ctx)
		c.mu.Lock()
		c.err = err
		if len(c.wake) == 0 {
			c.busy = false
			c.idle.Broadcast()
		}
		c.mu.Unlock()
	}
}

// checkpoint copies every page of the WAL that no reader still needs
// back into the database (PASSIVE: it waits for nobody), then truncates
// the -wal file if it has grown past walCap and every page is copied.
func (c *checkpointer) checkpoint(ctx context.Context) error {
	var busy, frames, copied int
	if err := c.db.QueryRowContext(ctx, sqlCheckpointPassive).Scan(&busy, &frames, &copied); err != nil {
		return fmt.Errorf("store: checkpoint: %w", err)
	}
	if busy != 0 || frames != copied {
		return nil // a reader holds pages: the next checkpoint copies them
	}
	if st, err := os.Stat(c.wal); err != nil || st.Size() <= walCap {
		return nil
	}
	if err := c.db.QueryRowContext(ctx, sqlCheckpointTruncate).Scan(&busy, &frames, &copied); err != nil {
		return fmt.Errorf("store: checkpoint: %w", err)
	}
	return nil
}

// settle waits for the checkpoint of the last large write, so that the
// next begins on a WAL whose pages are all copied back, which SQLite then
// writes from its start: the WAL holds one large write at most. A scan's
// listings are hours apart, and the wait is nothing; two back to back
// wait for the first's checkpoint. Its error is the checkpointer's, not
// the write's.
func (c *checkpointer) settle() {
	if c != nil {
		_ = c.wait()
	}
}

// wait waits until no checkpoint is asked for or under way, and returns
// the last one's error.
func (c *checkpointer) wait() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.busy {
		c.idle.Wait()
	}
	return c.err
}

// close stops the goroutine (a checkpoint under way is interrupted: the
// writer's close copies the WAL back) and closes the connection.
func (c *checkpointer) close() error {
	c.cancel()
	<-c.done
	c.mu.Lock()
	c.busy = false
	c.idle.Broadcast()
	c.mu.Unlock()
	return c.db.Close()
}

// commitAside commits tx, a large write on the writer, without the
// checkpoint SQLite would run in its commit, and asks the checkpointer
// for it. The writer's one connection gets its wal_autocheckpoint back
// after the commit.
func (s *SQLite) commitAside(ctx context.Context, tx *sql.Tx) error {
	if s.ckpt == nil || !commitAsideOn {
		return s.commit(tx)
	}
	if _, err := tx.ExecContext(ctx, sqlAutocheckpointOff); err != nil {
		return err
	}
	err := s.commit(tx)
	if _, rerr := s.w.DB.ExecContext(context.WithoutCancel(ctx), sqlAutocheckpointOn); rerr != nil {
		return errors.Join(err, fmt.Errorf("the writer's checkpoints stay off: %w", rerr))
	}
	if err == nil {
		s.ckpt.ask()
	}
	return err
}

var (
	sqlCheckpointPassive  = `PRAGMA wal_checkpoint(PASSIVE)`
	sqlCheckpointTruncate = `PRAGMA wal_checkpoint(TRUNCATE)`
	sqlAutocheckpointOff  = `PRAGMA wal_autocheckpoint = 0`
	sqlAutocheckpointOn   = fmt.Sprintf(`PRAGMA wal_autocheckpoint = %d`, walAutocheckpoint)
)
