package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/scanlock"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// TestOneScanPerDatabase: while one `scanner scan` process runs, a second
// one on the same database exits at once with a clear message and a
// non-zero code, recording nothing; `scanner serve` on that database shows
// the other process's scan as running; once the first is killed with
// SIGKILL its lock is gone and a new scan runs.
func TestOneScanPerDatabase(t *testing.T) {
	h := hubtest.New(t, llamaRepos("lock/hang-first", "lock/m-1")...)
	dir := t.TempDir()
	db, cache := filepath.Join(dir, "scanner.db"), filepath.Join(dir, "hub")
	args := append(standinArgs(t, h, db, cache), "--probe-grace", "1s")

	first, firstOut := scannerProcess(t, append(args, "--timeout", "5m")...)
	testenv.EventuallyShowing(t, "the first scan to run", 60*time.Second, func() bool { return scanRunning(db) }, firstOut.String)
	holder, held, err := scanlock.Check(db)
	if !held || err != nil || holder.PID != first.Process.Pid || holder.ScanID != 1 {
		t.Errorf("lock holder %+v (held %v, %v), want pid %d, scan 1", holder, held, err, first.Process.Pid)
	}

	second, secondOut := scannerProcess(t, append(args, "--timeout", "5s")...)
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the second scan is still running after 30 s:\n%s", secondOut.String())
	}
	if code := second.ProcessState.ExitCode(); code == 0 {
		t.Errorf("the second scan exited 0:\n%s", secondOut.String())
	}
	msg := secondOut.String()
	if !strings.Contains(msg, "another scan is running on this database") || !strings.Contains(msg, "scan 1") {
		t.Errorf("the second scan's message does not say why:\n%s", msg)
	}
	if n := scanCount(t, db); n != 1 {
		t.Errorf("%d scans recorded, want only the first", n)
	}

	base := serveForTest(t, db, h.URL())
	var state struct {
		State struct {
			Running bool  `json:"running"`
			Foreign bool  `json:"foreign"`
			ScanID  int64 `json:"scan_id"`
		} `json:"state"`
	}
	getJSON(t, base+"/api/v1/scans", &state)
	if !state.State.Running || !state.State.Foreign || state.State.ScanID != 1 {
		t.Errorf("serve's scan state %+v, want the other process's scan 1 running", state.State)
	}

	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	time.Sleep(1100 * time.Millisecond) // serve re-checks the lock each second
	state.State.Running, state.State.Foreign = false, false
	getJSON(t, base+"/api/v1/scans", &state)
	if state.State.Running || state.State.Foreign {
		t.Errorf("after the first scan died: state %+v, want nothing running", state.State)
	}
	third, thirdOut := scannerProcess(t, append(args, "--model", "lock/m-1")...)
	third.Wait()
	if code := third.ProcessState.ExitCode(); code != 0 {
		t.Errorf("a scan after the holder died: exit %d\n%s", code, thirdOut.String())
	}
}

func scanCount(t *testing.T, db string) int {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	scans, err := st.ListScans(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	return len(scans)
}

// scanRunning reports whether the database has a running scan (quietly:
// it may not exist yet).
func scanRunning(db string) bool {
	if _, err := os.Stat(db); err != nil {
		return false
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		return false
	}
	defer st.Close()
	scans, err := st.ListScans(context.Background(), 10)
	if err != nil {
		return false
	}
	for _, sc := range scans {
		if sc.Status == store.ScanRunning {
			return true
		}
	}
	return false
}
