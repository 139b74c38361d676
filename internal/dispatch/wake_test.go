package dispatch

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// countingStore counts each worker's lease queries (write transactions).
type countingStore struct {
	Store
	mu    sync.Mutex
	polls map[string]int
}

func (c *countingStore) LeaseJobs(ctx context.Context, w fleet.Worker, max int, now time.Time, ttl time.Duration) ([]fleet.Lease, []fleet.QueueKey, error) {
	c.mu.Lock()
	c.polls[w.ID]++
	c.mu.Unlock()
	return c.Store.LeaseJobs(ctx, w, max, now, ttl)
}

func (c *countingStore) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.polls[id]
}

// TestOnlyMatchingPollersWake: a change of the queue wakes only the long
// polls that could take what changed (fleet.CanTake: same target and
// runtime, room for a job). Results, leases and jobs of another runtime
// leave idle pollers asleep, so a hundred idle workers do not re-run a
// write transaction at every lease and result.
func TestOnlyMatchingPollersWake(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 2, time.Minute)
	cs := &countingStore{Store: f.st, polls: map[string]int{}}
	f.d = New(cs, Config{LeaseTTL: time.Minute})
	defer f.d.Close()
	other := compat.Runtime{Torch: "2.16.0", Transformers: "5.23.0", Harness: "h", Device: "cpu", DeviceCount: 1}

	if err := f.d.Enqueue(ctx, f.scanID, f.jobs[:1]); err != nil {
		t.Fatal(err)
	}
	busy := worker("busy", 1)
	got, err := f.d.Lease(ctx, fleet.LeaseRequest{Worker: busy, Max: 1})
	if err != nil || len(got.Leases) != 1 {
		t.Fatal(got, err)
	}

	// Idle pollers: 20 of another runtime, one of the planned runtime.
	type answer struct {
		id     string
		leases int
		at     time.Time
	}
	answers := make(chan answer, 32)
	poll := func(w fleet.Worker) {
		resp, _ := f.d.Lease(ctx, fleet.LeaseRequest{Worker: w, Max: 1, WaitS: 30})
		answers <- answer{w.ID, len(resp.Leases), time.Now()}
	}
	var idle []string
	for i := range 20 {
		w := worker(fmt.Sprintf("other-%d", i), 1)
		w.Runtime = other
		idle = append(idle, w.ID)
		go poll(w)
	}
	same := worker("same", 1)
	go poll(same)
	testenv.Eventually(t, "every poller's first query", 10*time.Second, func() bool {
		for _, id := range append(idle, "same") {
			if cs.count(id) != 1 {
				return false
			}
		}
		return true
	})

	// A result, a register and a heartbeat change no queue of theirs.
	if err := f.d.Result(ctx, result(got.Leases[0], "busy")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.Register(ctx, worker("newcomer", 2)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	for _, id := range append(idle, "same") {
		if n := cs.count(id); n != 1 {
			t.Errorf("%s queried %d times: woken by a result or a register", id, n)
		}
	}

	// A job of the planned runtime wakes the poller that can take it, at
	// once, and nobody else.
	queued := time.Now()
	if err := f.d.Enqueue(ctx, f.scanID, f.jobs[1:]); err != nil {
		t.Fatal(err)
	}
	if a := within(t, answers, 10*time.Second, "the matching poller to wake"); a.id != "same" || a.leases != 1 || a.at.Sub(queued) > 5*time.Second {
		t.Errorf("answer %+v: want the poller of the planned runtime, with the job, at once", a)
	}
	time.Sleep(200 * time.Millisecond)
	for _, id := range idle {
		if n := cs.count(id); n != 1 {
			t.Errorf("%s (another runtime) queried %d times: woken by a job it cannot take", id, n)
		}
	}
}

var _ Store = (*countingStore)(nil)

// TestAJobRequeuedByAnotherPollWakesItsTaker: a lease that expired is taken
// back by whatever poll or heartbeat comes next, another runtime's too;
// the poller that can take the job is woken then, not at its poll's end.
func TestAJobRequeuedByAnotherPollWakesItsTaker(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 1, 300*time.Millisecond)
	defer f.d.Close()
	if err := f.d.Enqueue(ctx, f.scanID, f.jobs); err != nil {
		t.Fatal(err)
	}
	if got, err := f.d.Lease(ctx, fleet.LeaseRequest{Worker: worker("dies", 1), Max: 1}); err != nil || len(got.Leases) != 1 {
		t.Fatal(got, err)
	}
	taker := make(chan int, 1)
	go func() {
		resp, _ := f.d.Lease(ctx, fleet.LeaseRequest{Worker: worker("taker", 1), Max: 1, WaitS: 30})
		taker <- len(resp.Leases)
	}()
	time.Sleep(500 * time.Millisecond) // the lease is past its expiry; no sweeper runs
	other := worker("other", 1)
	other.Runtime.Torch = "2.16.0"
	start := time.Now()
	if _, err := f.d.Lease(ctx, fleet.LeaseRequest{Worker: other, Max: 1}); err != nil {
		t.Fatal(err)
	}
	if n := within(t, taker, 10*time.Second, "the requeued job to wake its taker"); n != 1 || time.Since(start) > 5*time.Second {
		t.Errorf("the taker got %d leases after %v", n, time.Since(start))
	}
}

// within receives from c, failing the test when nothing comes within d.
func within[T any](t *testing.T, c <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(d):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestAShardedJobWakesOnlyWorkersThatHoldIt: a job sharded over two devices
// wakes the idle poller of two devices, and leaves the one of one device
// asleep (fleet.CanTake asks fleet.Holds); the one-device worker is never
// leased it.
func TestAShardedJobWakesOnlyWorkersThatHoldIt(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 1, time.Minute)
	cs := &countingStore{Store: f.st, polls: map[string]int{}}
	f.d = New(cs, Config{LeaseTTL: time.Minute})
	defer f.d.Close()
	type answer struct {
		id     string
		leases int
	}
	answers := make(chan answer, 2)
	poll := func(w fleet.Worker) {
		resp, _ := f.d.Lease(ctx, fleet.LeaseRequest{Worker: w, Max: 1, WaitS: 3})
		answers <- answer{w.ID, len(resp.Leases)}
	}
	go poll(worker("one", 1))
	go poll(worker("two", 2))
	testenv.Eventually(t, "both pollers' first query", 10*time.Second, func() bool { return cs.count("one") == 1 && cs.count("two") == 1 })
	job := f.jobs[0]
	job.Job.Devices = 2
	if err := f.d.Enqueue(ctx, f.scanID, []store.NewJob{job}); err != nil {
		t.Fatal(err)
	}
	if a := within(t, answers, 10*time.Second, "the two-device poller to wake"); a.id != "two" || a.leases != 1 {
		t.Errorf("answer %+v: want the two-device worker, with the job", a)
	}
	if a := within(t, answers, 10*time.Second, "the one-device poller's wait to end"); a.id != "one" || a.leases != 0 || cs.count("one") != 1 {
		t.Errorf("answer %+v after %d queries: the one-device worker was woken or leased a two-device job", a, cs.count("one"))
	}
}
