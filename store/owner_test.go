package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMarkInterruptedOnlyGoneOwners: start-up marks the scans whose process
// is gone, and leaves a scan that a live process is running.
func TestMarkInterruptedOnlyGoneOwners(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	owners := map[string]ScanStatus{
		fmt.Sprintf("%s:%d", host, live.Process.Pid): ScanRunning,     // another live process here
		fmt.Sprintf("%s:%d", host, dead.Process.Pid): ScanInterrupted, // its process is gone
		"":                        ScanInterrupted, // no owner recorded
		"other-host.example:1234": ScanRunning,     // cannot be checked from here
	}
	ids := map[string]int64{}
	for owner := range owners {
		id, err := s.StartScan(ctx, Scan{Trigger: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.w.ExecContext(ctx, sqlScanOwner, owner, id); err != nil {
			t.Fatal(err)
		}
		ids[owner] = id
	}
	n, err := s.MarkInterrupted(ctx)
	if err != nil || n != 2 {
		t.Fatalf("marked %d (%v), want 2", n, err)
	}
	for owner, want := range owners {
		sc, err := s.GetScan(ctx, ids[owner])
		if err != nil {
			t.Fatal(err)
		}
		if sc.Status != want {
			t.Errorf("owner %q: %s, want %s", owner, sc.Status, want)
		}
	}
}
