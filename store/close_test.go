package store_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/store"
)

// TestCloseLeavesOneFile: Close closes the read pool as well as the writer,
// so SQLite, at its last connection's close, checkpoints the WAL and
// deletes it: the database is one file again, safe to copy or move.
func TestCloseLeavesOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scanner.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	upsert(t, s, "org/a", "org/b")
	if _, err := s.GetModel(ctx, "org/a", ""); err != nil { // a read: the read pool opens a connection
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + suffix); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after Close, %s is still there (%v): a pool was left open", filepath.Base(path+suffix), err)
		}
	}
}
