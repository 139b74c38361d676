package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mattn/go-sqlite3"
)

// This file is what the store knows about its file: that it is still the
// file it opened (a database deleted or replaced under a running server
// takes writes nobody can read again), why a file cannot be written
// (a read-only database said so, and read for a backup), and whether it is
// a sound database at all (a damaged one is refused at Open).

// ErrGone is wrapped by every write, and by CheckFile, once the database file
// was deleted or replaced while this process had it open.
var ErrGone = errors.New("the database file was deleted or replaced while the scanner had it open (writes would be lost: restart the scanner)")

// ErrReadOnly is wrapped by Open's error for a database this process
// cannot write; OpenReadOnly reads one.
var ErrReadOnly = errors.New("the database is read-only")

// fileID is a file's identity: its device and inode.
type fileID struct{ dev, ino uint64 }

func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, fmt.Errorf("%s: no device and inode", path)
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, nil
}

// CheckFile reports, wrapping ErrGone, when the file at the store's path
// is no longer the one it opened (deleted, or replaced by another), and,
// wrapping ErrCorrupt, when the check of a large database that runs after
// Open found it damaged; nil while neither. Every write checks it first;
// /readyz asks it.
func (s *SQLite) CheckFile() error {
	if e := s.intact.err.Load(); e != nil {
		return *e
	}
	id, err := statID(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store: %s: %w (it was deleted)", s.path, ErrGone)
	case err != nil:
		return fmt.Errorf("store: %s: %w", s.path, err)
	case id != s.id:
		return fmt.Errorf("store: %s: %w (it was replaced by another file)", s.path, ErrGone)
	}
	return nil
}

// writer is the store's one write connection: every transaction and
// statement it starts first checks the file is still the one opened, so
// that nothing is written into a deleted or replaced database.
type writer struct {
	*sql.DB
	s *SQLite
}

func (w writer) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	if err := w.check(); err != nil {
		return nil, err
	}
	return w.DB.BeginTx(ctx, opts)
}

func (w writer) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := w.check(); err != nil {
		return nil, err
	}
	return w.DB.ExecContext(ctx, query, args...)
}

func (w writer) check() error {
	if w.DB == nil {
		return fmt.Errorf("store: %s: %w (opened for reading)", w.s.path, ErrReadOnly)
	}
	return w.s.CheckFile()
}

// readOnly explains why a database that failed to open may be read-only
// (nil when nothing says so): SQLite reports a read-only file system as
// "unable to open database file: no such file or directory".
func readOnly(path string) error {
	dir := filepath.Dir(path)
	var st syscall.Statfs_t
	switch {
	case syscall.Statfs(dir, &st) == nil && st.Flags&stRdOnly != 0:
		return fmt.Errorf("%w: the file system holding %s is mounted read-only", ErrReadOnly, dir)
	case syscall.Access(path, 2) != nil && fileExists(path): // W_OK
		return fmt.Errorf("%w: this user may not write %s", ErrReadOnly, path)
	case syscall.Access(dir, 3) != nil: // W_OK|X_OK
		return fmt.Errorf("%w: this user may not write its folder %s (SQLite keeps its -wal and -shm files there)", ErrReadOnly, dir)
	}
	return nil
}

// stRdOnly is ST_RDONLY, statfs's flag of a read-only mount.
const stRdOnly = 1

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// OpenReadOnly opens the database at path for reading only, as it is (no
// migration), even on a read-only file system: for `scanner backup` of a
// database no process may write. It refuses a schema newer than this
// binary's. Every write of the store it returns fails with ErrReadOnly.
func OpenReadOnly(ctx context.Context, path string) (*SQLite, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &SQLite{path: path, now: time.Now, roDSN: readOnlyDSN(abs)}
	s.w = writer{s: s}
	if s.id, err = statID(path); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	r := openPool(s.roDSN)
	r.SetMaxOpenConns(2)
	s.r = r
	ms, err := migrations()
	if err != nil {
		r.Close()
		return nil, err
	}
	var have int
	if err := r.QueryRowContext(ctx, sqlSchemaVersion).Scan(&have); err != nil {
		r.Close()
		if d := damage(path, "", err); d != nil {
			return nil, d
		}
		return nil, fmt.Errorf("store: open %s read-only: %w", path, err)
	}
	if have > len(ms) {
		r.Close()
		return nil, fmt.Errorf("store: open %s: database schema version %d is newer than this binary's %d: run a newer scanner", path, have, len(ms))
	}
	return s, nil
}

// readOnlyDSN is the URI that opens abs read-only. Where its folder cannot
// be written and it has no WAL file, SQLite could not create the -shm file
// a WAL database needs to be read: the file is then opened immutable (it
// cannot change, nothing waits in a WAL). A WAL that is there is read.
func readOnlyDSN(abs string) string {
	u := url.URL{Scheme: "file", Path: abs}
	q := "mode=ro&_busy_timeout=5000"
	if syscall.Access(filepath.Dir(abs), 3) != nil && !fileExists(abs+"-wal") {
		q += "&immutable=1"
	}
	return u.String() + "?" + q
}

