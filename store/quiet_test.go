package store

import (
	"context"
	"testing"
	"time"
)

// Calls that find nothing to do leave the data's change time alone, so
// that the pages' caches keyed by it stay: an empty poll for work, a
// start-up with no orphan scans or jobs.
func TestNothingToDoLeavesTheChangeTime(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 2, "")
	// The fixture's scan belongs to a live process on another host, which
	// renews it: it is no orphan (its jobs stay queued), and nothing is
	// leased yet.
	clock := wt0
	renew := func() {
		if _, err := s.w.ExecContext(ctx, sqlScanOwner, "other-host.example:1234:b:i", unixNano(clock), scanID); err != nil {
			t.Fatal(err)
		}
	}
	s.SetClock(func() time.Time { return clock })
	calls := []struct {
		name string
		call func() (int, error) // how many things it did (want 0)
	}{
		{"a poll with no job for the worker's runtime", func() (int, error) {
			ls, _, err := s.LeaseJobs(ctx, worker("b", wrtB), 2, wt0, wttl)
			return len(ls), err
		}},
		{"cancelling orphan jobs with no orphan scan", func() (int, error) { return s.CancelOrphanJobs(ctx) }},
		{"marking interrupted scans with none", func() (int, error) { return s.MarkInterrupted(ctx) }},
	}
	for _, c := range calls {
		before, err := s.Changed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(time.Minute)
		renew()
		if n, err := c.call(); err != nil || n != 0 {
			t.Fatalf("%s: did %d, %v; want nothing", c.name, n, err)
		}
		if after, _ := s.Changed(ctx); !after.Equal(before) {
			t.Errorf("%s moved the change time: %v → %v", c.name, before, after)
		}
	}
	if c, err := s.ScanJobs(ctx, scanID); err != nil || c.Total != 2 || c.Queued != 2 {
		t.Errorf("jobs after doing nothing: %+v, %v; want 2 queued", c, err)
	}
	// A poll that leases moves it.
	before, _ := s.Changed(ctx)
	clock = clock.Add(time.Minute)
	if ls, _, err := s.LeaseJobs(ctx, worker("a", wrtA), 1, wt0, wttl); err != nil || len(ls) != 1 {
		t.Fatalf("lease: %v, %v", ls, err)
	}
	if after, _ := s.Changed(ctx); !after.After(before) {
		t.Errorf("a lease did not move the change time: %v → %v", before, after)
	}
}
