package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

func TestWorkerDrainsTheQueueOnAllDevices(t *testing.T) {
	var jobs []fleet.Job
	for i := range 9 {
		jobs = append(jobs, job(fmt.Sprintf("org/m%d", i)))
	}
	f := newFakeServer(t, 5*time.Second, jobs...)
	p := &fakeProber{delay: 50 * time.Millisecond}
	_, stop := startWorker(t, f, p, 3, time.Second, nil)
	testenv.Eventually(t, "9 accepted results", 20*time.Second, func() bool { acc, _, _, _ := f.snapshot(); return len(acc) == 9 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	acc, released, posts, state := f.snapshot()
	for _, j := range jobs {
		if len(acc[j.ModelID]) != 1 || posts[j.ModelID] != 1 {
			t.Errorf("%s: %d accepted of %d posted, want exactly one", j.ModelID, len(acc[j.ModelID]), posts[j.ModelID])
		}
		if r := acc[j.ModelID]; len(r) == 1 && (r[0].Result.Status != compat.StatusPass || r[0].Result.Revision != j.Revision) {
			t.Errorf("%s: posted %+v", j.ModelID, r[0].Result)
		}
	}
	for _, j := range state {
		if j.st.State != fleet.Done || j.st.Attempts != 1 {
			t.Errorf("job %s: %+v", j.job.ModelID, j.st)
		}
	}
	if len(released) != 0 {
		t.Errorf("leases given back without a shutdown: %v", released)
	}
	if p.peak != 3 {
		t.Errorf("at most %d probes ran at once on 3 devices, want 3", p.peak)
	}
	if got := f.lastAuth.Load(); got != "Bearer "+testToken {
		t.Errorf("Authorization %q", got)
	}
}

func TestSIGTERMGivesBackALeaseWhoseProbeOutlivesTheGrace(t *testing.T) {
	f := newFakeServer(t, 5*time.Second, job("org/slow"))
	p := &fakeProber{started: make(chan string, 4), block: func(string, int) bool { return true }}
	_, stop := startWorker(t, f, p, 1, 200*time.Millisecond, nil)
	awaitStart(t, p)
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	acc, released, posts, state := f.snapshot()
	if len(acc) != 0 || posts["org/slow"] != 0 {
		t.Errorf("an interrupted probe's result was posted: %v", posts)
	}
	if len(released) != 1 || state[0].st.State != fleet.Queued || state[0].st.Lost != 0 {
		t.Errorf("released %v, job %+v: want the lease given back and the job queued, no lost lease", released, state[0].st)
	}
	if took < 200*time.Millisecond || took > fleet.ShutdownBudget(200*time.Millisecond)+2*time.Second {
		t.Errorf("stopping took %v with a grace of 200ms", took)
	}
}

func TestSIGTERMLetsAProbeFinishWithinTheGrace(t *testing.T) {
	f := newFakeServer(t, 5*time.Second, job("org/a"), job("org/b"))
	p := &fakeProber{delay: 300 * time.Millisecond, started: make(chan string, 4)}
	_, stop := startWorker(t, f, p, 1, 10*time.Second, nil)
	first := <-p.started
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	acc, released, _, state := f.snapshot()
	if len(acc[first]) != 1 || len(released) != 0 {
		t.Errorf("accepted %v, released %v: the running probe should finish and report", acc, released)
	}
	// No new lease after the signal: the other job is still queued.
	queued := 0
	for _, j := range state {
		if j.st.State == fleet.Queued && j.st.Attempts == 0 {
			queued++
		}
	}
	if queued != 1 {
		t.Errorf("jobs after stop: %+v; want the second never leased", state)
	}
}

func TestALostLeaseStopsItsProbeAndPostsNothing(t *testing.T) {
	f := newFakeServer(t, 400*time.Millisecond, job("org/m"))
	p := &fakeProber{started: make(chan string, 4), delay: 10 * time.Millisecond,
		block: func(_ string, call int) bool { return call == 1 }}
	_, stop := startWorker(t, f, p, 1, time.Second, nil)
	<-p.started
	f.expireNow() // the worker was cut off for a TTL: the job went back to the queue
	// The next heartbeat says lost; the probe is stopped; the job is leased
	// again (to this worker, the only one) and its second run reports.
	testenv.Eventually(t, "the re-leased job's result", 20*time.Second, func() bool { acc, _, _, _ := f.snapshot(); return len(acc["org/m"]) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	acc, _, posts, state := f.snapshot()
	if posts["org/m"] != 1 || acc["org/m"][0].LeaseID != "lease-1-2" {
		t.Errorf("posts %d, accepted %+v: want only the second lease's result", posts["org/m"], acc["org/m"])
	}
	if st := state[0].st; st.State != fleet.Done || st.Attempts != 2 || st.Lost != 1 {
		t.Errorf("job %+v", st)
	}
	if p.callsOf("org/m") != 2 {
		t.Errorf("probed %d times", p.callsOf("org/m"))
	}
}

func TestWorkerWaitsOutAServerRestart(t *testing.T) {
	f := newFakeServer(t, 5*time.Second)
	f.down.Store(true)
	p := &fakeProber{delay: 10 * time.Millisecond}
	w, stop := startWorker(t, f, p, 2, time.Second, nil)
	time.Sleep(1500 * time.Millisecond) // a few failed registrations
	f.add(job("org/after-restart"))
	f.down.Store(false)
	testenv.Eventually(t, "the result after the restart", 20*time.Second, func() bool { acc, _, _, _ := f.snapshot(); return len(acc) == 1 })
	// Down again mid-flight: leasing fails, the worker backs off and keeps
	// going. Backoff(0) is at most 1s: a worker polling every 200ms fails
	// at least twice in a row in 2.5s.
	f.down.Store(true)
	time.Sleep(2500 * time.Millisecond)
	f.add(job("org/second"))
	f.down.Store(false)
	testenv.Eventually(t, "the second result", 20*time.Second, func() bool { acc, _, _, _ := f.snapshot(); return len(acc) == 2 })
	rec := httptest.NewRecorder()
	w.HealthHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	var h Health
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &h) != nil || h.Status != "ok" || h.Accepted != 2 || h.LastContact == nil {
		t.Errorf("healthz %d %s", rec.Code, rec.Body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestResultRefusalsAreNotRetried(t *testing.T) {
	for _, code := range []int{http.StatusConflict, http.StatusBadRequest} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			f := newFakeServer(t, 5*time.Second, job("org/m"))
			f.forceCode.Store(int32(code))
			p := &fakeProber{delay: 10 * time.Millisecond}
			_, stop := startWorker(t, f, p, 1, time.Second, nil)
			testenv.Eventually(t, "a result post", 20*time.Second, func() bool { _, _, posts, _ := f.snapshot(); return posts["org/m"] == 1 })
			time.Sleep(1500 * time.Millisecond) // a retry would have come by now
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if _, _, posts, _ := f.snapshot(); posts["org/m"] != 1 {
				t.Errorf("posted %d times after a %d", posts["org/m"], code)
			}
		})
	}
}

func TestResultPostsAreRetriedThroughAnOutage(t *testing.T) {
	f := newFakeServer(t, 5*time.Second, job("org/m"))
	f.forceCode.Store(http.StatusServiceUnavailable)
	p := &fakeProber{delay: 10 * time.Millisecond}
	_, stop := startWorker(t, f, p, 1, 5*time.Second, nil)
	testenv.Eventually(t, "two failed posts", 20*time.Second, func() bool { _, _, posts, _ := f.snapshot(); return posts["org/m"] >= 2 })
	f.forceCode.Store(0)
	testenv.Eventually(t, "the accepted result", 20*time.Second, func() bool { acc, _, _, _ := f.snapshot(); return len(acc["org/m"]) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if p.callsOf("org/m") != 1 {
		t.Errorf("probed %d times: a retried post must not rerun the probe", p.callsOf("org/m"))
	}
}

func TestAStatusChangeIsConfirmedByARerun(t *testing.T) {
	changed := job("org/changed")
	changed.Previous = compat.StatusPass
	flaky := job("org/flaky")
	flaky.Previous = compat.StatusPass
	same := job("org/same")
	same.Previous = compat.StatusPass
	f := newFakeServer(t, 5*time.Second, changed, flaky, same)
	p := &fakeProber{delay: 5 * time.Millisecond, status: func(model string, call int) compat.Status {
		switch {
		case model == "org/changed":
			return compat.StatusFail
		case model == "org/flaky" && call == 1:
			return compat.StatusCrash
		}
		return compat.StatusPass
	}}
	_, stop := startWorker(t, f, p, 1, time.Second, nil)
	testenv.Eventually(t, "three results", 20*time.Second, func() bool { acc, _, _, _ := f.snapshot(); return len(acc) == 3 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	acc, _, _, _ := f.snapshot()
	for _, tc := range []struct {
		model  string
		status compat.Status
		flaky  bool
		calls  int
	}{
		{"org/changed", compat.StatusFail, false, 2},
		{"org/flaky", compat.StatusCrash, true, 2}, // the unconfirmed first result, marked flaky
		{"org/same", compat.StatusPass, false, 1},
	} {
		r := acc[tc.model][0]
		if r.Result.Status != tc.status || r.Flaky != tc.flaky || p.callsOf(tc.model) != tc.calls {
			t.Errorf("%s: posted %s flaky=%v after %d probes; want %s flaky=%v after %d",
				tc.model, r.Result.Status, r.Flaky, p.callsOf(tc.model), tc.status, tc.flaky, tc.calls)
		}
	}
}

func TestJobsThatCannotRunHereAreReportedNotProbed(t *testing.T) {
	gated := job("org/gated")
	wrongTarget := job("org/tpu-only")
	wrongTarget.Target = compat.TargetTPU
	f := newFakeServer(t, 5*time.Second, gated, wrongTarget)
	f.ignoreMatch = true // lease the tpu job to a cpu worker, as a buggy server would
	p := &fakeProber{delay: 5 * time.Millisecond}
	gatedErr := fmt.Errorf("download: %w", &hub.Error{Status: 403, Code: hub.CodeGatedRepo, Message: "Access to model org/gated is restricted"})
	fetch := fakeFetcher{fail: map[string]error{"org/gated": gatedErr}}
	_, stop := startWorker(t, f, p, 1, time.Second, fetch)
	testenv.Eventually(t, "two results", 20*time.Second, func() bool { acc, _, _, _ := f.snapshot(); return len(acc) == 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	acc, _, _, _ := f.snapshot()
	if r := acc["org/gated"][0].Result; r.Status != compat.StatusSkipped || r.Reason == nil || *r.Reason != compat.ReasonGated {
		t.Errorf("gated: %+v", r)
	}
	if p.callsOf("org/gated") != 0 {
		t.Error("a model whose files could not be fetched was probed")
	}
	// The mismatched job is not probed: it is reported as the scanner's
	// error (never held against the model), naming the worker.
	r := acc["org/tpu-only"]
	if len(r) != 1 || r[0].Result.Status != compat.StatusError || r[0].Result.Message == nil ||
		!strings.Contains(*r[0].Result.Message, "test-host") || p.callsOf("org/tpu-only") != 0 {
		t.Errorf("mismatched job: %+v, %d probes", r, p.callsOf("org/tpu-only"))
	}
}

func TestCheckJob(t *testing.T) {
	for _, tc := range []struct {
		change func(*fleet.Job)
		ok     bool
	}{
		{func(*fleet.Job) {}, true},
		{func(j *fleet.Job) { j.Target = compat.TargetTPU }, false},
		{func(j *fleet.Job) { j.Mode = compat.ModeAuto }, false},
		{func(j *fleet.Job) { j.Revision = "" }, false},
		{func(j *fleet.Job) { j.ModelID = "" }, false},
		{func(j *fleet.Job) { j.ModelID = "../../etc" }, false},
	} {
		j := job("org/m")
		tc.change(&j)
		if err := checkJob(j, compat.TargetCPU); (err == nil) != tc.ok {
			t.Errorf("checkJob(%+v) = %v", j, err)
		}
	}
}

func TestAWrongTokenChangesNothing(t *testing.T) {
	f := newFakeServer(t, 5*time.Second, job("org/m"))
	p := &fakeProber{delay: 5 * time.Millisecond}
	w, err := New(Config{Server: f.srv.URL, Token: "wrong", ID: "w", Host: "h", Target: compat.TargetCPU}, p, []Prober{p}, fakeFetcher{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.api.register(t.Context(), fleet.Worker{ID: "w"}); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("register with a wrong token: %v", err)
	}
	if _, err := w.api.lease(t.Context(), fleet.Worker{ID: "w"}, 1, 0); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("lease with a wrong token: %v", err)
	}
	_, _, _, state := f.snapshot()
	if state[0].st != (fleet.JobState{State: fleet.Queued}) || p.callsOf("org/m") != 0 {
		t.Errorf("a refused worker changed something: %+v", state[0].st)
	}
}

func TestEnvFailureStopsTheStart(t *testing.T) {
	f := newFakeServer(t, 5*time.Second)
	w, err := New(Config{Server: f.srv.URL, Token: testToken, ID: "w", Host: "h", Target: compat.TargetTPU}, &fakeProber{}, []Prober{&fakeProber{}}, fakeFetcher{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(t.Context()); err == nil {
		t.Error("a worker for tpu started on a host without one")
	}
	if f.workers["w"].ID != "" {
		t.Error("it registered anyway")
	}
}

func TestNewID(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9._-]{1,63}-[0-9a-f]{8}$`)
	ids := map[string]bool{}
	for _, host := range []string{"scanner-worker-7d9f-abcde", "", "bad host/../x", string(make([]byte, 100))} {
		id := NewID(host)
		if !re.MatchString(id) {
			t.Errorf("NewID(%q) = %q", host, id)
		}
		ids[id] = true
	}
	if a, b := NewID("h"), NewID("h"); a == b {
		t.Errorf("two starts got the same id %q", a)
	}
	if len(ids) != 4 {
		t.Errorf("ids %v", ids)
	}
}

func TestTheProbeIsToldItsPlanAndMissingInputs(t *testing.T) {
	j := job("org/full")
	j.Mode, j.PlanNote = compat.ModeFull, "untested on cpu; auto -> full"
	j.InputFiles = []string{"tokenizer.json", "tokenizer_config.json"}
	plain := job("org/plain")
	plain.PlanNote = "new revision"
	f := newFakeServer(t, 5*time.Second, j, plain)
	p := &fakeProber{delay: 5 * time.Millisecond}
	fetch := fakeFetcher{failFile: map[string]error{"tokenizer.json": fmt.Errorf("tokenizer.json: %w", hub.ErrTooLarge)}}
	_, stop := startWorker(t, f, p, 1, time.Second, fetch)
	testenv.Eventually(t, "two results", 20*time.Second, func() bool { acc, _, _, _ := f.snapshot(); return len(acc) == 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if got, want := p.reqs["org/full"].PlanNote, "untested on cpu; auto -> full; input files not fetched: tokenizer.json (over its size cap)"; got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	if got := p.reqs["org/plain"].PlanNote; got != "new revision" {
		t.Errorf("note %q", got)
	}
}

// TestShardedJobsOnWorkersThatHoldThem: a worker of one device never leases
// a job sharded over two, and drains the rest; a worker of two runs it on
// both devices at once (Request.Devices 2 on chips 0 and 1), its one-device
// jobs side by side, never more than two devices busy.
func TestShardedJobsOnWorkersThatHoldThem(t *testing.T) {
	big := job("org/big")
	big.Devices = 2
	f := newFakeServer(t, 5*time.Second, job("org/s0"), big, job("org/s1"), job("org/s2"))
	p := &fakeProber{delay: 30 * time.Millisecond}
	_, stop := startWorker(t, f, p, 1, time.Second, nil)
	testenv.Eventually(t, "the one-device jobs", 20*time.Second, func() bool { acc, _, _, _ := f.snapshot(); return len(acc) == 3 })
	time.Sleep(300 * time.Millisecond) // long polls go on: the two-device job stays queued
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, _, posts, state := f.snapshot(); posts["org/big"] != 0 || p.callsOf("org/big") != 0 || state[1].st.State != fleet.Queued {
		t.Fatalf("the one-device worker took the two-device job: %d posts, %d probes, state %s", posts["org/big"], p.callsOf("org/big"), state[1].st.State)
	}

	// The fake server answers a long poll until its wait ends, even for a
	// worker that left: let the last one end before queuing more.
	time.Sleep(400 * time.Millisecond)
	f.add(job("org/s3"))
	f.add(job("org/s4"))
	two := &fakeProber{delay: 30 * time.Millisecond}
	_, stop = startWorker(t, f, two, 2, time.Second, nil)
	testenv.Eventually(t, "every job", 20*time.Second, func() bool { acc, _, _, _ := f.snapshot(); return len(acc) == 6 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	two.mu.Lock()
	req := two.reqs["org/big"]
	peak, peakDev := two.peak, two.peakDev
	two.mu.Unlock()
	if req.Devices != 2 || !slices.Equal(req.Chips, []int{0, 1}) {
		t.Errorf("org/big probed with %d devices on chips %v, want 2 on 0 and 1", req.Devices, req.Chips)
	}
	if peakDev > 2 || peak < 2 {
		t.Errorf("%d devices busy at once (%d probes) on a worker of two: want two at most, one-device jobs side by side", peakDev, peak)
	}
}

// TestHealthCountsTheRunningProbes: /healthz counts a probe while it runs
// and not after it stopped.
func TestHealthCountsTheRunningProbes(t *testing.T) {
	f := newFakeServer(t, 5*time.Second, job("org/slow"))
	p := &fakeProber{started: make(chan string, 4), block: func(string, int) bool { return true }}
	w, stop := startWorker(t, f, p, 2, 100*time.Millisecond, nil)
	awaitStart(t, p)
	if _, h := health(w); h.Running != 1 {
		t.Errorf("running %d while one probe runs", h.Running)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, h := health(w); h.Running != 0 {
		t.Errorf("running %d after the probe was stopped", h.Running)
	}
}

// A worker with a serving probe (--vllm-python) runs it after the probe of
// a job that asks for it (fleet.Job.Serve), in the snapshot the probe
// read, and posts its verdict with the result; a job that does not ask
// gets none, and a worker without one posts none.
func TestServingProbeRunsForTheJobsThatAskForIt(t *testing.T) {
	full := func(model string, serve bool) fleet.Job {
		j := job(model)
		j.Mode, j.Files, j.Serve = compat.ModeFull, []string{"config.json", "model.safetensors"}, serve
		return j
	}
	var mu sync.Mutex
	ran := map[string]string{} // model snapshot → the result's status it followed
	serveProbe := func(_ context.Context, dir string, res compat.Result) (compat.ServingMeasured, error) {
		mu.Lock()
		ran[dir] = string(res.Status)
		mu.Unlock()
		return compat.ServingMeasured{Evidence: compat.ServingEvidenceMeasured, Status: "pass", TensorParallelSize: 1, MaxModelLen: 256,
			MeasuredAt: time.Now().UTC()}, nil
	}
	f := newFakeServer(t, 5*time.Second, full("org/serve", true), full("org/plain", false))
	_, stop := startWorkerWith(t, f, &fakeProber{}, 1, time.Second, nil, func(c *Config) { c.ServeProbe, c.ServingVersion = serveProbe, "0.29.0" })
	testenv.Eventually(t, "2 accepted results", 20*time.Second, func() bool { acc, _, _, _ := f.snapshot(); return len(acc) == 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	acc, _, _, _ := f.snapshot()
	if s := acc["org/serve"][0].Serving; s == nil || s.Status != "pass" {
		t.Errorf("org/serve's result carries %+v, want the serving probe's pass", s)
	}
	if s := acc["org/plain"][0].Serving; s != nil {
		t.Errorf("org/plain (not asked) carries a serving verdict %+v", s)
	}
	mu.Lock()
	if len(ran) != 1 || ran["/nonexistent/snapshot/org/serve"] != "pass" {
		t.Errorf("serving probes %v: want one, in org/serve's snapshot, after its pass", ran)
	}
	mu.Unlock()
	// it told the server it runs serving probes, and with which vLLM-TorchTPU
	servingOf := func(f *fakeServer) []*fleet.WorkerServing {
		f.mu.Lock()
		defer f.mu.Unlock()
		var out []*fleet.WorkerServing
		for _, w := range f.workers {
			out = append(out, w.Serving)
		}
		return out
	}
	if ws := servingOf(f); len(ws) != 1 || ws[0] == nil || ws[0].VLLMTorchTPU != "0.29.0" {
		t.Errorf("registered serving %+v, want vllm-torchtpu 0.29.0", ws)
	}

	// without --vllm-python: the result alone
	f = newFakeServer(t, 5*time.Second, full("org/serve", true))
	_, stop = startWorker(t, f, &fakeProber{}, 1, time.Second, nil)
	testenv.Eventually(t, "the result", 20*time.Second, func() bool { acc, _, _, _ := f.snapshot(); return len(acc) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if acc, _, _, _ := f.snapshot(); acc["org/serve"][0].Serving != nil {
		t.Errorf("a worker without a serving probe posted a serving verdict")
	}
	if ws := servingOf(f); len(ws) != 1 || ws[0] != nil {
		t.Errorf("a worker without a serving probe registered serving %+v", ws)
	}
}
