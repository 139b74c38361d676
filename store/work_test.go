package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
)

var (
	wt0     = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	wrtA    = compat.Runtime{Torch: "2.15.0", Transformers: "5.23.0", Harness: "h1", Device: "cpu", DeviceCount: 1}
	wrtB    = compat.Runtime{Torch: "2.16.0", Transformers: "5.23.0", Harness: "h1", Device: "cpu", DeviceCount: 1}
	wttl    = time.Minute
	leaseRE = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// queueFixture is a store with models q/m0..q/m{n-1}, one running scan
// planned against wrtA and a job per model, queued in reverse listing order
// (the rank, not the insertion, decides the lease order).
func queueFixture(t *testing.T, n int, prev compat.Status) (*SQLite, int64) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var ups []ModelUpsert
	for i := range n {
		ups = append(ups, ModelUpsert{ID: fmt.Sprintf("q/m%d", i), SHA: fmt.Sprintf("sha%d", i), Downloads: int64(100 - i)})
	}
	if err := s.UpsertModels(ctx, ups); err != nil {
		t.Fatal(err)
	}
	scanID, err := s.StartScan(ctx, Scan{Trigger: "test", Target: "cpu", Runtime: wrtA})
	if err != nil {
		t.Fatal(err)
	}
	var jobs []NewJob
	for i := n - 1; i >= 0; i-- {
		jobs = append(jobs, NewJob{Rank: i, RuntimeKey: wrtA.RetestKey(), Job: fleet.Job{
			ModelID: fmt.Sprintf("q/m%d", i), Revision: fmt.Sprintf("sha%d", i), Target: compat.TargetCPU,
			Mode: compat.ModeArch, Files: []string{"config.json"}, TimeoutS: 60, Previous: prev,
		}})
	}
	if err := s.EnqueueJobs(ctx, scanID, jobs); err != nil {
		t.Fatal(err)
	}
	return s, scanID
}

func worker(id string, rt compat.Runtime) fleet.Worker {
	return fleet.Worker{ID: id, Host: "host-" + id, Target: compat.TargetCPU, Runtime: rt, Devices: 2, MemoryBytes: 8 << 30}
}

func resultFor(l fleet.Lease, st compat.Status, at time.Time) fleet.ResultRequest {
	return fleet.ResultRequest{LeaseID: l.ID, ModelID: l.Job.ModelID, Result: compat.Result{
		Target: l.Job.Target, Status: st, Stage: compat.Ptr(compat.StageGenerate), Mode: compat.Ptr(l.Job.Mode),
		Revision: l.Job.Revision, TestedAt: at, Runtime: wrtA,
	}}
}

func TestLeasesGoInPopularityOrderToMatchingWorkers(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 5, "")
	if l, _, err := s.LeaseJobs(ctx, worker("b", wrtB), 5, wt0, wttl); err != nil || len(l) != 0 {
		t.Fatalf("a worker of another runtime got %d leases (%v)", len(l), err)
	}
	other := worker("t", wrtA)
	other.Target = compat.TargetTPU
	if l, _, err := s.LeaseJobs(ctx, other, 5, wt0, wttl); err != nil || len(l) != 0 {
		t.Fatalf("a worker of another target got %d leases (%v)", len(l), err)
	}
	got, _, err := s.LeaseJobs(ctx, worker("a", wrtA), 2, wt0, wttl)
	if err != nil || len(got) != 2 {
		t.Fatalf("leases %v, %v", got, err)
	}
	for i, l := range got {
		if want := fmt.Sprintf("q/m%d", i); l.Job.ModelID != want || l.Attempt != 1 || !l.ExpiresAt.Equal(wt0.Add(wttl)) {
			t.Errorf("lease %d: %s attempt %d expires %v; want %s, 1, %v", i, l.Job.ModelID, l.Attempt, l.ExpiresAt, want, wt0.Add(wttl))
		}
		if !leaseRE.MatchString(l.ID) {
			t.Errorf("lease id %q is not 128 random bits", l.ID)
		}
	}
	if got[0].ID == got[1].ID {
		t.Error("two leases share an id")
	}
	c, err := s.ScanJobs(ctx, scanID)
	if err != nil || c != (JobCounts{Total: 5, Queued: 3, Leased: 2}) {
		t.Errorf("counts %+v (%v)", c, err)
	}
	ws, err := s.Workers(ctx, 0)
	if err != nil || len(ws) != 3 {
		t.Fatalf("workers %+v (%v)", ws, err)
	}
	for _, w := range ws {
		if w.ID == "a" && (w.Busy != 2 || w.Host != "host-a" || w.Runtime.RetestKey() != wrtA.RetestKey() || w.MemoryBytes != 8<<30) {
			t.Errorf("worker a: %+v", w)
		}
	}
}

