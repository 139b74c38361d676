package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
)

// Expiring leases counts the jobs it put back in the queue and moves the
// data's change time.
func TestExpireLeasesCountsRequeued(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 3, "")
	if l, _, err := s.LeaseJobs(ctx, worker("a", wrtA), 2, wt0, wttl); err != nil || len(l) != 2 {
		t.Fatalf("lease: %+v, %v", l, err)
	}
	before, _ := s.Changed(ctx)
	exp, err := s.ExpireLeases(ctx, wt0.Add(wttl))
	if err != nil || exp.Requeued != 2 || len(exp.Failed) != 0 {
		t.Fatalf("expire = %+v, %v; want 2 requeued, none failed", exp, err)
	}
	if c, _ := s.ScanJobs(ctx, scanID); c != (JobCounts{Total: 3, Queued: 3}) {
		t.Errorf("counts %+v; want 3 queued", c)
	}
	if after, _ := s.Changed(ctx); !after.After(before) {
		t.Errorf("requeueing did not move the change time: %v → %v", before, after)
	}
}

// loseLeases leases q/m0's job fleet.MaxLostLeases times, letting each
// lease lapse, and returns the time at which the last one is due: the
// expiry then fails the job.
func loseLeases(t *testing.T, s *SQLite) time.Time {
	t.Helper()
	ctx := context.Background()
	now := wt0
	for i := range fleet.MaxLostLeases {
		if l, _, err := s.LeaseJobs(ctx, worker(fmt.Sprintf("w%d", i), wrtA), 1, now, wttl); err != nil || len(l) != 1 {
			t.Fatalf("lease %d: %+v, %v", i, l, err)
		}
		now = now.Add(wttl)
		if i < fleet.MaxLostLeases-1 {
			if exp, err := s.ExpireLeases(ctx, now); err != nil || exp.Requeued != 1 {
				t.Fatalf("expire %d: %+v, %v", i, exp, err)
			}
		}
	}
	return now
}

// A job that lost its every lease shows its error result as the model's
// current result on the target and on any target.
func TestLostJobResultIsShown(t *testing.T) {
	ctx := context.Background()
	s, _ := queueFixture(t, 1, "")
	exp, err := s.ExpireLeases(ctx, loseLeases(t, s))
	if err != nil || len(exp.Failed) != 1 || exp.Requeued != 0 {
		t.Fatalf("expire = %+v, %v; want one failed", exp, err)
	}
	for _, target := range []compat.Target{"cpu", ""} {
		m, err := s.GetModel(ctx, "q/m0", target)
		if err != nil || m.Result == nil || m.Result.Status != compat.StatusError || !m.Result.TestedAt.Equal(exp.Failed[0].Result.TestedAt) {
			t.Errorf("q/m0 on %q: %+v, %v; want the lost-lease error result", target, m.Result, err)
		}
	}
}

// A write that fails while expiring leases fails the expiry and leaves
// nothing half done: the job keeps its lease, no result is stored; the
// next expiry does it all.
func TestExpireLeasesAllOrNothing(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 1, "")
	now := loseLeases(t, s)
	for _, q := range []string{
		`CREATE TRIGGER no_current_update BEFORE UPDATE ON current BEGIN SELECT RAISE(ABORT, 'current is read-only'); END`,
		`CREATE TRIGGER no_current_insert BEFORE INSERT ON current BEGIN SELECT RAISE(ABORT, 'current is read-only'); END`,
	} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if exp, err := s.ExpireLeases(ctx, now); err == nil {
		t.Fatalf("expire with current read-only: %d requeued, %d failed, no error; want the write's error", exp.Requeued, len(exp.Failed))
	}
	if c, _ := s.ScanJobs(ctx, scanID); c != (JobCounts{Total: 1, Leased: 1}) {
		t.Errorf("counts after the failed expiry %+v; want still leased", c)
	}
	if h, err := s.History(ctx, "q/m0", "", 0); err != nil || len(h) != 0 {
		t.Errorf("history after the failed expiry: %d results, %v; want none", len(h), err)
	}
	for _, q := range []string{`DROP TRIGGER no_current_update`, `DROP TRIGGER no_current_insert`} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if exp, err := s.ExpireLeases(ctx, now); err != nil || len(exp.Failed) != 1 {
		t.Errorf("expire again = %+v, %v; want one failed", exp, err)
	}
}
