package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
)

const testToken = "worker-token-for-tests"

var testRuntime = compat.Runtime{Python: "3.11", Torch: "2.15.0", Transformers: "5.23.0", Harness: "h", Device: "cpu", DeviceCount: 1}

// fakeServer is the server side of the protocol in memory, deciding with
// the fleet package's pure functions as the real one does.
type fakeServer struct {
	t   *testing.T
	ttl time.Duration
	srv *httptest.Server
	// ignoreMatch leases jobs to any worker (a buggy server).
	ignoreMatch bool

	mu       sync.Mutex
	jobs     []*fakeJob
	accepted map[string][]fleet.ResultRequest // model → accepted results
	released []string                         // lease ids given back
	left     []string                         // workers that said they are leaving
	posts    map[string]int                   // model → result posts seen
	workers  map[string]fleet.Worker

	down      atomic.Bool  // answer 503 to everything
	forceCode atomic.Int32 // answer results with this status (0: decide)
	lastAuth  atomic.Value // the last Authorization header
}

type fakeJob struct {
	id  int64
	job fleet.Job
	st  fleet.JobState
}

func newFakeServer(t *testing.T, ttl time.Duration, jobs ...fleet.Job) *fakeServer {
	f := &fakeServer{t: t, ttl: ttl, accepted: map[string][]fleet.ResultRequest{}, posts: map[string]int{}, workers: map[string]fleet.Worker{}}
	for _, j := range jobs {
		f.add(j)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+fleet.PathRegister, f.handle(f.register))
	mux.HandleFunc("POST "+fleet.PathLease, f.handle(f.lease))
	mux.HandleFunc("POST "+fleet.PathHeartbeat, f.handle(f.heartbeat))
	mux.HandleFunc("POST "+fleet.PathResult, f.handle(f.result))
	mux.HandleFunc("POST "+fleet.PathRelease, f.handle(f.release))
	mux.HandleFunc("POST "+fleet.PathLeave, f.handle(f.leave))
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) add(j fleet.Job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs = append(f.jobs, &fakeJob{id: int64(len(f.jobs) + 1), job: j, st: fleet.JobState{State: fleet.Queued}})
}

type handlerFunc func(body []byte) (int, any)

func (f *fakeServer) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.lastAuth.Store(r.Header.Get("Authorization"))
		if f.down.Load() {
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return
		}
		switch auth := r.Header.Get("Authorization"); {
		case strings.TrimSpace(strings.TrimPrefix(auth, "Bearer")) == "":
			http.Error(w, "send Authorization: Bearer <worker token>", http.StatusUnauthorized)
			return
		case auth != "Bearer "+testToken:
			http.Error(w, "wrong worker token", http.StatusForbidden)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, fleet.MaxBodyBytes+1))
		code, out := h(body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if out != nil {
			_ = json.NewEncoder(w).Encode(out)
		}
	}
}

func (f *fakeServer) register(body []byte) (int, any) {
	var w fleet.Worker
	if json.Unmarshal(body, &w) != nil {
		return 400, nil
	}
	f.mu.Lock()
	f.workers[w.ID] = w
	f.mu.Unlock()
	return 200, fleet.RegisterResponse{LeaseTTLS: f.ttl.Seconds(), HeartbeatS: fleet.HeartbeatInterval(f.ttl).Seconds(), MaxWaitS: 1}
}

// expire takes back every lease past its expiry.
func (f *fakeServer) expireLocked(now time.Time) {
	for _, j := range f.jobs {
		j.st, _ = fleet.Expire(j.st, now)
	}
}

