package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock(2) on path, creating it (mode 0664, as
// huggingface_hub's WeakFileLock). Python's filelock uses the same flock, so
// a Python process and the scanner never write one blob at once. It polls
// so that ctx can interrupt the wait. The returned func releases the lock.
//
// flock is what makes the cache safe to share with Python, so there is no
// fallback for systems without it: an in-process mutex would silently lose
// that guarantee, and the scanner needs a unix system anyway (the harness
// runs in its own process group under rlimits; store and probe use unix
// syscalls too).
func lockFile(ctx context.Context, path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o664)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			if errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.ENOLCK) {
				return func() {}, nil // no flock on this file system: go on unlocked, as WeakFileLock does
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