func TestAResultIsAcceptedOnceForTheCurrentLease(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 2, "")
	a := worker("a", wrtA)
	leases, _, err := s.LeaseJobs(ctx, a, 1, wt0, wttl)
	if err != nil || len(leases) != 1 {
		t.Fatal(leases, err)
	}
	l := leases[0]
	before, _ := s.Changed(ctx)

	// Refusals change nothing: another model, another worker's id, a
	// lease that does not exist.
	bad := resultFor(l, compat.StatusPass, wt0)
	bad.ModelID, bad.WorkerID = "q/m1", "a"
	if _, err := s.CompleteJob(ctx, bad, wt0); !errors.Is(err, fleet.ErrBadResult) {
		t.Errorf("a result naming another model: %v", err)
	}
	stolen := resultFor(l, compat.StatusPass, wt0)
	stolen.WorkerID = "b"
	if _, err := s.CompleteJob(ctx, stolen, wt0); !errors.Is(err, fleet.ErrLeaseNotCurrent) {
		t.Errorf("another worker's post of the lease: %v", err)
	}
	forged := resultFor(l, compat.StatusPass, wt0)
	forged.LeaseID, forged.WorkerID = "00000000000000000000000000000000", "a"
	if _, err := s.CompleteJob(ctx, forged, wt0); !errors.Is(err, fleet.ErrLeaseNotCurrent) {
		t.Errorf("an unknown lease: %v", err)
	}
	if c, _ := s.ScanJobs(ctx, scanID); c.Leased != 1 {
		t.Errorf("after refusals: %+v; the lease stays", c)
	}
	if after, _ := s.Changed(ctx); !after.Equal(before) {
		t.Error("refused results moved the change time")
	}

	good := resultFor(l, compat.StatusPass, wt0.Add(time.Second))
	good.WorkerID = "a"
	out, err := s.CompleteJob(ctx, good, wt0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if out.ScanID != scanID || out.ModelID != "q/m0" || out.Result.Worker != "host-a" || out.Record.Event == nil {
		t.Errorf("outcome %+v", out)
	}
	if _, err := s.CompleteJob(ctx, good, wt0.Add(2*time.Second)); !errors.Is(err, fleet.ErrLeaseNotCurrent) {
		t.Errorf("the same result again: %v", err)
	}
	h, err := s.History(ctx, "q/m0", "", 10)
	if err != nil || len(h) != 1 {
		t.Fatalf("history %d (%v): want exactly one result", len(h), err)
	}
	if h[0].Worker != "host-a" || h[0].ScanID == nil || *h[0].ScanID != scanID || h[0].Status != compat.StatusPass {
		t.Errorf("recorded %+v", h[0])
	}
	ws, _ := s.Workers(ctx, 0)
	if len(ws) != 1 || ws[0].JobsDone != 1 || ws[0].Busy != 0 {
		t.Errorf("worker after its result: %+v", ws)
	}
	if after, _ := s.Changed(ctx); !after.After(before) {
		t.Error("an accepted result did not move the change time")
	}
}

