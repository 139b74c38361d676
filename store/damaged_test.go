package store_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// TestOpenSaysWhatIsWrongWithADamagedFile: a file that is not a database,
// one cut in half and one with a page overwritten are each refused at
// Open, saying what is wrong (not a database; corrupt, in SQLite's own
// words) and pointing at `scanner backup` copies; none is reported as
// deleted or replaced (ErrGone), and none is served as if whole.
func TestOpenSaysWhatIsWrongWithADamagedFile(t *testing.T) {
	dir := t.TempDir()
	// A whole database, compacted (a backup has no free pages, so that
	// every page overwritten below belongs to a table or an index).
	src := filepath.Join(dir, "src.db")
	s, err := store.Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.Seed(ctx, s, 300, 600); err != nil {
		t.Fatal(err)
	}
	whole := filepath.Join(dir, "whole.db")
	if err := s.Backup(ctx, whole); err != nil {
		t.Fatal(err)
	}
	s.Close()
	good, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	if len(good) < 20*page {
		t.Fatalf("the seeded database has %d bytes; want at least 20 pages", len(good))
	}
	garbage := []byte(strings.Repeat("this is no database, only text that looks like nothing\n", 200))
	overwritten := append([]byte(nil), good...)
	mid := len(good) / page / 2 * page
	copy(overwritten[mid:mid+page], garbage)
	// A page whose header is kept and whose cells are overwritten: SQLite
	// reads it, and quick_check lists what it finds wrong.
	cells := append([]byte(nil), good...)
	copy(cells[mid+page+12:mid+2*page], garbage)
	for _, c := range []struct {
		name    string
		content []byte
		want    error
		words   []string // besides the file's path and `scanner backup`
	}{
		{"garbage", garbage, store.ErrNotDatabase, []string{"not a SQLite database"}},
		{"empty header", make([]byte, 3*page), store.ErrNotDatabase, []string{"not a SQLite database"}},
		{"cut in half", good[:len(good)/2], store.ErrCorrupt, []string{"corrupt"}},
		{"one page overwritten", overwritten, store.ErrCorrupt, []string{"corrupt", "quick_check"}},
		{"one page's cells overwritten", cells, store.ErrCorrupt, []string{"corrupt", "quick_check"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "scanner.db")
			if err := os.WriteFile(path, c.content, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := store.Open(ctx, path)
			if err == nil {
				s.Close()
				t.Fatalf("Open served a damaged database (%s)", c.name)
			}
			if errors.Is(err, store.ErrGone) || strings.Contains(err.Error(), "deleted or replaced") {
				t.Errorf("Open: %v; a damaged file is not a deleted or replaced one", err)
			}
			if !errors.Is(err, c.want) {
				t.Errorf("Open: %v; want %v", err, c.want)
			}
			for _, w := range append(c.words, path, "scanner backup") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open: %v; want it to say %q", err, w)
				}
			}
			// `scanner backup` reads it as it is: it says the same of a
			// file that is not a database (a corrupt one may still be
			// copied, for recovery).
			if ro, err := store.OpenReadOnly(ctx, path); c.want == store.ErrNotDatabase && !errors.Is(err, store.ErrNotDatabase) {
				t.Errorf("OpenReadOnly: %v; want %v", err, c.want)
			} else if err == nil {
				ro.Close()
			}
			after, _ := os.ReadFile(path)
			if string(after) != string(c.content) {
				t.Errorf("Open changed the damaged file (%d bytes, was %d): it must be left as found for recovery", len(after), len(c.content))
			}
		})
	}
	// The whole copy still opens: the check does not refuse a sound file.
	s, err = store.Open(ctx, whole)
	if err != nil {
		t.Fatalf("the undamaged copy: %v", err)
	}
	s.Close()

	// A large database gets the cheap checks at Open and the whole check
	// after: a file cut short is refused at once; a page overwritten is
	// found while the store serves, and then every write is refused and
	// CheckFile (/readyz) says why.
	defer store.SetCheckNowBytes(0)()
	for _, c := range []struct {
		name    string
		content []byte
		atOpen  error
	}{
		{"garbage", garbage, store.ErrNotDatabase},
		{"cut in half", good[:len(good)/2], store.ErrCorrupt},
		{"one page overwritten", overwritten, nil},
		{"whole", good, nil},
	} {
		t.Run("large/"+c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "scanner.db")
			if err := os.WriteFile(path, c.content, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := store.Open(ctx, path)
			if c.atOpen != nil {
				if !errors.Is(err, c.atOpen) || !strings.Contains(err.Error(), "scanner backup") {
					t.Errorf("Open: %v; want %v", err, c.atOpen)
				}
				if c.atOpen == store.ErrCorrupt && (err == nil || !strings.Contains(err.Error(), "cut short")) {
					t.Errorf("Open: %v; want it to say the file is cut short", err)
				}
				if err == nil {
					s.Close()
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v; want the whole check after it", err)
			}
			defer s.Close()
			s.WaitIntactCheck()
			err = s.CheckFile()
			if c.name == "whole" {
				if err != nil {
					t.Errorf("a sound large database: CheckFile %v", err)
				}
				return
			}
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "quick_check") || !strings.Contains(err.Error(), "scanner backup") {
				t.Errorf("CheckFile after the check: %v; want ErrCorrupt quoting quick_check", err)
			}
			if err := s.UpsertModels(ctx, []store.ModelUpsert{{ID: "org/new", SHA: "s"}}); !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("a write into a corrupt database: %v; want ErrCorrupt", err)
			}
		})
	}
}
