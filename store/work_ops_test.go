package store

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
)

// TestAWithdrawnScanLetsItsLeasesFinish: a scan that ends before its queue
// drains (a deadline) withdraws what is still queued; a leased job may
// still finish (its result is recorded, once), and one whose lease expires
// or is given back is cancelled, never leased again.
func TestAWithdrawnScanLetsItsLeasesFinish(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 4, "")
	a := worker("a", wrtA)
	l, _, err := s.LeaseJobs(ctx, a, 2, wt0, wttl) // q/m0, q/m1
	if err != nil || len(l) != 2 {
		t.Fatal(l, err)
	}
	n, err := s.WithdrawJobs(ctx, scanID)
	if err != nil || n != 2 {
		t.Fatalf("withdrew %d (%v), want the 2 queued", n, err)
	}
	if err := s.FinishScan(ctx, scanID, ScanFinish{Status: ScanInterrupted}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.LeaseJobs(ctx, worker("b", wrtA), 2, wt0, wttl); len(got) != 0 {
		t.Errorf("a withdrawn job was leased: %+v", got)
	}
	// m0 finishes after the scan ended: recorded once.
	done := resultFor(l[0], compat.StatusPass, wt0.Add(time.Second))
	done.WorkerID = "a"
	if _, err := s.CompleteJob(ctx, done, wt0.Add(time.Second)); err != nil {
		t.Fatalf("the leased job's result after the deadline: %v", err)
	}
	// m1's worker dies: its lease expires, and the job is cancelled, not queued.
	exp, err := s.ExpireLeases(ctx, wt0.Add(wttl))
	if err != nil || exp.Requeued != 0 || len(exp.Keys) != 0 || len(exp.Failed) != 0 {
		t.Errorf("expiry after the scan ended: %+v %v; want nothing queued again", exp, err)
	}
	if c, _ := s.ScanJobs(ctx, scanID); c != (JobCounts{Total: 4, Done: 1, Cancelled: 3}) {
		t.Errorf("counts %+v", c)
	}
	if h, _ := s.History(ctx, "q/m0", "", 10); len(h) != 1 {
		t.Errorf("q/m0: %d results", len(h))
	}
}

// TestAReleasedJobOfAnEndedScanIsCancelled: a give-back after the scan
// ended does not queue the job again.
func TestAReleasedJobOfAnEndedScanIsCancelled(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 1, "")
	l, _, _ := s.LeaseJobs(ctx, worker("a", wrtA), 1, wt0, wttl)
	if _, err := s.WithdrawJobs(ctx, scanID); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishScan(ctx, scanID, ScanFinish{Status: ScanInterrupted}); err != nil {
		t.Fatal(err)
	}
	key, err := s.ReleaseJob(ctx, "a", l[0].ID, wt0.Add(time.Second))
	if err != nil || key != (fleet.QueueKey{}) {
		t.Errorf("release: key %v, %v; want no queue to wake", key, err)
	}
	if c, _ := s.ScanJobs(ctx, scanID); c != (JobCounts{Total: 1, Cancelled: 1}) {
		t.Errorf("counts %+v", c)
	}
}