func TestExpiredLeasesRequeueThenFail(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 1, "")
	now := wt0
	var first fleet.Lease
	for i, id := range []string{"a", "b", "c"} {
		l, _, err := s.LeaseJobs(ctx, worker(id, wrtA), 1, now, wttl)
		if err != nil || len(l) != 1 || l[0].Attempt != i+1 {
			t.Fatalf("lease %d: %+v %v", i, l, err)
		}
		if i == 0 {
			first = l[0]
		}
		now = now.Add(wttl) // nobody renews
		if i < 2 {
			if _, _, err := s.LeaseJobs(ctx, worker("z", wrtB), 1, now, wttl); err != nil { // any poll takes expired leases back
				t.Fatal(err)
			}
			if c, _ := s.ScanJobs(ctx, scanID); c.Queued != 1 {
				t.Fatalf("after lost lease %d: %+v, want queued again", i+1, c)
			}
		}
	}
	// The first worker comes back with its result: refused, nothing recorded.
	late := resultFor(first, compat.StatusFail, now)
	late.WorkerID = "a"
	if _, err := s.CompleteJob(ctx, late, now); !errors.Is(err, fleet.ErrLeaseNotCurrent) {
		t.Errorf("late result: %v", err)
	}
	exp, err := s.ExpireLeases(ctx, now)
	if err != nil || exp.Requeued != 0 || len(exp.Failed) != 1 {
		t.Fatalf("expire: %+v %v", exp, err)
	}
	c, _ := s.ScanJobs(ctx, scanID)
	if c != (JobCounts{Total: 1, Failed: 1}) {
		t.Errorf("counts %+v", c)
	}
	h, err := s.History(ctx, "q/m0", "", 10)
	if err != nil || len(h) != 1 {
		t.Fatalf("history %+v %v", h, err)
	}
	r := h[0]
	if r.Status != compat.StatusError || r.Status.HeldAgainstModel() || r.Message == nil ||
		*r.Message != fleet.LostMessage(3, "host-c") || r.Worker != "host-c" || r.Runtime.RetestKey() != wrtA.RetestKey() {
		t.Errorf("lost-lease result %+v (message %v)", r, deref(r.Message))
	}
	st, err := s.QueueStats(ctx)
	if err != nil || st.LostLeases != 3 || len(st.Open) != 0 {
		t.Errorf("queue stats %+v, %v", st, err)
	}
	if again, _ := s.ExpireLeases(ctx, now.Add(time.Hour)); again.any() {
		t.Errorf("a failed job expired again: %+v", again)
	}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestRenewAndRelease(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 3, "")
	a, b := worker("a", wrtA), worker("b", wrtA)
	la, _, _ := s.LeaseJobs(ctx, a, 2, wt0, wttl)
	lb, _, _ := s.LeaseJobs(ctx, b, 1, wt0, wttl)
	if len(la) != 2 || len(lb) != 1 {
		t.Fatal(la, lb)
	}
	before, _ := s.Changed(ctx)
	renewed, lost, _, err := s.RenewLeases(ctx, "a", []string{la[0].ID, la[1].ID, lb[0].ID, "nope"}, wt0.Add(50*time.Second), wttl)
	if err != nil || len(renewed) != 2 || len(lost) != 2 {
		t.Fatalf("renewed %v lost %v (%v)", renewed, lost, err)
	}
	if after, _ := s.Changed(ctx); !after.Equal(before) {
		t.Error("a heartbeat moved the change time")
	}
	// b did not renew: at wt0+1m its lease is gone, a's (renewed) are not.
	renewed, lost, _, _ = s.RenewLeases(ctx, "b", []string{lb[0].ID}, wt0.Add(wttl), wttl)
	if len(renewed) != 0 || len(lost) != 1 {
		t.Errorf("b's expired lease renewed: %v %v", renewed, lost)
	}
	if _, err := s.ReleaseJob(ctx, "b", la[0].ID, wt0.Add(wttl)); !errors.Is(err, fleet.ErrLeaseNotCurrent) {
		t.Errorf("release of another worker's lease: %v", err)
	}
	if key, err := s.ReleaseJob(ctx, "a", la[0].ID, wt0.Add(wttl)); err != nil || key != (fleet.QueueKey{Target: compat.TargetCPU, RuntimeKey: wrtA.RetestKey(), Chips: 1}) {
		t.Fatalf("release: key %v, %v", key, err)
	}
	if _, err := s.ReleaseJob(ctx, "a", la[0].ID, wt0.Add(wttl)); !errors.Is(err, fleet.ErrLeaseNotCurrent) {
		t.Errorf("a second release: %v", err)
	}
	c, _ := s.ScanJobs(ctx, scanID)
	if c != (JobCounts{Total: 3, Queued: 2, Leased: 1}) {
		t.Errorf("counts %+v", c)
	}
	st, err := s.QueueStats(ctx)
	if err != nil || st.LostLeases != 1 || len(st.Open) != 1 || st.Open[0] != (QueueDepth{Target: "cpu", RuntimeKey: wrtA.RetestKey(), Queued: 2, Leased: 1}) {
		t.Errorf("stats %+v, %v: the give-back is not a lost lease, b's expiry is", st, err)
	}
}

