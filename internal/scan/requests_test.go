package scan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// fakeRequests is a queue of requested models.
type fakeRequests struct {
	mu      sync.Mutex
	queue   []string
	next    int64
	claimed [][]string
	done    []requestsDone
	// left is, per Done, how long its context had left (-1: no deadline).
	left []time.Duration
}

type requestsDone struct {
	models []string
	scan   store.Scan
	err    error
	again  bool
}

func (r *fakeRequests) add(models ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queue = append(r.queue, models...)
}

func (r *fakeRequests) Claim(ctx context.Context, n int) ([]int64, []string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n = min(n, len(r.queue))
	models := append([]string(nil), r.queue[:n]...)
	r.queue = r.queue[n:]
	var ids []int64
	for range models {
		r.next++
		ids = append(ids, r.next)
	}
	if len(models) > 0 {
		r.claimed = append(r.claimed, models)
	}
	return ids, models, nil
}

func (r *fakeRequests) Done(ctx context.Context, ids []int64, models []string, sc store.Scan, err error, again bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = append(r.done, requestsDone{models, sc, err, again})
	left := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	r.left = append(r.left, left)
	if again {
		r.queue = append(models, r.queue...)
	}
}

func (r *fakeRequests) snapshot() ([][]string, []requestsDone) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.claimed), slices.Clone(r.done)
}

// TestRequestsRunWhenTheServiceIsIdle: requested models are scanned after
// the scan in flight and the one waiting, a batch at a time, by the
// scan's own path (they join the table); a request never delays a
// scheduled scan.
func TestRequestsRunWhenTheServiceIsIdle(t *testing.T) {
	f := newFixture(t, model("top/1", "text-generation", "transformers"), model("top/2", "text-generation", "transformers"))
	f.hub.infos = map[string]hub.ModelInfo{}
	for _, id := range []string{"req/a", "req/b", "req/c"} {
		f.hub.infos[id] = model(id, "text-generation", "transformers")
		f.hub.configs[id] = llamaConfig
	}
	block := make(chan struct{})
	f.prober.block = block
	reqs := &fakeRequests{}
	svc := NewService(f.s, Options{Mode: compat.ModeArch, Limit: 2}, quiet)
	svc.RequestBatch = 2
	svc.ServeRequests(reqs)
	runService(t, svc)

	if err := svc.Request("schedule"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return svc.State().Running })
	// Requests come while the scheduled scan runs, and another scan queues.
	reqs.add("req/a", "req/b", "req/c")
	svc.NotifyRequest()
	if err := svc.Request("manual"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if claimed, _ := reqs.snapshot(); len(claimed) != 0 {
		t.Fatalf("requests claimed while a scan ran: %v", claimed)
	}
	close(block)
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { _, done := reqs.snapshot(); return len(done) == 2 })
	claimed, done := reqs.snapshot()
	if want := [][]string{{"req/a", "req/b"}, {"req/c"}}; len(claimed) != 2 || !slices.Equal(claimed[0], want[0]) || !slices.Equal(claimed[1], want[1]) {
		t.Errorf("claimed %v, want %v", claimed, want)
	}
	for _, d := range done {
		if d.err != nil || d.again || d.scan.ID == 0 || d.scan.Trigger != "request" || d.scan.Status != store.ScanDone {
			t.Errorf("done %+v", d)
		}
	}
	scans, err := f.store.ListScans(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	var triggers []string
	for _, sc := range slices.Backward(scans) {
		triggers = append(triggers, sc.Trigger)
	}
	if want := []string{"schedule", "manual", "request", "request"}; !slices.Equal(triggers, want) {
		t.Errorf("scans in order %v, want %v", triggers, want)
	}
	// The requested models joined the table with their results.
	for _, id := range []string{"req/a", "req/b", "req/c"} {
		if got := f.status(t, id); got != compat.StatusPass {
			t.Errorf("%s: %s", id, got)
		}
	}
}

