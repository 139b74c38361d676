package store_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// TestADeletedDatabaseIsNoticed: once the database file is deleted or
// replaced under a running server, writes would go into a file nobody can
// read again (a restart starts empty). The store notices the file's
// identity changed: CheckFile fails and every write is refused with ErrGone,
// saying what happened.
func TestADeletedDatabaseIsNoticed(t *testing.T) {
	for _, how := range []string{"deleted", "replaced"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "scanner.db")
			s, err := store.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			upsert(t, s, "org/a")
			if err := s.CheckFile(); err != nil {
				t.Fatalf("before: %v", err)
			}
			switch how {
			case "deleted":
				for _, suffix := range []string{"", "-wal", "-shm"} {
					os.Remove(path + suffix)
				}
			case "replaced":
				other, err := store.Open(ctx, filepath.Join(dir, "other.db"))
				if err != nil {
					t.Fatal(err)
				}
				other.Close()
				if err := os.Rename(filepath.Join(dir, "other.db"), path); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.CheckFile(); !errors.Is(err, store.ErrGone) {
				t.Errorf("after the file was %s: %v, want ErrGone", how, err)
			}
			_, err = s.RecordResult(ctx, "org/a", result(compat.TargetTPU, compat.StatusPass, at(1)))
			if !errors.Is(err, store.ErrGone) || !strings.Contains(err.Error(), how) || !strings.Contains(err.Error(), path) {
				t.Errorf("a write after the file was %s: %v; want ErrGone saying so and naming the file", how, err)
			}
			if err := s.UpsertModels(ctx, []store.ModelUpsert{{ID: "org/b", SHA: "s"}}); !errors.Is(err, store.ErrGone) {
				t.Errorf("another write: %v", err)
			}
			if _, err := s.StartScan(ctx, store.Scan{Trigger: "test"}); !errors.Is(err, store.ErrGone) {
				t.Errorf("starting a scan: %v", err)
			}
		})
	}
}
