package scan

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// fakeRequests is a queue of requested models.
type fakeRequests struct {
	mu      sync.Mutex
	queue   []string
	next    int64
	claimed [][]string
	done    []requestsDone
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
	waitFor(t, func() bool { return svc.State().Running })
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
	waitFor(t, func() bool { _, done := reqs.snapshot(); return len(done) == 2 })
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
	waitFor(t, func() bool { _, done := reqs.snapshot(); return len(done) == 1 })
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