// TestTheNextScanAdoptsAProbeInFlight: the next scan, planning the very
// probe a withdrawn scan's worker still runs, takes that job over instead
// of queueing it twice: the model's result is recorded once.
func TestTheNextScanAdoptsAProbeInFlight(t *testing.T) {
	ctx := context.Background()
	s, scan1 := queueFixture(t, 2, "")
	l, _, _ := s.LeaseJobs(ctx, worker("a", wrtA), 1, wt0, wttl) // q/m0 in flight
	if _, err := s.WithdrawJobs(ctx, scan1); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishScan(ctx, scan1, ScanFinish{Status: ScanInterrupted}); err != nil {
		t.Fatal(err)
	}
	scan2, _ := s.StartScan(ctx, Scan{Trigger: "test", Target: "cpu", Runtime: wrtA})
	var jobs []NewJob
	for _, j := range []fleet.Job{l[0].Job, {ModelID: "q/m1", Revision: "sha1", Target: "cpu", Mode: "arch", Files: []string{"config.json"}}} {
		jobs = append(jobs, NewJob{RuntimeKey: wrtA.RetestKey(), Job: j})
	}
	if err := s.EnqueueJobs(ctx, scan2, jobs); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.ScanJobs(ctx, scan2); c != (JobCounts{Total: 2, Queued: 1, Leased: 1}) {
		t.Errorf("scan 2 %+v: want the probe in flight adopted, leased", c)
	}
	done := resultFor(l[0], compat.StatusPass, wt0.Add(time.Second))
	done.WorkerID = "a"
	out, err := s.CompleteJob(ctx, done, wt0.Add(time.Second))
	if err != nil || out.ScanID != scan2 {
		t.Fatalf("the adopted probe's result: scan %d, %v; want scan %d", out.ScanID, err, scan2)
	}
	if h, _ := s.History(ctx, "q/m0", "", 10); len(h) != 1 || *h[0].ScanID != scan2 {
		t.Errorf("q/m0 history %+v", h)
	}
	// Another revision is another probe: queued anew, not adopted.
	s3, _ := queueFixture(t, 1, "")
	l3, _, _ := s3.LeaseJobs(ctx, worker("a", wrtA), 1, wt0, wttl)
	scanA := int64(1)
	_, _ = s3.WithdrawJobs(ctx, scanA)
	_ = s3.FinishScan(ctx, scanA, ScanFinish{Status: ScanInterrupted})
	scanB, _ := s3.StartScan(ctx, Scan{Trigger: "test", Target: "cpu", Runtime: wrtA})
	other := l3[0].Job
	other.Revision = "sha-new"
	if err := s3.EnqueueJobs(ctx, scanB, []NewJob{{RuntimeKey: wrtA.RetestKey(), Job: other}}); err != nil {
		t.Fatal(err)
	}
	if c, _ := s3.ScanJobs(ctx, scanB); c != (JobCounts{Total: 1, Queued: 1}) {
		t.Errorf("another revision: %+v, want queued anew", c)
	}
}

// TestReplanMovesQueuedJobsToTheFleetsRuntime: a rollout left the queued
// jobs on a runtime no worker runs; re-planning moves them (not the leased
// ones) to the runtime the fleet runs now, with its memory budget, and the
// scan record says so.
func TestReplanMovesQueuedJobsToTheFleetsRuntime(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 3, "")
	l, _, _ := s.LeaseJobs(ctx, worker("a", wrtA), 1, wt0, wttl)
	since := wt0.Add(time.Minute)
	if err := s.SetScanStall(ctx, scanID, &since, "waiting"); err != nil {
		t.Fatal(err)
	}
	if sc, _ := s.GetScan(ctx, scanID); sc.StalledSince == nil || !sc.StalledSince.Equal(since) || sc.FleetNote != "waiting" {
		t.Errorf("stall %+v %q", sc.StalledSince, sc.FleetNote)
	}
	keys, err := s.ScanQueueKeys(ctx, scanID)
	if err != nil || len(keys) != 1 || keys[0] != (fleet.QueueKey{Target: "cpu", RuntimeKey: wrtA.RetestKey(), Chips: 1}) {
		t.Fatalf("queue keys %v %v", keys, err)
	}
	n, err := s.ReplanJobs(ctx, scanID, "cpu", wrtB, budgetOf(7<<30), "re-planned")
	if err != nil || n != 2 {
		t.Fatalf("re-planned %d (%v), want the 2 queued", n, err)
	}
	got, _, err := s.LeaseJobs(ctx, worker("b", wrtB), 3, wt0, wttl)
	if err != nil || len(got) != 2 || got[0].Job.MemoryBudgetBytes != 7<<30 {
		t.Fatalf("a worker of the new runtime leased %+v (%v)", got, err)
	}
	sc, _ := s.GetScan(ctx, scanID)
	if sc.StalledSince != nil || sc.FleetNote != "re-planned" || sc.Runtime.RetestKey() != wrtB.RetestKey() {
		t.Errorf("scan after the re-plan: stalled %v, note %q, runtime %q", sc.StalledSince, sc.FleetNote, sc.Runtime.RetestKey())
	}
	// The leased job of the old runtime still finishes on it.
	done := resultFor(l[0], compat.StatusPass, wt0.Add(time.Second))
	done.WorkerID = "a"
	if _, err := s.CompleteJob(ctx, done, wt0.Add(time.Second)); err != nil {
		t.Errorf("the old runtime's leased job: %v", err)
	}
}