// TestRequestsWaitOutAHubOutage: a request scan that cannot reach the Hub
// puts its requests back and the service waits before the next try.
func TestRequestsWaitOutAHubOutage(t *testing.T) {
	f := newFixture(t)
	down := &downHub{fakeHub: f.hub}
	f.s.Hub = down
	reqs := &fakeRequests{}
	reqs.add("req/a")
	svc := NewService(f.s, Options{Mode: compat.ModeArch}, quiet)
	svc.RequestPoll = 20 * time.Millisecond
	svc.RetryAfter = time.Hour
	svc.ServeRequests(reqs)
	runService(t, svc)
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { _, done := reqs.snapshot(); return len(done) == 1 })
	time.Sleep(100 * time.Millisecond) // five polls: none may try again within the hour
	claimed, done := reqs.snapshot()
	if len(claimed) != 1 || len(done) != 1 || !done[0].again || !errors.Is(done[0].err, ErrHub) {
		t.Errorf("claimed %v, done %+v: want one try, put back, then a wait", claimed, done)
	}
}

// downHub cannot reach the Hub for model info.
type downHub struct{ *fakeHub }

func (h *downHub) ModelInfo(ctx context.Context, id, rev string) (hub.ModelInfo, error) {
	return hub.ModelInfo{}, errors.New("dial tcp: connection refused")
}

// After a request scan that could not reach the Hub the requests pause for
// the first retry wait; a scan that ran ends the pause, so the next outage
// waits the first wait again. Done gets a context of its own with time
// left (10 s), whatever the scan's.
func TestRequestPauseEndsWithAScanThatRan(t *testing.T) {
	f := newFixture(t)
	reqs := &fakeRequests{}
	svc := NewService(f.s, Options{Mode: compat.ModeArch}, quiet)
	svc.RetryAfter = time.Hour
	svc.ServeRequests(reqs)
	ctx := context.Background()
	pause := func() time.Duration {
		svc.mu.Lock()
		defer svc.mu.Unlock()
		svc.pauseUntil, svc.shareUntil = time.Time{}, time.Time{} // the pauses are over: the next claim may run
		return svc.pauseFor
	}

	f.s.Hub = &downHub{fakeHub: f.hub}
	reqs.add("req/a")
	svc.runRequests(ctx)
	if got := pause(); got != time.Hour {
		t.Errorf("after an outage: pause %v, want the first wait (1h)", got)
	}
	f.s.Hub = f.hub // back: req/a is missing there, and gets its skip
	svc.runRequests(ctx)
	if got := pause(); got != 0 {
		t.Errorf("after a scan that ran: pause %v, want none", got)
	}
	_, done := reqs.snapshot()
	if len(done) != 2 || !done[0].again || done[1].again || done[1].err != nil {
		t.Fatalf("done %+v: want the outage put back, then the scan", done)
	}
	reqs.mu.Lock()
	left := slices.Clone(reqs.left)
	reqs.mu.Unlock()
	for i, l := range left {
		if l < time.Second || l > 10*time.Second {
			t.Errorf("Done %d: its context had %v left, want up to 10 s", i, l)
		}
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

// probeEvents are the fake Hub's "probe:ID" events so far, in order.
func probeEvents(f *fixture) []string {
	f.hub.mu.Lock()
	defer f.hub.mu.Unlock()
	var out []string
	for _, e := range f.hub.events {
		if id, ok := strings.CutPrefix(e, "probe:"); ok {
			out = append(out, id)
		}
	}
	return out
}

// TestRequestedProbesGiveWayToAWaitingScan: a scan asked for while a batch
// of eight requested models is being probed starts after the probe in
// flight, not after the batch (requested probes give way between probes);
// the requests not probed keep their place and run after it.
func TestRequestedProbesGiveWayToAWaitingScan(t *testing.T) {
	f := newFixture(t, model("top/1", "text-generation", "transformers"), model("top/2", "text-generation", "transformers"))
	f.hub.infos = map[string]hub.ModelInfo{}
	var asked []string
	for i := range 8 {
		id := fmt.Sprintf("req/%d", i)
		asked = append(asked, id)
		f.hub.infos[id] = model(id, "text-generation", "transformers")
		f.hub.configs[id] = llamaConfig
	}
	const probe = 150 * time.Millisecond
	f.prober.delay = probe
	reqs := &fakeRequests{}
	reqs.add(asked...)
	svc := NewService(f.s, Options{Mode: compat.ModeArch, Limit: 2}, quiet)
	svc.RequestBatch, svc.RequestShare = 8, 1
	svc.ServeRequests(reqs)
	runService(t, svc)

	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return len(probeEvents(f)) >= 1 }) // req/0 is being probed
	before := len(probeEvents(f))
	asking := time.Now()
	if err := svc.Request("manual"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return slices.Contains(probeEvents(f), "top/1") })
	waited := time.Since(asking)
	ev := probeEvents(f)
	top := slices.Index(ev, "top/1")
	if late := top - before; late > 1 {
		t.Errorf("%d requested probes started after the scan was asked for (%v), want at most the one in flight to finish", late, ev[:top+1])
	}
	if waited > 3*probe+time.Second {
		t.Errorf("the scan waited %v for requested probes of %v each", waited, probe)
	}
	// Every request is tested in the end, once (the fake queue puts the
	// whole batch back; the one probed is unchanged the second time).
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { _, done := reqs.snapshot(); return len(done) >= 2 && !done[len(done)-1].again })
	ev = probeEvents(f)
	for _, id := range asked {
		if n := countOf(ev, id); n != 1 {
			t.Errorf("%s probed %d times, want once", id, n)
		}
	}
	_, done := reqs.snapshot()
	if len(done) < 2 || !done[0].again || done[0].scan.Trigger != "request" {
		t.Errorf("done %+v: want the first batch put back when it gave way", done)
	}
	for _, id := range asked {
		if got := f.status(t, id); got != compat.StatusPass {
			t.Errorf("%s: %s", id, got)
		}
	}
}

