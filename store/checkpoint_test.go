package store_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/store"
)

// walSize is the size of the -wal file beside path, 0 when there is none.
func walSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path + "-wal")
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// listingOf is n models org/m0… with downloads from base.
func listingOf(n int, base int64) []store.ModelUpsert {
	ups := make([]store.ModelUpsert, n)
	for i := range ups {
		ups[i] = store.ModelUpsert{ID: fmt.Sprintf("org/m%d", i), Task: "text-generation", Library: "transformers",
			Downloads: base + int64(n-i), SHA: "sha"}
	}
	return ups
}

// A listing large enough to be read at once commits without its
// checkpoint, which the checkpointer runs: under a stream of such writes
// the WAL stays within a few writes (without the checkpointer, it would
// hold every one of them), and once the checkpointer has caught up a WAL
// past the cap is truncated.
func TestCheckpointerKeepsTheWALBounded(t *testing.T) {
	defer store.SetBulkListing(50)()
	defer store.SetWALCap(1)() // truncate whenever every page is copied back
	path := filepath.Join(t.TempDir(), "scanner.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n, writes = 400, 40
	if err := s.UpsertModels(ctx, listingOf(n, 0)); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitCheckpoint(); err != nil {
		t.Fatal(err)
	}
	if got := walSize(t, path); got != 0 {
		t.Fatalf("after the checkpointer caught up, the WAL holds %d bytes; want it truncated", got)
	}
	if err := s.UpsertModels(ctx, listingOf(n, 1000)); err != nil { // every model's downloads move
		t.Fatal(err)
	}
	one := walSize(t, path) // one write's pages, the WAL having been empty
	if one == 0 {
		t.Fatal("a listing that moved every model's downloads left no WAL: the test measures nothing")
	}
	biggest := one
	for i := range writes {
		if err := s.UpsertModels(ctx, listingOf(n, int64(2000+1000*i))); err != nil {
			t.Fatal(err)
		}
		biggest = max(biggest, walSize(t, path))
	}
	if biggest > writes/4*one {
		t.Errorf("under %d listings of %d bytes of WAL each, the WAL reached %d bytes (%.1f listings): the checkpoints do not keep up",
			writes, one, biggest, float64(biggest)/float64(one))
	}
	if err := s.WaitCheckpoint(); err != nil {
		t.Fatal(err)
	}
	if got := walSize(t, path); got != 0 {
		t.Errorf("after the stream, the checkpointer caught up and left %d bytes of WAL; want it truncated", got)
	}
}

// A large write turns its commit's checkpoint off for that commit only:
// the small writes after it checkpoint in their commits as before (the
// checkpointer is not asked for them), so the WAL stays near SQLite's
// 1000 pages under a stream of them.
func TestSmallWritesStillCheckpoint(t *testing.T) {
	defer store.SetBulkListing(50)()
	defer store.SetWALCap(1)()
	path := filepath.Join(t.TempDir(), "scanner.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.UpsertModels(ctx, listingOf(100, 0)); err != nil { // a large write: aside
		t.Fatal(err)
	}
	if err := s.WaitCheckpoint(); err != nil { // and its WAL truncated
		t.Fatal(err)
	}
	const pageFrame = 4096 + 24
	const writes = 600
	for i := range writes {
		m := listingOf(100, int64(1000*(i+1)))[i%20 : i%20+1]
		if err := s.UpsertModels(ctx, m); err != nil {
			t.Fatal(err)
		}
		if i == 0 && walSize(t, path)*writes < 3000*pageFrame {
			t.Fatalf("a small write wrote %d bytes of WAL: too few to tell whether they checkpoint", walSize(t, path))
		}
	}
	if got := walSize(t, path); got > 1500*pageFrame {
		t.Errorf("after %d small writes the WAL holds %d bytes (%d pages): their commits do not checkpoint", writes, got, got/pageFrame)
	}
}

// Close ends the checkpointer's goroutine and leaves one file.
func TestCloseStopsTheCheckpointer(t *testing.T) {
	defer store.SetBulkListing(50)()
	path := filepath.Join(t.TempDir(), "scanner.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertModels(ctx, listingOf(200, 0)); err != nil { // asks for a checkpoint
		t.Fatal(err)
	}
	done := s.CheckpointerDone()
	select {
	case <-done:
		t.Fatal("the checkpointer ended before Close")
	default:
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	default:
		t.Error("Close returned with the checkpointer's goroutine still running")
	}
	if got := walSize(t, path); got != 0 {
		t.Errorf("after Close a WAL of %d bytes is left", got)
	}
}