// ErrNotDatabase is wrapped by Open's error for a file that is not a
// SQLite database (another file in its place, or one whose first page was
// overwritten).
var ErrNotDatabase = errors.New("the file is not a SQLite database")

// ErrCorrupt is wrapped by Open's error for a database SQLite finds damaged
// (a page overwritten, the file cut short): its words are in the error.
// The scanner does not serve such a file: SQLite's advice is to restore a
// copy, not to go on writing into the damage.
var ErrCorrupt = errors.New("the database is corrupt")

// restoreAdvice ends the error of a damaged database: what to do.
const restoreAdvice = "the scanner will not serve it; stop every scanner process using it, move it and its -wal and -shm files aside " +
	"(keep them for recovery), and put in its place a copy written by `scanner backup FILE` (or start with a new, empty database)"

// damage says what a failure opening or reading the database at path
// means for the file: ErrNotDatabase or ErrCorrupt with SQLite's words
// (what SQLite was doing, when that says more) and restoreAdvice, or nil
// when the failure says nothing about the file.
func damage(path, doing string, err error) error {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return nil
	}
	var what error
	switch se.Code {
	case sqlite3.ErrNotADB:
		what = ErrNotDatabase
	case sqlite3.ErrCorrupt:
		what = ErrCorrupt
	default:
		return nil
	}
	return fmt.Errorf("store: open %s: %w (SQLite%s: %q): %s", path, what, doing, se.Error(), restoreAdvice)
}

// checkNowBytes is the largest database Open checks whole (checkIntact)
// before it returns. PRAGMA quick_check reads every page: measured at
// about 5 ms a megabyte on the loaded 2-core development machine (2.4 to
// 3.8 s for 523 MB), which a start-up cannot wait for at Hub scale (2.8 GB).
// A larger database gets the cheap checks at Open (SQLite's header, the
// file's length against it: checkLength) and the whole check right after,
// while it serves (intactCheck).
var checkNowBytes int64 = 128 << 20

// intactCheck is the whole check of a large database, run after Open: its
// finding (ErrCorrupt or ErrNotDatabase) makes CheckFile fail, so every
// write is refused and /readyz answers 503.
type intactCheck struct {
	err  atomic.Pointer[error]
	stop context.CancelFunc
	done chan struct{}
}

// start runs checkIntact of path in the background.
func (c *intactCheck) start(path string) {
	ctx, stop := context.WithCancel(context.Background())
	c.stop, c.done = stop, make(chan struct{})
	go func() {
		defer close(c.done)
		if err := checkIntact(ctx, path); err != nil && ctx.Err() == nil {
			c.err.Store(&err)
		}
	}()
}

// close stops the check and waits for it.
func (c *intactCheck) close() {
	if c.stop != nil {
		c.stop()
		<-c.done
	}
}

// checkLength refuses, wrapping ErrCorrupt, a database file shorter than
// its own header says (cut short: a copy that stopped half-way), reading
// only its first 100 bytes. The header's page count is believed only when
// SQLite marks it valid, and not while a WAL file may hold the rest.
func checkLength(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	var h [100]byte
	if _, err := io.ReadFull(f, h[:]); err != nil || string(h[:16]) != "SQLite format 3\x00" {
		return nil // SQLite itself says what is wrong with it
	}
	if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
		return nil
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	valid := binary.BigEndian.Uint32(h[92:96]) == binary.BigEndian.Uint32(h[24:28])
	if !valid || pages == 0 || pages*pageSize <= fi.Size() {
		return nil
	}
	return fmt.Errorf("store: open %s: %w (cut short: its header counts %d pages of %d bytes, %d bytes, and the file holds %d): %s",
		path, ErrCorrupt, pages, pageSize, pages*pageSize, fi.Size(), restoreAdvice)
}

// checkIntact refuses a database file that exists and is damaged, before
// anything writes into it (setting WAL mode would rewrite its header): it
// reads it on a read-only connection of its own and runs SQLite's PRAGMA
// quick_check, which reads every page of every table and index once
// without comparing indexes to their tables (see checkNowBytes for its
// cost). It returns ErrNotDatabase or ErrCorrupt quoting SQLite, or nil:
// also when the check could not run for another reason (a folder SQLite
// cannot use), which opening for writing then explains.
func checkIntact(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err != nil {
		return nil // a new database
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	db := openPoolMapping(readOnlyDSN(abs), 0)
	defer db.Close()
	db.SetMaxOpenConns(1)
	rows, err := db.QueryContext(ctx, sqlQuickCheck)
	if err != nil {
		return damage(path, "'s PRAGMA quick_check", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil
		}
		lines = append(lines, line)
	}
	if err := rows.Err(); err != nil {
		return damage(path, "'s PRAGMA quick_check", err)
	}
	if len(lines) == 0 || (len(lines) == 1 && lines[0] == "ok") {
		return nil
	}
	return fmt.Errorf("store: open %s: %w (SQLite's PRAGMA quick_check: %q): %s", path, ErrCorrupt, strings.Join(lines, "; "), restoreAdvice)
}
