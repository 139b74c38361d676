package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
)

// TestTheServerStampsAResultsTime: a worker's clock ahead of the server's
// must not make its older result newer than a later one. The server
// records when it received each result (tested_at), keeps the worker's own
// time beside it, and refuses a worker's time outside the sane window.
func TestTheServerStampsAResultsTime(t *testing.T) {
	ctx := context.Background()
	s, _ := queueFixture(t, 1, "")
	fast, slow := worker("fast", wrtA), worker("slow", wrtA)

	// The fast worker's clock is 4 minutes ahead (within the skew allowed):
	// its fail arrives at wt0+30s saying wt0+4m30s.
	l, _, err := s.LeaseJobs(ctx, fast, 1, wt0, wttl)
	if err != nil || len(l) != 1 {
		t.Fatal(l, err)
	}
	req := resultFor(l[0], compat.StatusFail, wt0.Add(270*time.Second))
	req.WorkerID = "fast"
	if _, err := s.CompleteJob(ctx, req, wt0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	// A second scan; a worker with a true clock passes at wt0+90s.
	scan2, err := s.StartScan(ctx, Scan{Trigger: "test", Target: "cpu", Runtime: wrtA})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueJobs(ctx, scan2, []NewJob{{RuntimeKey: wrtA.RetestKey(), Job: l[0].Job}}); err != nil {
		t.Fatal(err)
	}
	l2, _, err := s.LeaseJobs(ctx, slow, 1, wt0.Add(60*time.Second), wttl)
	if err != nil || len(l2) != 1 {
		t.Fatal(l2, err)
	}
	req2 := resultFor(l2[0], compat.StatusPass, wt0.Add(90*time.Second))
	req2.WorkerID = "slow"
	out, err := s.CompleteJob(ctx, req2, wt0.Add(90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !out.Result.TestedAt.Equal(wt0.Add(90 * time.Second)) {
		t.Errorf("outcome tested_at %v, want the server's receipt", out.Result.TestedAt)
	}
	cur, err := s.LatestResult(ctx, "q/m0", compat.TargetCPU)
	if err != nil || cur.Status != compat.StatusPass {
		t.Fatalf("current %s (%v): the skewed worker's older fail is still shown", cur.Status, err)
	}
	h, err := s.History(ctx, "q/m0", "", 10)
	if err != nil || len(h) != 2 {
		t.Fatal(h, err)
	}
	older := h[1]
	if !older.TestedAt.Equal(wt0.Add(30*time.Second)) || older.WorkerTestedAt == nil || !older.WorkerTestedAt.Equal(wt0.Add(270*time.Second)) {
		t.Errorf("the fast worker's result: tested_at %v, worker_tested_at %v; want the server's receipt and the worker's own time",
			older.TestedAt, older.WorkerTestedAt)
	}

	// An hour ahead is outside the window: refused, the lease stays.
	scan3, _ := s.StartScan(ctx, Scan{Trigger: "test", Target: "cpu", Runtime: wrtA})
	if err := s.EnqueueJobs(ctx, scan3, []NewJob{{RuntimeKey: wrtA.RetestKey(), Job: l[0].Job}}); err != nil {
		t.Fatal(err)
	}
	l3, _, _ := s.LeaseJobs(ctx, fast, 1, wt0.Add(3*time.Minute), wttl)
	if len(l3) != 1 {
		t.Fatal(l3)
	}
	req3 := resultFor(l3[0], compat.StatusFail, wt0.Add(63*time.Minute))
	req3.WorkerID = "fast"
	if _, err := s.CompleteJob(ctx, req3, wt0.Add(3*time.Minute)); !errors.Is(err, fleet.ErrBadResult) || !strings.Contains(err.Error(), "tested_at") {
		t.Errorf("an hour ahead: %v, want ErrBadResult about tested_at", err)
	}
	if c, _ := s.ScanJobs(ctx, scan3); c.Leased != 1 {
		t.Errorf("after the refusal: %+v, want the lease kept", c)
	}
}

// TestAFlakyFirstResultDoesNotEatTheJob: "flaky" on a model's first result
// is refused and the lease stays, so the worker's real result that follows
// is recorded.
func TestAFlakyFirstResultDoesNotEatTheJob(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 1, "")
	l, _, err := s.LeaseJobs(ctx, worker("a", wrtA), 1, wt0, wttl)
	if err != nil || len(l) != 1 {
		t.Fatal(l, err)
	}
	flaky := resultFor(l[0], compat.StatusFail, wt0)
	flaky.WorkerID, flaky.Flaky = "a", true
	if _, err := s.CompleteJob(ctx, flaky, wt0); !errors.Is(err, fleet.ErrBadResult) {
		t.Errorf("flaky first result: %v, want ErrBadResult", err)
	}
	real := resultFor(l[0], compat.StatusFail, wt0)
	real.WorkerID = "a"
	if _, err := s.CompleteJob(ctx, real, wt0.Add(time.Second)); err != nil {
		t.Fatalf("the real result after it: %v", err)
	}
	if h, _ := s.History(ctx, "q/m0", "", 10); len(h) != 1 || h[0].Status != compat.StatusFail {
		t.Errorf("history %+v: want the real result, once", h)
	}
	if c, _ := s.ScanJobs(ctx, scanID); c.Done != 1 {
		t.Errorf("counts %+v", c)
	}
}