// TestALostJobKeepsItsOwnRuntime: a job leased on the old runtime when the
// scan was re-planned, that then loses every lease, fails on its own
// runtime, not the scan's new one.
func TestALostJobKeepsItsOwnRuntime(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 1, "")
	now := wt0
	for i := range fleet.MaxLostLeases {
		if l, _, err := s.LeaseJobs(ctx, worker("a", wrtA), 1, now, wttl); err != nil || len(l) != 1 {
			t.Fatalf("lease %d: %v %v", i, l, err)
		}
		if i == 0 {
			if _, err := s.ReplanJobs(ctx, scanID, "cpu", wrtB, budgetOf(0), "re-planned"); err != nil {
				t.Fatal(err)
			}
		}
		now = now.Add(wttl)
		if _, err := s.ExpireLeases(ctx, now); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.History(ctx, "q/m0", "", 1)
	if err != nil || len(h) != 1 || h[0].Status != compat.StatusError || h[0].Runtime.RetestKey() != wrtA.RetestKey() {
		t.Fatalf("lost result %+v %v: want an error on the job's runtime %q", h, err, wrtA.RetestKey())
	}
}

// TestALeavingWorkerIsNotLive: a worker that says it is leaving is listed
// with the time; polling again brings it back.
func TestALeavingWorkerIsNotLive(t *testing.T) {
	ctx := context.Background()
	s, _ := queueFixture(t, 1, "")
	if err := s.SeeWorker(ctx, worker("a", wrtA), wt0); err != nil {
		t.Fatal(err)
	}
	if err := s.LeaveWorker(ctx, "a", wt0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	ws, _ := s.Workers(ctx, 0)
	if len(ws) != 1 || !ws[0].Left.Equal(wt0.Add(time.Second)) {
		t.Fatalf("workers %+v", ws)
	}
	if err := s.LeaveWorker(ctx, "nobody", wt0); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown worker leaving: %v", err)
	}
	if err := s.SeeWorker(ctx, worker("a", wrtA), wt0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if ws, _ := s.Workers(ctx, 0); !ws[0].Left.IsZero() {
		t.Errorf("a worker polling again is still marked left: %+v", ws[0])
	}
}

// TestAScanWhoseJobsFinishedWithoutAnOwnerIsResumed: the workers finished a
// scan's every job while its server was gone (they served through the next
// server before it could adopt the scan): the next server still takes the
// scan over, so that it ends done, not interrupted.
func TestAScanWhoseJobsFinishedWithoutAnOwnerIsResumed(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 1, "")
	l, _, _ := s.LeaseJobs(ctx, worker("a", wrtA), 1, wt0, wttl)
	done := resultFor(l[0], compat.StatusPass, wt0.Add(time.Second))
	done.WorkerID = "a"
	if _, err := s.CompleteJob(ctx, done, wt0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, sqlScanOwner, "old-pod:1:boot:instance", unixNano(wt0), scanID); err != nil {
		t.Fatal(err)
	}
	ids, err := s.ResumeScans(ctx)
	if err != nil || len(ids) != 1 || ids[0] != scanID {
		t.Fatalf("resumed %v (%v), want [%d]", ids, err, scanID)
	}
	if n, _ := s.MarkInterrupted(ctx); n != 0 {
		t.Errorf("marked %d interrupted: the adopted scan is this process's now", n)
	}
}

