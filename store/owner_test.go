package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
)

// TestMarkInterruptedOnlyGoneOwners: start-up marks the scans whose process
// is gone, and leaves a scan that a live process is running, on this host
// or another.
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
	me := s.me
	here := func(pid int) string {
		return Owner{Host: me.Host, PID: pid, Boot: me.Boot, Instance: "0123456789abcdef"}.String()
	}
	now := s.now()
	type scan struct {
		owner string
		seen  time.Time
	}
	scans := map[scan]ScanStatus{
		{here(live.Process.Pid), now}:                           ScanRunning,     // another live process here
		{here(dead.Process.Pid), now}:                           ScanInterrupted, // its process is gone
		{"", now}:                                               ScanInterrupted, // no owner recorded
		{"other-host.example:1234:b:i", now}:                    ScanRunning,     // another host, renewing
		{"other-host.example:1234:b:i", now.Add(-2 * OwnerTTL)}: ScanInterrupted, // another host, silent
		{fmt.Sprintf("%s:%d", me.Host, dead.Process.Pid), now}:  ScanInterrupted, // an older binary's owner, gone
		{"old-host.example:77", now.Add(-time.Hour)}:            ScanInterrupted, // an older binary's, on another host, silent
		{here(live.Process.Pid), now.Add(-2 * OwnerTTL)}:        ScanInterrupted, // a live pid that stopped renewing (reused)
	}
	ids := map[scan]int64{}
	for sc := range scans {
		id, err := s.StartScan(ctx, Scan{Trigger: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.w.ExecContext(ctx, `UPDATE scans SET owner = ?, owner_seen = ? WHERE id = ?`, sc.owner, unixNano(sc.seen), id); err != nil {
			t.Fatal(err)
		}
		ids[sc] = id
	}
	n, err := s.MarkInterrupted(ctx)
	if err != nil || n != 6 {
		t.Fatalf("marked %d (%v), want 6", n, err)
	}
	for sc, want := range scans {
		got, err := s.GetScan(ctx, ids[sc])
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want {
			t.Errorf("owner %q seen %v ago: %s, want %s", sc.owner, now.Sub(sc.seen), got.Status, want)
		}
	}
}

// TestOwnerGone: the one rule for whether the process that owns a running
// scan is gone. Ownership does not depend on the host name alone: a scan of
// another host (a container recreated under a new name) is an orphan once
// its owner stops renewing it; on this machine (same host and boot) a dead
// pid, or this pid under another instance (a restarted container), is gone
// at once.
func TestOwnerGone(t *testing.T) {
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	me := Owner{Host: "scanner-0", PID: os.Getpid(), Boot: "boot-1", Instance: "aaaa"}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	fresh, stale := now.Add(-OwnerBeat), now.Add(-OwnerTTL-time.Second)
	lp := live.Process.Pid
	tests := []struct {
		owner string
		seen  time.Time
		gone  bool
	}{
		{"", fresh, true},
		{"no-colon", fresh, true},
		{"scanner-0:not-a-pid", fresh, true},
		{"scanner-0:0", fresh, true},
		{"scanner-0:-1", fresh, true},
		// This machine: the pid decides at once, the heartbeat besides.
		{fmt.Sprintf("scanner-0:%d:boot-1:bbbb", lp), fresh, false},
		{fmt.Sprintf("scanner-0:%d:boot-1:bbbb", lp), stale, true},
		{fmt.Sprintf("scanner-0:%d:boot-1:bbbb", me.PID), fresh, true},  // my pid, another instance: a restart
		{fmt.Sprintf("scanner-0:%d:boot-1:aaaa", me.PID), stale, false}, // this very process
		{"scanner-0:999999999:boot-1:bbbb", fresh, true},                // no such pid
		// The same name after a reboot, or another host: the heartbeat decides.
		{fmt.Sprintf("scanner-0:%d:boot-0:bbbb", lp), fresh, false},
		{"scanner-0:999999999:boot-0:bbbb", fresh, false},
		{"scanner-0:999999999:boot-0:bbbb", stale, true},
		{"scanner-7f9c:1:boot-9:cccc", fresh, false},
		{"scanner-7f9c:1:boot-9:cccc", stale, true},
		// An older binary's "host:pid", renewed by nobody.
		{fmt.Sprintf("scanner-0:%d", lp), fresh, false},
		{fmt.Sprintf("scanner-0:%d", me.PID), fresh, true},
		{"other-host.example:1234", fresh, false},
		{"other-host.example:1234", stale, true},
	}
	for _, tt := range tests {
		if got := ownerGone(tt.owner, tt.seen, now, me); got != tt.gone {
			t.Errorf("ownerGone(%q, seen %v ago) = %v; want %v", tt.owner, now.Sub(tt.seen), got, tt.gone)
		}
	}
}

// TestTwoServersOnOneDatabase: a server adopts another's scan only once its
// owner stopped renewing it, and of two servers only one adopts it.
func TestTwoServersOnOneDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	open := func(host, instance string) *SQLite {
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		s.me = Owner{Host: host, PID: 1, Boot: "boot", Instance: instance}
		return s
	}
	a, b, c := open("scanner-a", "a"), open("scanner-b", "b"), open("scanner-c", "c")
	now := time.Now()
	a.now = func() time.Time { return now }
	id, err := a.StartScan(ctx, Scan{Trigger: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.UpsertModels(ctx, []ModelUpsert{{ID: "o/m", SHA: "s"}}); err != nil {
		t.Fatal(err)
	}
	if err := a.EnqueueJobs(ctx, id, []NewJob{{RuntimeKey: "k", Job: fleet.Job{ModelID: "o/m", Revision: "s", Target: "cpu", Mode: "arch"}}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*SQLite{b, c} {
		s.now = func() time.Time { return now.Add(OwnerBeat) }
		if ids, err := s.ResumeScans(ctx); err != nil || len(ids) != 0 {
			t.Fatalf("%s adopted a renewed scan: %v %v", s.me.Host, ids, err)
		}
	}
	// a renews, then falls silent.
	a.now = func() time.Time { return now.Add(2 * OwnerBeat) }
	if err := a.RenewScanOwner(ctx, id); err != nil {
		t.Fatal(err)
	}
	later := now.Add(2*OwnerBeat + OwnerTTL + time.Second)
	b.now = func() time.Time { return later }
	c.now = func() time.Time { return later }
	gotB, err := b.ResumeScans(ctx)
	if err != nil || len(gotB) != 1 || gotB[0] != id {
		t.Fatalf("b after a fell silent: %v %v", gotB, err)
	}
	if gotC, err := c.ResumeScans(ctx); err != nil || len(gotC) != 0 {
		t.Errorf("c adopted the scan b had just adopted: %v %v", gotC, err)
	}
	if err := a.RenewScanOwner(ctx, id); err == nil {
		t.Error("a renewed a scan that b owns now")
	}
	if err := b.RenewScanOwner(ctx, id); err != nil {
		t.Errorf("b renewing its adopted scan: %v", err)
	}
}