// TestRequestedProbesTakeABoundedShare: with RequestShare 0.5, a request
// scan that held the device for d is followed by at least d without one;
// a scan asked for in that pause starts at once.
func TestRequestedProbesTakeABoundedShare(t *testing.T) {
	f := newFixture(t, model("top/1", "text-generation", "transformers"))
	f.hub.infos = map[string]hub.ModelInfo{}
	for _, id := range []string{"req/a", "req/b", "req/c"} {
		f.hub.infos[id] = model(id, "text-generation", "transformers")
		f.hub.configs[id] = llamaConfig
	}
	f.prober.delay = 200 * time.Millisecond
	reqs := &fakeRequests{}
	reqs.add("req/a", "req/b", "req/c")
	svc := NewService(f.s, Options{Mode: compat.ModeArch, Limit: 1}, quiet)
	svc.RequestBatch, svc.RequestShare, svc.RequestPoll = 1, 0.5, 10*time.Millisecond
	svc.ServeRequests(reqs)
	runService(t, svc)
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { _, done := reqs.snapshot(); return len(done) == 1 })
	asked := time.Now()
	if err := svc.Request("manual"); err != nil { // in the pause after req/a
		t.Fatal(err)
	}
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return slices.Contains(probeEvents(f), "top/1") })
	if d := time.Since(asked); d > time.Second {
		t.Errorf("a scan asked for in the requests' pause waited %v", d)
	}
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { _, done := reqs.snapshot(); return len(done) == 3 })
	scans, err := f.store.ListScans(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	var req []store.Scan
	for _, sc := range slices.Backward(scans) {
		if sc.Trigger == "request" {
			req = append(req, sc)
		}
	}
	if len(req) != 3 {
		t.Fatalf("%d request scans, want 3", len(req))
	}
	for i := 1; i < len(req); i++ {
		if req[i-1].FinishedAt == nil {
			t.Fatalf("request scan %d has not finished", i)
		}
		held := req[i-1].FinishedAt.Sub(req[i-1].StartedAt)
		if gap := req[i].StartedAt.Sub(*req[i-1].FinishedAt); gap < held*9/10 {
			t.Errorf("request scan %d started %v after the one before, which held the device %v: want at least as long (share 0.5)", i+1, gap, held)
		}
	}
}