func TestAFlakyJobResultKeepsTheStatus(t *testing.T) {
	ctx := context.Background()
	s, _ := queueFixture(t, 1, compat.StatusPass)
	if _, err := s.RecordResult(ctx, "q/m0", compat.Result{Target: "cpu", Status: compat.StatusPass, Revision: "sha0",
		TestedAt: wt0.Add(-time.Hour), Runtime: wrtA}); err != nil {
		t.Fatal(err)
	}
	l, _, _ := s.LeaseJobs(ctx, worker("a", wrtA), 1, wt0, wttl)
	req := resultFor(l[0], compat.StatusCrash, wt0)
	req.WorkerID, req.Flaky = "a", true
	out, err := s.CompleteJob(ctx, req, wt0)
	if err != nil || !out.Flaky {
		t.Fatalf("%+v %v", out, err)
	}
	h, _ := s.History(ctx, "q/m0", "", 10)
	if len(h) != 1 || h[0].Status != compat.StatusPass {
		t.Errorf("history %+v: a flaky result is not a result", h)
	}
	ev, _ := s.ModelEvents(ctx, "q/m0", 10)
	if len(ev) != 2 || ev[0].Kind != compat.EventFlaky || ev[0].ToStatus != compat.StatusCrash || ev[0].FromStatus != compat.StatusPass {
		t.Errorf("events %+v", ev)
	}
}

// A server restarted mid-scan resumes the scans whose jobs are open; one
// restarted without workers cancels them; MarkInterrupted then marks only
// what is truly over.
func TestStartUpResumesOrCancelsQueuedScans(t *testing.T) {
	ctx := context.Background()
	s, queued := queueFixture(t, 2, "")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	deadOwner := fmt.Sprintf("%s:%d", host, dead.Process.Pid)
	plain, err := s.StartScan(ctx, Scan{Trigger: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{queued, plain} {
		if _, err := s.w.ExecContext(ctx, sqlScanOwner, deadOwner, unixNano(wt0), id); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := s.ResumeScans(ctx)
	if err != nil || len(ids) != 1 || ids[0] != queued {
		t.Fatalf("resumed %v (%v), want [%d]", ids, err, queued)
	}
	if n, err := s.MarkInterrupted(ctx); err != nil || n != 1 {
		t.Fatalf("marked %d (%v), want the plain scan only", n, err)
	}
	if sc, _ := s.GetScan(ctx, queued); sc.Status != ScanRunning {
		t.Errorf("the resumed scan is %s", sc.Status)
	}
	// The same database, restarted again without workers.
	if _, err := s.w.ExecContext(ctx, sqlScanOwner, deadOwner, unixNano(wt0), queued); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CancelOrphanJobs(ctx); err != nil || n != 2 {
		t.Fatalf("cancelled %d (%v), want 2", n, err)
	}
	if n, _ := s.MarkInterrupted(ctx); n != 1 {
		t.Errorf("marked %d after cancelling", n)
	}
	if c, _ := s.ScanJobs(ctx, queued); c != (JobCounts{Total: 2, Cancelled: 2}) {
		t.Errorf("counts %+v", c)
	}
}

func TestEnqueueAndSeeWorkerRefuseNonsense(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 1, "")
	for _, j := range []NewJob{
		{Job: fleet.Job{ModelID: "q/m0", Target: compat.TargetAuto}},
		{Job: fleet.Job{Target: compat.TargetCPU}},
	} {
		if err := s.EnqueueJobs(ctx, scanID, []NewJob{j}); !errors.Is(err, ErrInvalid) {
			t.Errorf("enqueue %+v: %v", j, err)
		}
	}
	if err := s.EnqueueJobs(ctx, scanID, []NewJob{{Job: fleet.Job{ModelID: "q/unknown", Target: "cpu"}}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("enqueue of an unknown model: %v", err)
	}
	for _, w := range []fleet.Worker{{Host: "h", Target: "cpu"}, {ID: "x", Target: "cpu"}, {ID: "x", Host: "h", Target: "auto"}} {
		if err := s.SeeWorker(ctx, w, wt0); !errors.Is(err, ErrInvalid) {
			t.Errorf("see %+v: %v", w, err)
		}
	}
}

// TestShardedJobsGoToWorkersThatHoldThem: a job of two devices is never
// leased to a worker of one, which takes the jobs behind it; a worker of
// two takes it, even with one device free (then only it), and the rest in
// order.
func TestShardedJobsGoToWorkersThatHoldThem(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 0, "")
	var jobs []NewJob
	for i, devices := range []int{2, 1, 1, 2, 1} {
		jobs = append(jobs, NewJob{Rank: i, RuntimeKey: wrtA.RetestKey(), Job: fleet.Job{ModelID: fmt.Sprintf("q/s%d", i),
			Revision: "r", Target: compat.TargetCPU, Mode: compat.ModeArch, TimeoutS: 60, Devices: devices}})
	}
	var ups []ModelUpsert
	for _, j := range jobs {
		ups = append(ups, ModelUpsert{ID: j.Job.ModelID, SHA: "r"})
	}
	if err := s.UpsertModels(ctx, ups); err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueJobs(ctx, scanID, jobs); err != nil {
		t.Fatal(err)
	}
	ids := func(ls []fleet.Lease) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.Job.ModelID)
		}
		return out
	}
	one := worker("one", wrtA)
	one.Devices = 1
	got, _, err := s.LeaseJobs(ctx, one, 1, wt0, wttl)
	if err != nil || !slices.Equal(ids(got), []string{"q/s1"}) {
		t.Fatalf("a one-device worker got %v (%v), want q/s1, never q/s0 of two devices", ids(got), err)
	}
	two := worker("two", wrtA)
	if got, _, err = s.LeaseJobs(ctx, two, 1, wt0, wttl); err != nil || !slices.Equal(ids(got), []string{"q/s0"}) {
		t.Fatalf("a two-device worker with one free got %v (%v), want the two-device job ahead", ids(got), err)
	}
	if got[0].Job.Devices != 2 {
		t.Errorf("lease of q/s0 carries %d devices, want 2", got[0].Job.Devices)
	}
	if got, _, err = s.LeaseJobs(ctx, two, 2, wt0, wttl); err != nil || !slices.Equal(ids(got), []string{"q/s2"}) {
		t.Fatalf("with two free: %v (%v), want q/s2 (q/s3 needs two, behind it)", ids(got), err)
	}
	if got, _, err = s.LeaseJobs(ctx, one, 1, wt0, wttl); err != nil || !slices.Equal(ids(got), []string{"q/s4"}) {
		t.Fatalf("the one-device worker next got %v (%v), want q/s4 (q/s3 is not for it)", ids(got), err)
	}
	if got, _, err = s.LeaseJobs(ctx, one, 1, wt0, wttl); err != nil || len(got) != 0 {
		t.Fatalf("the one-device worker got %v (%v) with only a two-device job left", ids(got), err)
	}
}