func (f *fakeServer) lease(body []byte) (int, any) {
	var req fleet.LeaseRequest
	if json.Unmarshal(body, &req) != nil || req.Max < 1 {
		return 400, nil
	}
	deadline := time.Now().Add(time.Duration(req.WaitS * float64(time.Second)))
	for {
		if leases := f.grant(req); len(leases) > 0 || time.Now().After(deadline) {
			return 200, fleet.LeaseResponse{Leases: leases}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fakeServer) grant(req fleet.LeaseRequest) []fleet.Lease {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	f.expireLocked(now)
	var out []fleet.Lease
	var cands []*fakeJob
	var need []int
	for _, j := range f.jobs {
		if j.st.State == fleet.Queued && (f.ignoreMatch || fleet.Holds(j.job.Key(testRuntime.RetestKey()), req.Worker)) {
			cands, need = append(cands, j), append(need, j.job.Chips())
		}
	}
	for _, i := range fleet.Pick(need, req.Max) {
		j := cands[i]
		id := fmt.Sprintf("lease-%d-%d", j.id, j.st.Attempts+1)
		st, err := fleet.Grant(j.st, id, req.Worker.ID, now, f.ttl)
		if err != nil {
			f.t.Errorf("grant: %v", err)
			continue
		}
		j.st = st
		out = append(out, fleet.Lease{ID: id, JobID: j.id, Attempt: st.Attempts, ExpiresAt: st.ExpiresAt, Job: j.job})
	}
	return out
}

func (f *fakeServer) byLease(id string) *fakeJob {
	for _, j := range f.jobs {
		if j.st.LeaseID == id {
			return j
		}
	}
	return nil
}

func (f *fakeServer) heartbeat(body []byte) (int, any) {
	var req fleet.HeartbeatRequest
	if json.Unmarshal(body, &req) != nil {
		return 400, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	f.expireLocked(now)
	resp := fleet.HeartbeatResponse{ExpiresAt: now.Add(f.ttl)}
	for _, id := range req.Leases {
		if j := f.byLease(id); j != nil {
			if st, err := fleet.Renew(j.st, id, now, f.ttl); err == nil {
				j.st = st
				resp.Renewed = append(resp.Renewed, id)
				continue
			}
		}
		resp.Lost = append(resp.Lost, id)
	}
	return 200, resp
}

func (f *fakeServer) result(body []byte) (int, any) {
	var req fleet.ResultRequest
	if len(body) > fleet.MaxBodyBytes || json.Unmarshal(body, &req) != nil {
		return 400, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts[req.ModelID]++
	if c := f.forceCode.Load(); c != 0 {
		return int(c), map[string]string{"error": "forced"}
	}
	now := time.Now()
	f.expireLocked(now)
	j := f.byLease(req.LeaseID)
	if j == nil {
		return 409, map[string]string{"error": "lease not current"}
	}
	if err := fleet.CheckResult(j.job, testRuntime.RetestKey(), req, now); err != nil {
		return 400, map[string]string{"error": err.Error()}
	}
	st, err := fleet.Complete(j.st, req.LeaseID, now)
	if err != nil {
		return 409, map[string]string{"error": err.Error()}
	}
	j.st = st
	f.accepted[req.ModelID] = append(f.accepted[req.ModelID], req)
	return 200, map[string]string{"status": "accepted"}
}

func (f *fakeServer) release(body []byte) (int, any) {
	var req fleet.ReleaseRequest
	if json.Unmarshal(body, &req) != nil {
		return 400, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.byLease(req.LeaseID)
	if j == nil {
		return 409, nil
	}
	st, err := fleet.Release(j.st, req.LeaseID, time.Now())
	if err != nil {
		return 409, nil
	}
	j.st = st
	f.released = append(f.released, req.LeaseID)
	return 200, nil
}

func (f *fakeServer) leave(body []byte) (int, any) {
	var req fleet.LeaveRequest
	if json.Unmarshal(body, &req) != nil {
		return 400, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.left = append(f.left, req.WorkerID)
	return 200, map[string]string{"status": "left"}
}

func (f *fakeServer) leavers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.left...)
}

// expireNow makes every held lease expire (a worker cut off for a TTL).
func (f *fakeServer) expireNow() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, j := range f.jobs {
		if j.st.State == fleet.Leased {
			j.st.ExpiresAt = time.Now().Add(-time.Millisecond)
		}
	}
	f.expireLocked(time.Now())
}

func (f *fakeServer) snapshot() (accepted map[string][]fleet.ResultRequest, released []string, posts map[string]int, jobs []fakeJob) {
	f.mu.Lock()
	defer f.mu.Unlock()
	accepted = map[string][]fleet.ResultRequest{}
	for k, v := range f.accepted {
		accepted[k] = append([]fleet.ResultRequest(nil), v...)
	}
	posts = map[string]int{}
	for k, v := range f.posts {
		posts[k] = v
	}
	for _, j := range f.jobs {
		jobs = append(jobs, *j)
	}
	return accepted, append([]string(nil), f.released...), posts, jobs
}

// fakeProber stands in for the harness runner: it "runs" for delay, or
// until released, and answers with the status the test scripted.
type fakeProber struct {
	delay   time.Duration
	block   func(model string, call int) bool // block until ctx ends?
	status  func(model string, call int) compat.Status
	started chan string

	mu      sync.Mutex
	calls   map[string]int
	reqs    map[string]probe.Request // the last request per model
	running int
	peak    int
	devices int // devices the running probes hold
	peakDev int
}

func (p *fakeProber) Env(ctx context.Context, target compat.Target) (compat.Target, compat.Runtime, error) {
	if target == compat.TargetTPU {
		return "", compat.Runtime{}, probe.ErrDeviceUnavailable
	}
	return compat.TargetCPU, testRuntime, nil
}

func (p *fakeProber) Probe(ctx context.Context, req probe.Request) compat.Result {
	p.mu.Lock()
	if p.calls == nil {
		p.calls = map[string]int{}
	}
	p.calls[req.ModelID]++
	call := p.calls[req.ModelID]
	if p.reqs == nil {
		p.reqs = map[string]probe.Request{}
	}
	p.reqs[req.ModelID] = req
	p.running++
	p.peak = max(p.peak, p.running)
	p.devices += max(req.Devices, 1)
	p.peakDev = max(p.peakDev, p.devices)
	p.mu.Unlock()
	defer func() { p.mu.Lock(); p.running--; p.devices -= max(req.Devices, 1); p.mu.Unlock() }()
	if p.started != nil {
		p.started <- req.ModelID
	}
	wait := time.After(p.delay)
	if p.block != nil && p.block(req.ModelID, call) {
		wait = nil
	}
	select {
	case <-wait:
	case <-ctx.Done():
		return compat.Result{Target: req.Target, Status: compat.StatusError, Message: compat.Ptr(probe.InterruptedMessage),
			Revision: req.Revision, TestedAt: time.Now().UTC(), Runtime: testRuntime}
	}
	st := compat.StatusPass
	if p.status != nil {
		st = p.status(req.ModelID, call)
	}
	return compat.Result{Target: req.Target, Status: st, Stage: compat.Ptr(compat.StageGenerate), Mode: compat.Ptr(req.Mode),
		Revision: req.Revision, TestedAt: time.Now().UTC(), Runtime: testRuntime, DevicesUsed: max(req.Devices, 1)}
}

func (p *fakeProber) callsOf(model string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[model]
}

// fakeFetcher fails the downloads of the models in fail, and of the
// files in failFile (input files, each fetched on its own); a model's
// files must start with config.json.
type fakeFetcher struct{ fail, failFile map[string]error }

func (f fakeFetcher) Download(ctx context.Context, id, sha string, files []string) (string, error) {
	if err := f.fail[id]; err != nil {
		return "", err
	}
	if len(files) == 1 && f.failFile[files[0]] != nil {
		return "", f.failFile[files[0]]
	}
	if len(files) == 0 || (files[0] != "config.json" && len(files) > 1) {
		return "", errors.New("no config.json asked for")
	}
	return "/nonexistent/snapshot/" + id, nil
}

func job(model string) fleet.Job {
	return fleet.Job{ModelID: model, Revision: "sha-" + strings.ReplaceAll(model, "/", "-"), Target: compat.TargetCPU,
		Mode: compat.ModeArch, Files: []string{"config.json"}, TimeoutS: 60}
}

// startWorker runs a worker with devices probers sharing p against f; the
// returned stop cancels its context (SIGTERM) and waits for Run.
func startWorker(t *testing.T, f *fakeServer, p *fakeProber, devices int, grace time.Duration, fetch Fetcher) (*Worker, func() error) {
	t.Helper()
	return startWorkerWith(t, f, p, devices, grace, fetch, nil)
}

// startWorkerWith is startWorker with its Config changed by set first.
func startWorkerWith(t *testing.T, f *fakeServer, p *fakeProber, devices int, grace time.Duration, fetch Fetcher, set func(*Config)) (*Worker, func() error) {
	t.Helper()
	probers := make([]Prober, devices)
	for i := range probers {
		probers[i] = p
	}
	if fetch == nil {
		fetch = fakeFetcher{}
	}
	cfg := Config{
		Server: f.srv.URL, Token: testToken, ID: NewID("test-host"), Host: "test-host", Version: "test",
		Target: compat.TargetCPU, ProbeGrace: grace, Wait: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if set != nil {
		set(&cfg)
	}
	w, err := New(cfg, p, probers, fetch)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				runErr = errors.New("Run did not return within 30s of its context's end")
			}
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return w, stop
}

// awaitStart waits up to 20s for a probe of p to start.
func awaitStart(t *testing.T, p *fakeProber) {
	t.Helper()
	select {
	case <-p.started:
	case <-time.After(20 * time.Second):
		t.Fatal("the probe did not start")
	}
}
