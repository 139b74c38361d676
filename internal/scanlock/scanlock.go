// Package scanlock keeps one scan per database across processes: a scan
// holds an open-file-description lock (fcntl F_OFD_SETLK) on a file next
// to the database, which the kernel releases when the process ends, however
// it ends (kill -9 included). The file also says who holds it (pid, host,
// scan id, since when), so that another process can tell a person, and
// `scanner serve` can show the foreign scan as running.
package scanlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrHeld is returned by TryLock when another process is scanning the
// same database; the error (a *HeldError) says who.
var ErrHeld = errors.New("another scan is running on this database")

// Holder is what the lock file says about the scan that holds it.
type Holder struct {
	PID    int       `json:"pid"`
	Host   string    `json:"host"`
	ScanID int64     `json:"scan_id,omitempty"` // 0 until the scan is recorded
	Since  time.Time `json:"since"`
}

// HeldError is ErrHeld with the holder.
type HeldError struct{ Holder Holder }

func (e *HeldError) Error() string {
	h := e.Holder
	var who []string
	if h.ScanID > 0 {
		who = append(who, fmt.Sprintf("scan %d", h.ScanID))
	}
	if h.PID > 0 {
		who = append(who, fmt.Sprintf("pid %d on %s", h.PID, h.Host))
	}
	if !h.Since.IsZero() {
		who = append(who, "since "+h.Since.Format(time.RFC3339))
	}
	if len(who) == 0 {
		return ErrHeld.Error()
	}
	return ErrHeld.Error() + " (" + strings.Join(who, ", ") + ")"
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// Path is the lock file of the database at db.
func Path(db string) string { return db + ".scan.lock" }

// Lock is a held scan lock.
type Lock struct {
	f      *os.File
	holder Holder
}

// TryLock takes the scan lock of the database at db without waiting. When
// another process holds it, the error is a *HeldError (matching ErrHeld).
func TryLock(db string) (*Lock, error) {
	f, err := os.OpenFile(Path(db), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("scan lock: %w", err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		holder := read(f)
		f.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return nil, &HeldError{Holder: holder}
		}
		return nil, fmt.Errorf("scan lock %s: %w", Path(db), err)
	}
	host, _ := os.Hostname()
	l := &Lock{f: f, holder: Holder{PID: os.Getpid(), Host: host, Since: time.Now().UTC().Truncate(time.Second)}}
	if err := l.write(); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

// SetScan records the id of the scan holding the lock, for others to read.
// On a nil Lock it does nothing.
func (l *Lock) SetScan(id int64) error {
	if l == nil {
		return nil
	}
	l.holder.ScanID = id
	return l.write()
}

func (l *Lock) write() error {
	b, _ := json.Marshal(l.holder)
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("scan lock: %w", err)
	}
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("scan lock: %w", err)
	}
	return nil
}

// Release gives the lock up (a nil Lock: nothing to do). The file stays
// (removing it would race with a process opening it to lock).
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := l.f.Close() // closing the description releases its OFD lock
	l.f = nil
	return err
}

// Check reports whether a process other than the caller's own Lock
// holds the scan lock of the database at db, and who, without taking it.
func Check(db string) (Holder, bool, error) {
	f, err := os.Open(Path(db))
	if errors.Is(err, os.ErrNotExist) {
		return Holder{}, false, nil
	}
	if err != nil {
		return Holder{}, false, fmt.Errorf("scan lock: %w", err)
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return Holder{}, false, fmt.Errorf("scan lock %s: %w", Path(db), err)
	}
	if lk.Type == unix.F_UNLCK {
		return Holder{}, false, nil
	}
	return read(f), true, nil
}

// read is what the lock file says (the zero Holder when it says nothing
// readable: the holder is just starting, or wrote it in another format).
func read(f *os.File) Holder {
	var h Holder
	b := make([]byte, 512)
	n, _ := f.ReadAt(b, 0)
	_ = json.Unmarshal(b[:n], &h)
	return h
}
