package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
)

// HubURL is the base of Model.URL. It is the public Hub on purpose: a
// mirror configured for downloads is not where users should be linked to.
const HubURL = "https://huggingface.co"

// The per-connection settings, in the DSN so that every pooled connection
// has them. The writer takes its write lock at BEGIN (_txlock=immediate), so
// a transaction never fails half-way with "database is locked" on upgrading
// a read lock; another process's writer is waited for up to _busy_timeout.
// Readers begin deferred and are query-only. synchronous=NORMAL is the
// driver's default, spelled out: in WAL mode it is safe against crashes of
// the process and loses at most the last commits on power loss.
const (
	writerParams = "_journal_mode=WAL&_foreign_keys=on&_busy_timeout=5000&_txlock=immediate&_synchronous=NORMAL" +
		"&_stmt_cache_size=64&_cache_size=-32768"
	readerParams = "_foreign_keys=on&_busy_timeout=5000&_txlock=deferred&_synchronous=NORMAL&_query_only=on" +
		"&_stmt_cache_size=64&_cache_size=-8192"
	backupParams = "_foreign_keys=on&_busy_timeout=5000&_txlock=deferred"
	bulkParams   = "_foreign_keys=on&_busy_timeout=5000&_txlock=deferred&_synchronous=NORMAL&_query_only=on" +
		"&_stmt_cache_size=16&_cache_size=-2048"
	// Prepared statements are reused per connection (_stmt_cache_size). The
	// writer may cache 32 MiB of pages (SQLite's default is 2), for the
	// indexes a batch of results touches; readers read through mmap and
	// cache 8 MiB each; the bulk readers (exports) map nothing and cache
	// 2 MiB, so that reading every model costs the process no memory.
)

// maxReaders caps the read pool; more requests at once queue for a
// connection in database/sql rather than fail.
const maxReaders = 8

// maxBulkReaders caps the pool of whole-table reads (exports): they take
// turns a page at a time.
const maxBulkReaders = 2

// mmapSize is how much of the database file each connection reads through
// memory mapping rather than read(2): the site's reads touch pages all over
// the results table, and from the mapping they cost no system call.
const mmapSize = 256 << 20

// openPool opens a pool whose connections have the DSN's settings and the
// ones the DSN cannot carry (mmap_size), set by the connect hook.
func openPool(dsn string) *sql.DB { return openPoolMapping(dsn, mmapSize) }

// openPoolMapping is openPool with the given mmap_size (0: none).
func openPoolMapping(dsn string, mmap int) *sql.DB {
	d := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec(fmt.Sprintf("PRAGMA mmap_size = %d", mmap), nil)
		return err
	}}
	return sql.OpenDB(connector{dsn: dsn, driver: d})
}

// connector opens connections of one DSN with one driver.
type connector struct {
	dsn    string
	driver *sqlite3.SQLiteDriver
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.driver.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.driver }

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded schema change, applied in one transaction.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. File names
// are NNNN_name.sql with consecutive versions from 1.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var ms []migration
	for i, name := range names {
		base := filepath.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v != i+1 {
			return nil, fmt.Errorf("migration %s: want version %04d", base, i+1)
		}
		b, err := migrationFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	return ms, nil
}

// SQLite is the scanner's state in a SQLite file. Every method is safe for
// concurrent use. It holds two pools on the same file: one writer
// connection, so writes are serialised in the process and never contend
// for the lock among themselves, and a pool of query-only readers, which
// WAL mode lets run while the writer writes.
type SQLite struct {
	w    writer        // exactly one connection
	ckpt *checkpointer // the checkpoints of large writes (checkpoint.go); nil when read-only
	r    *sql.DB       // readers
	bulk *sql.DB       // readers of whole tables (exports)
	path string
	id   fileID // the file opened (file.go)
	// roDSN opens the file read-only; set by OpenReadOnly, whose store
	// has no writer.
	roDSN string
	me    Owner // the owner of the scans this process starts (owner.go)
	now   func() time.Time
	// changes keeps Changed between writes (changed.go).
	changes changedMemo
}