// TestForgetWorkersDropsTheLongGone: the workers last seen before the bound
// are dropped, unless they hold a lease; one seen at the bound stays.
func TestForgetWorkersDropsTheLongGone(t *testing.T) {
	ctx := context.Background()
	s, _ := queueFixture(t, 1, "")
	if err := s.SeeWorker(ctx, worker("old", wrtA), wt0); err != nil {
		t.Fatal(err)
	}
	if l, _, err := s.LeaseJobs(ctx, worker("holder", wrtA), 1, wt0, wttl); err != nil || len(l) != 1 {
		t.Fatal(l, err)
	}
	if err := s.SeeWorker(ctx, worker("new", wrtA), wt0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	ids := func() []string {
		ws, err := s.Workers(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, w := range ws {
			out = append(out, w.ID)
		}
		return out
	}
	before, _ := s.Changed(ctx)
	if n, err := s.ForgetWorkers(ctx, wt0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("forgot %d (%v), want the old one", n, err)
	}
	if got := ids(); !slices.Equal(got, []string{"new", "holder"}) {
		t.Errorf("workers after forgetting: %v, want the new one and the lease holder", got)
	}
	if after, _ := s.Changed(ctx); !after.After(before) {
		t.Error("forgetting a worker did not count as a change")
	}
	if n, err := s.ForgetWorkers(ctx, wt0.Add(2*time.Hour)); err != nil || n != 0 {
		t.Errorf("forgot %d (%v) at the new one's last sight, want none", n, err)
	}
	if _, err := s.ExpireLeases(ctx, wt0.Add(wttl)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ForgetWorkers(ctx, wt0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("forgot %d (%v) once the lease was taken back, want the holder", n, err)
	}
	if got := ids(); !slices.Equal(got, []string{"new"}) {
		t.Errorf("workers at the end: %v", got)
	}
}

// budgetOf is a re-plan's budget rule that gives every job perDevice times
// its devices.
func budgetOf(perDevice int64) func(devices int) int64 {
	return func(devices int) int64 { return perDevice * int64(devices) }
}

// TestAReplannedJobGetsTheBudgetOfItsDevices: a re-plan asks the rule for
// each job's budget by the devices the job holds (a sharded job's is its
// devices'), and keeps the rest of the job as planned.
func TestAReplannedJobGetsTheBudgetOfItsDevices(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 1, "")
	if err := s.UpsertModels(ctx, []ModelUpsert{{ID: "q/big", SHA: "shabig", Downloads: 1}}); err != nil {
		t.Fatal(err)
	}
	big := fleet.Job{ModelID: "q/big", Revision: "shabig", Target: compat.TargetCPU, Mode: compat.ModeFull,
		Files: []string{"config.json"}, TimeoutS: 60, Devices: 2, MemoryBudgetBytes: 1 << 30, NoTrain: "too big"}
	if err := s.EnqueueJobs(ctx, scanID, []NewJob{{Rank: 5, RuntimeKey: wrtA.RetestKey(), Job: big}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ReplanJobs(ctx, scanID, "cpu", wrtB, budgetOf(3<<30), "re-planned"); err != nil || n != 2 {
		t.Fatalf("re-planned %d (%v), want 2", n, err)
	}
	var got []fleet.Lease
	for _, w := range []string{"b", "c"} { // two devices each: one job each
		l, _, err := s.LeaseJobs(ctx, worker(w, wrtB), 2, wt0, wttl)
		if err != nil || len(l) != 1 {
			t.Fatalf("%s leased %+v (%v)", w, l, err)
		}
		got = append(got, l...)
	}
	want := big
	want.MemoryBudgetBytes = 6 << 30
	if got[0].Job.MemoryBudgetBytes != 3<<30 || !reflect.DeepEqual(got[1].Job, want) {
		t.Errorf("re-planned jobs %+v and %+v; want budgets of 3 GiB and, for the one over 2 devices, %+v", got[0].Job, got[1].Job, want)
	}
	// Planned for the fleet's runtime already: not moved again.
	if n, err := s.ReplanJobs(ctx, scanID, "cpu", wrtB, budgetOf(1), "again"); err != nil || n != 0 {
		t.Errorf("a second re-plan moved %d (%v)", n, err)
	}
}

// TestQueueChangesMoveTheDataVersionOnlyWhenTheyChangeSomething: a
// withdraw, a re-plan and a forget that change something move the data's
// change time (the pages' caches go); one that changes nothing leaves it.
// A re-plan of an unknown scan is ErrNotFound.
func TestQueueChangesMoveTheDataVersionOnlyWhenTheyChangeSomething(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 2, "")
	if err := s.SeeWorker(ctx, worker("old", wrtA), wt0); err != nil {
		t.Fatal(err)
	}
	moves := func(what string, want bool, op func() error) {
		t.Helper()
		before, err := s.Changed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := op(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		after, _ := s.Changed(ctx)
		if moved := after.After(before); moved != want {
			t.Errorf("%s: the data's change time moved %v, want %v", what, moved, want)
		}
	}
	count := func(n *int, f func() (int, error)) func() error {
		return func() (err error) { *n, err = f(); return err }
	}
	var n int
	moves("forgetting nobody", false, count(&n, func() (int, error) { return s.ForgetWorkers(ctx, wt0) }))
	moves("forgetting a worker", true, count(&n, func() (int, error) { return s.ForgetWorkers(ctx, wt0.Add(time.Second)) }))
	moves("re-planning two jobs", true, count(&n, func() (int, error) {
		return s.ReplanJobs(ctx, scanID, "cpu", wrtB, budgetOf(1), "re-planned")
	}))
	moves("withdrawing two jobs", true, count(&n, func() (int, error) { return s.WithdrawJobs(ctx, scanID) }))
	moves("withdrawing none", false, count(&n, func() (int, error) { return s.WithdrawJobs(ctx, scanID) }))
	if n != 0 {
		t.Errorf("the second withdraw ended %d jobs", n)
	}
	if _, err := s.ReplanJobs(ctx, scanID+100, "cpu", wrtB, budgetOf(1), "re-planned"); !errors.Is(err, ErrNotFound) {
		t.Errorf("re-planning an unknown scan: %v, want ErrNotFound", err)
	}
}
