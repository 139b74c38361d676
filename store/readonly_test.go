package store_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// The variables that turn this test binary into the child of
// TestAReadOnlyDatabase: the database (on a read-only mount) and where the
// backup goes.
const (
	roChildDB  = "STORE_TEST_RO_DB"
	roChildOut = "STORE_TEST_RO_OUT"
)

// TestAReadOnlyDatabase: a database on a read-only file system (a volume
// mounted readOnly) is not "no such file or directory": Open says it is
// read-only and why, and a backup still reads it, the WAL of a database
// copied while in use included. The checks run in a child process whose
// mount namespace has the database's folder mounted read-only.
func TestAReadOnlyDatabase(t *testing.T) {
	if db := os.Getenv(roChildDB); db != "" {
		readOnlyChild(t, db, os.Getenv(roChildOut))
		return
	}
	dir, out := t.TempDir(), t.TempDir()
	// "clean" was closed (one file); "inuse" is a copy of the three files
	// of a database still open, its last result only in the WAL.
	clean := filepath.Join(dir, "clean", "scanner.db")
	s, err := store.Open(ctx, clean)
	if err != nil {
		t.Fatal(err)
	}
	upsert(t, s, "org/a")
	record(t, s, "org/a", result(compat.TargetTPU, compat.StatusPass, at(1)))
	s.Close()
	live := filepath.Join(t.TempDir(), "scanner.db")
	s, err = store.Open(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	upsert(t, s, "org/a")
	record(t, s, "org/a", result(compat.TargetTPU, compat.StatusFail, at(2)))
	if err := os.MkdirAll(filepath.Join(dir, "inuse"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(live + suffix)
		if err != nil {
			t.Fatalf("%s: %v", suffix, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "inuse", "scanner.db"+suffix), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	args := []string{"-m", "sh", "-c", `mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && echo MOUNTED && exec "$1" -test.run='^TestAReadOnlyDatabase$' -test.v`,
		dir, os.Args[0]}
	if os.Geteuid() != 0 {
		args = append([]string{"-r"}, args...) // an unprivileged user namespace
	}
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), roChildDB+"="+dir, roChildOut+"="+out)
	b, err := cmd.CombinedOutput()
	if !strings.Contains(string(b), "MOUNTED") {
		testenv.Missing(t, "cannot mount a folder read-only here (unshare -m, bind mount): %v\n%s", err, b)
	}
	if err != nil {
		t.Fatalf("the read-only checks failed: %v\n%s", err, b)
	}
	for name, want := range map[string]compat.Status{"clean": compat.StatusPass, "inuse": compat.StatusFail} {
		bk, err := store.Open(ctx, filepath.Join(out, name+".db"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := bk.GetModel(ctx, "org/a", compat.TargetTPU)
		bk.Close()
		if err != nil || m.Result == nil || m.Result.Status != want {
			t.Errorf("backup of %s: %+v %v; want its %s result", name, m.Result, err, want)
		}
	}
}

func readOnlyChild(t *testing.T, dir, out string) {
	for _, name := range []string{"clean", "inuse"} {
		db := filepath.Join(dir, name, "scanner.db")
		_, err := store.Open(ctx, db)
		if !errors.Is(err, store.ErrReadOnly) || !strings.Contains(err.Error(), "read-only") || strings.Contains(err.Error(), "no such file") {
			t.Errorf("%s: Open on a read-only mount: %v; want ErrReadOnly saying why", name, err)
		}
		ro, err := store.OpenReadOnly(ctx, db)
		if err != nil {
			t.Fatalf("%s: OpenReadOnly: %v", name, err)
		}
		if err := ro.Backup(ctx, filepath.Join(out, name+".db")); err != nil {
			t.Errorf("%s: backup of a read-only database: %v", name, err)
		}
		ro.Close()
	}
}
