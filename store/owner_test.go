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

// TestOwnerGone: which recorded owners of a running scan are certainly
// gone. Pids that name no single process (0 is the caller's process group,
// negatives are groups too) and this very process (just started, so its
// scans are from an earlier run) count as gone.
func TestOwnerGone(t *testing.T) {
	host, _ := os.Hostname()
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	tests := []struct {
		owner string
		gone  bool
	}{
		{"", true},
		{"no-colon", true},
		{host + ":not-a-pid", true},
		{host + ":0", true},
		{host + ":-1", true},
		{fmt.Sprintf("%s:%d", host, os.Getpid()), true},
		{fmt.Sprintf("%s:%d", host, live.Process.Pid), false},
		{"other-host.example:1234", false},
	}
	for _, tt := range tests {
		if got := ownerGone(tt.owner); got != tt.gone {
			t.Errorf("ownerGone(%q) = %v; want %v", tt.owner, got, tt.gone)
		}
	}
}
