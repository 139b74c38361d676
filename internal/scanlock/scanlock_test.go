package scanlock

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary hold a lock as another process would.
func TestMain(m *testing.M) {
	if db := os.Getenv("SCANLOCK_TEST_HOLD"); db != "" {
		l, err := TryLock(db)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		l.SetScan(42)
		fmt.Println("locked")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestOneHolderAtATime(t *testing.T) {
	db := filepath.Join(t.TempDir(), "scanner.db")
	if _, held, err := Check(db); held || err != nil {
		t.Fatalf("no lock file yet: held %v, %v", held, err)
	}
	a, err := TryLock(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetScan(7); err != nil {
		t.Fatal(err)
	}
	_, err = TryLock(db)
	var he *HeldError
	if !errors.Is(err, ErrHeld) || !errors.As(err, &he) {
		t.Fatalf("second TryLock: %v, want ErrHeld", err)
	}
	if he.Holder.PID != os.Getpid() || he.Holder.ScanID != 7 || he.Holder.Since.IsZero() {
		t.Errorf("holder %+v", he.Holder)
	}
	if !strings.Contains(err.Error(), "scan 7") || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("message %q does not say who holds it", err)
	}
	h, held, err := Check(db)
	if !held || err != nil || h.ScanID != 7 {
		t.Errorf("Check = %+v, %v, %v; want held by scan 7", h, held, err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if _, held, _ := Check(db); held {
		t.Error("held after Release")
	}
	b, err := TryLock(db)
	if err != nil {
		t.Fatalf("TryLock after Release: %v", err)
	}
	b.Release()
}

// TestDeathReleases: the lock of a process killed with SIGKILL is free at
// once, and while it lived others saw it and who held it.
func TestDeathReleases(t *testing.T) {
	db := filepath.Join(t.TempDir(), "scanner.db")
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "SCANLOCK_TEST_HOLD="+db)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("child: %q", line)
	}
	_, err = TryLock(db)
	var he *HeldError
	if !errors.As(err, &he) || he.Holder.PID != cmd.Process.Pid || he.Holder.ScanID != 42 {
		t.Fatalf("TryLock while the child holds it: %v", err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	l, err := TryLock(db)
	if err != nil {
		t.Fatalf("TryLock after the holder died: %v", err)
	}
	l.Release()
}

// TestHeldErrorNamesOnlyWhatIsKnown: a holder's scan, process and start
// are named only when the lock file gave them (a zero is "not known").
func TestHeldErrorNamesOnlyWhatIsKnown(t *testing.T) {
	since := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    Holder
		want string
	}{
		{Holder{}, ErrHeld.Error()},
		{Holder{ScanID: 1}, ErrHeld.Error() + " (scan 1)"},
		{Holder{PID: 1, Host: "h"}, ErrHeld.Error() + " (pid 1 on h)"},
		{Holder{ScanID: 2, PID: 3, Host: "h", Since: since}, ErrHeld.Error() + " (scan 2, pid 3 on h, since 2026-12-01T10:00:00Z)"},
	} {
		if got := (&HeldError{Holder: tc.h}).Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.h, got, tc.want)
		}
	}
}