// Open opens (creating it and its folder if needed) the database at path,
// applies the embedded migrations that it lacks, each in one transaction,
// and refuses a database whose schema is newer than this binary.
//
// path must be a file: ":memory:" is refused, because every pooled
// connection would get its own empty database. Tests use a file in
// t.TempDir() (see package storetest).
func Open(ctx context.Context, path string) (*SQLite, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") || strings.Contains(path, "?") {
		return nil, fmt.Errorf("store: open %q: want a plain file path (no :memory:, file: URI or \"?\")", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	w := openPool(path + "?" + writerParams)
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &SQLite{path: path, now: time.Now, me: processOwner}
	s.w = writer{DB: w, s: s}
	if err := w.PingContext(ctx); err == nil { // the file exists now: remember which it is
		s.id, err = statID(path)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("store: open %s: %w", path, err)
		}
	}
	if err := s.migrate(ctx); err != nil {
		w.Close()
		if ro := readOnly(path); ro != nil {
			return nil, fmt.Errorf("store: open %s: %w (the server writes it; scanner backup can still read it)", path, ro)
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// A new epoch for every opening that may write: a copy restored from a
	// backup, or the same one restored twice, never hands out an event or
	// delivery id that a lost timeline published (compat.Event.UID). The
	// ids written before keep the epoch they were written in.
	if _, err := s.w.ExecContext(ctx, sqlRenewEpoch); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: renew the epoch: %w", path, err)
	}
	r := openPool(path + "?" + readerParams)
	n := min(max(4, runtime.NumCPU()), maxReaders)
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	s.r = r
	s.ckpt = newCheckpointer(path)
	s.bulk = openPoolMapping(path+"?"+bulkParams, 0)
	s.bulk.SetMaxOpenConns(maxBulkReaders)
	s.bulk.SetMaxIdleConns(maxBulkReaders)
	if err := r.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return s, nil
}

// Path is the database file.
func (s *SQLite) Path() string { return s.path }

// Close stops the checkpointer and closes the pools, after letting SQLite
// refresh its query planner statistics (PRAGMA optimize), as it advises
// for long-lived connections. The writer's close, the last, checkpoints.
func (s *SQLite) Close() error {
	var errs []error
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.close())
	}
	for _, db := range []*sql.DB{s.r, s.bulk} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	if s.w.DB != nil {
		_, err := s.w.Exec(sqlOptimize)
		errs = append(errs, err, s.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// migrate applies the missing migrations and checks the schema is current.
func (s *SQLite) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, sqlCreateMigrations); err != nil {
		return fmt.Errorf("schema_migrations: %w", err)
	}
	for _, m := range ms {
		if err := s.applyMigration(ctx, m); err != nil {
			return err
		}
	}
	var have int
	if err := s.w.QueryRowContext(ctx, sqlSchemaVersion).Scan(&have); err != nil {
		return fmt.Errorf("schema version: %w", err)
	}
	if have > len(ms) {
		return fmt.Errorf("database schema version %d is newer than this binary's %d: run a newer scanner", have, len(ms))
	}
	return s.settle(ctx)
}

// settle brings what the store keeps beside the rows in line with this
// binary, writing only when something is missing: every model's current
// row on every target (a target added to compat.Targets after models were
// stored lists them as untested), and the kept comparisons of the
// runtimes' order (a database just migrated has none). It first runs a
// write that changes nothing, so that a database this process cannot
// write fails here, at Open, even when nothing is missing.
func (s *SQLite) settle(ctx context.Context) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, sqlWriteNothing); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	filled, err := fillCurrent(ctx, tx)
	if err != nil {
		return fmt.Errorf("fill current: %w", err)
	}
	_, built, err := settlePairs(ctx, tx)
	if err != nil {
		return err
	}
	if !filled && !built {
		return nil
	}
	if err := s.touch(ctx, tx); err != nil {
		return err
	}
	return s.commit(tx)
}

// fillCurrent gives every model a row on each target that lacks some,
// and counts that target's rows anew (its status tallies); it reports
// whether it wrote. It compares the tallies' counts (a few rows), so
// that an Open does not walk every model; a target new to this binary has
// no tallies and no rows.
func fillCurrent(ctx context.Context, tx *sql.Tx) (bool, error) {
	var models int64
	if err := tx.QueryRowContext(ctx, sqlTalliedModels).Scan(&models); err != nil {
		return false, err
	}
	filled := false
	for _, t := range listTargets {
		var rows int64
		if err := tx.QueryRowContext(ctx, sqlTargetRows, string(t)).Scan(&rows); err != nil {
			return false, err
		}
		if rows == models {
			continue
		}
		for _, q := range []string{sqlFillCurrent, sqlDropStatusTallies, sqlCountStatusTallies, sqlDropFailTallies, sqlCountFailTallies} {
			if _, err := tx.ExecContext(ctx, q, string(t)); err != nil {
				return false, err
			}
		}
		filled = true
	}
	return filled, nil
}

// applyMigration applies m in one transaction unless it is recorded as
// applied. The check is inside the (immediate) transaction, so two processes
// opening one file at once do not both apply it.
func (s *SQLite) applyMigration(ctx context.Context, m migration) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, sqlMigrationApplied, m.version).Scan(&n); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	if _, err := tx.ExecContext(ctx, sqlRecordMigration, m.version, m.name, unixNano(s.now())); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	return nil
}

// touch records that data changed, for Changed. The time only moves
// forward, so that two changes in one clock tick still differ.
func (s *SQLite) touch(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, sqlTouch, unixNano(s.now()))
	return err
}