// TestALostShardedJobsReproNamesItsDevices: the error result of a job of
// two devices that lost its every lease repeats it on two
// (compat.ReproOn's --devices 2), as a probe's own result would.
func TestALostShardedJobsReproNamesItsDevices(t *testing.T) {
	ctx := context.Background()
	s, scanID := queueFixture(t, 0, "")
	job := NewJob{RuntimeKey: wrtA.RetestKey(), Job: fleet.Job{ModelID: "q/lost", Revision: "r",
		Target: compat.TargetCPU, Mode: compat.ModeArch, TimeoutS: 60, Devices: 2}}
	if err := s.UpsertModels(ctx, []ModelUpsert{{ID: "q/lost", SHA: "r"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueJobs(ctx, scanID, []NewJob{job}); err != nil {
		t.Fatal(err)
	}
	now := wt0
	for i, id := range []string{"a", "b", "c"} {
		if l, _, err := s.LeaseJobs(ctx, worker(id, wrtA), 1, now, wttl); err != nil || len(l) != 1 {
			t.Fatalf("lease %d: %+v %v", i, l, err)
		}
		now = now.Add(wttl)
		if i < 2 {
			if _, _, err := s.LeaseJobs(ctx, worker("z", wrtB), 1, now, wttl); err != nil {
				t.Fatal(err)
			}
		}
	}
	if exp, err := s.ExpireLeases(ctx, now); err != nil || len(exp.Failed) != 1 {
		t.Fatalf("expire: %+v %v", exp, err)
	}
	h, err := s.History(ctx, "q/lost", "", 10)
	if err != nil || len(h) != 1 {
		t.Fatalf("history %+v %v", h, err)
	}
	if want := "scanner probe q/lost --revision r --target cpu --mode arch --devices 2"; h[0].Repro != want {
		t.Errorf("repro %q, want %q", h[0].Repro, want)
	}
}
