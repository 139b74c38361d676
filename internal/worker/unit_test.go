package worker

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
)

// TestNewDefaults: New refuses a worker without probers or server, and
// fills in each duration left at zero (or negative) with its default,
// keeping one that is set; the long poll is capped at fleet.MaxWait.
func TestNewDefaults(t *testing.T) {
	p := &fakeProber{}
	if _, err := New(Config{Server: "http://s"}, p, nil, fakeFetcher{}); err == nil {
		t.Error("New without probers succeeded")
	}
	if _, err := New(Config{Server: "http://s"}, nil, []Prober{p}, fakeFetcher{}); err == nil {
		t.Error("New without an env prober succeeded")
	}
	if _, err := New(Config{}, p, []Prober{p}, fakeFetcher{}); err == nil {
		t.Error("New without a server URL succeeded")
	}
	type durations struct{ wait, grace, timeout, misconf time.Duration }
	for _, tc := range []struct {
		in, want durations
	}{
		{durations{0, 0, 0, 0}, durations{30 * time.Second, 10 * time.Second, 20 * time.Minute, 2 * time.Minute}},
		{durations{-1, -1, -1, -1}, durations{30 * time.Second, 10 * time.Second, 20 * time.Minute, 2 * time.Minute}},
		{durations{1, 1, 1, 1}, durations{1, 1, 1, 1}},
		{durations{30 * time.Second, 3 * time.Second, 5 * time.Minute, time.Hour}, durations{30 * time.Second, 3 * time.Second, 5 * time.Minute, time.Hour}},
		{durations{30*time.Second + 1, time.Hour, time.Hour, time.Hour}, durations{30 * time.Second, time.Hour, time.Hour, time.Hour}},
	} {
		w, err := New(Config{Server: "http://s", Wait: tc.in.wait, ProbeGrace: tc.in.grace, Timeout: tc.in.timeout,
			MisconfiguredAfter: tc.in.misconf}, p, []Prober{p}, fakeFetcher{})
		if err != nil {
			t.Fatal(err)
		}
		if got := (durations{w.cfg.Wait, w.cfg.ProbeGrace, w.cfg.Timeout, w.cfg.MisconfiguredAfter}); got != tc.want {
			t.Errorf("New with %+v: %+v, want %+v", tc.in, got, tc.want)
		}
	}
	// The defaults are the documented ones.
	if fleet.MaxWait != 30*time.Second || config.DefaultProbeGrace != 10*time.Second || config.DefaultTimeout != 20*time.Minute {
		t.Error("the expected defaults above are out of date")
	}
}

// TestSetTiming: the heartbeat interval is the server's when it names one,
// else a quarter of its lease TTL, else a quarter of the default TTL.
func TestSetTiming(t *testing.T) {
	w := &Worker{}
	for _, tc := range []struct {
		reg  fleet.RegisterResponse
		want time.Duration
	}{
		{fleet.RegisterResponse{HeartbeatS: 2.5, LeaseTTLS: 60}, 2500 * time.Millisecond},
		{fleet.RegisterResponse{HeartbeatS: 0.001}, time.Millisecond},
		{fleet.RegisterResponse{LeaseTTLS: 8}, 2 * time.Second},
		{fleet.RegisterResponse{HeartbeatS: -1, LeaseTTLS: 0.004}, time.Millisecond},
		{fleet.RegisterResponse{}, 30 * time.Second}, // 2 minutes / 4
		{fleet.RegisterResponse{HeartbeatS: -1, LeaseTTLS: -1}, 30 * time.Second},
	} {
		w.setTiming(tc.reg)
		if got := w.heartbeatEvery(); got != tc.want {
			t.Errorf("setTiming(%+v): every %v, want %v", tc.reg, got, tc.want)
		}
	}
}

// TestNewIDKeepsTheNameCharacters: letters, digits, '-', '.', '_' stay,
// everything else (the characters next to the ranges too) becomes '-',
// and a host of more than 63 characters is cut there.
func TestNewIDKeepsTheNameCharacters(t *testing.T) {
	for _, tc := range []struct{ host, want string }{
		{"azAZ09-._", "azAZ09-._"},
		{"`{@[/:", "------"},
		{"gpu node 7", "gpu-node-7"},
		{"", "worker"},
		{"é", "-"},
		{strings.Repeat("h", 63), strings.Repeat("h", 63)},
		{strings.Repeat("h", 64), strings.Repeat("h", 63)},
	} {
		id := NewID(tc.host)
		if len(id) != len(tc.want)+9 || id[:len(tc.want)+1] != tc.want+"-" {
			t.Errorf("NewID(%q) = %q, want %q and 8 hex digits", tc.host, id, tc.want+"-")
		}
	}
}

// TestStepRequest: a job's timeout applies when it is shorter than the
// worker's (and set); the probe request carries the job as leased and the
// runtime the worker registered.
func TestStepRequest(t *testing.T) {
	w := &Worker{cfg: Config{Timeout: 10 * time.Minute}, self: fleet.Worker{Runtime: testRuntime}}
	for _, tc := range []struct {
		jobS float64
		want time.Duration
	}{
		{0, 10 * time.Minute},
		{-5, 10 * time.Minute},
		{60, time.Minute},
		{0.5, 500 * time.Millisecond},
		{600, 10 * time.Minute},
		{601, 10 * time.Minute},
	} {
		j := job("org/m")
		j.TimeoutS = tc.jobS
		if got := w.stepRequest(j).Timeout; got != tc.want {
			t.Errorf("job timeout %vs on a worker of 10m: %v, want %v", tc.jobS, got, tc.want)
		}
	}
	j := job("org/m")
	j.Task, j.MemoryBudgetBytes, j.PlanNote, j.NoTrain, j.Previous = "text-generation", 1<<30, "new revision", "over the budget", compat.StatusFail
	r := w.stepRequest(j)
	if r.ModelID != "org/m" || r.Revision != j.Revision || r.Task != "text-generation" || r.Target != compat.TargetCPU ||
		r.Mode != compat.ModeArch || r.MemoryBudgetBytes != 1<<30 || r.PlanNote != "new revision" || r.NoTrain != "over the budget" ||
		r.Previous != compat.StatusFail || r.Runtime != testRuntime {
		t.Errorf("stepRequest: %+v", r)
	}
}

// TestMisconfiguredAfterItsBound: /healthz fails only once the refusal
// lasted longer than MisconfiguredAfter (not at exactly the bound), and a
// refusal that goes on with the same reason keeps its start; a new reason
// starts anew.
func TestMisconfiguredAfterItsBound(t *testing.T) {
	var logs proctest.Buffer
	w := &Worker{cfg: Config{MisconfiguredAfter: time.Minute}, log: slog.New(slog.NewTextHandler(&logs, nil))}
	if got := w.misconfigured(time.Now()); got != "" {
		t.Fatalf("a worker never refused is misconfigured: %q", got)
	}
	w.failed(t.Context(), "lease", errNoToken, 0)
	m := w.misconf.Load()
	if m == nil || !strings.Contains(m.reason, "no worker token") {
		t.Fatalf("after a 401: %+v", m)
	}
	if got := w.misconfigured(m.since.Add(time.Minute)); got != "" {
		t.Errorf("misconfigured at exactly the bound: %q", got)
	}
	if got := w.misconfigured(m.since.Add(time.Minute + 1)); got != m.reason {
		t.Errorf("misconfigured just past the bound: %q, want %q", got, m.reason)
	}
	if !strings.Contains(logs.String(), "attempt=1") || strings.Contains(logs.String(), "attempt=0") {
		t.Errorf("the first attempt is logged as:\n%s", logs.String())
	}
	time.Sleep(2 * time.Millisecond)
	w.failed(t.Context(), "lease", errNoToken, 4)
	if again := w.misconf.Load(); again != m {
		t.Errorf("the same refusal again restarted the clock: %+v, was %+v", again, m)
	}
	if !strings.Contains(logs.String(), "attempt=5") {
		t.Errorf("the fifth attempt is not logged as such:\n%s", logs.String())
	}
	w.failed(t.Context(), "lease", errWrongToken, 5)
	if other := w.misconf.Load(); other == m || !strings.Contains(other.reason, "wrong worker token") || !other.since.After(m.since) {
		t.Errorf("a new reason kept the old one's record: %+v", other)
	}
	// An answer clears it; a failure with the context ended records nothing.
	w.seen(true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.failed(ctx, "lease", errNoToken, 0)
	if got := w.misconf.Load(); got != nil || w.serverUp.Load() {
		t.Errorf("after an answer and a failure on an ended context: %+v, server up %v", got, w.serverUp.Load())
	}
}

// TestHealthBeforeAnyAnswer: a worker the server never answered has no
// last contact; one resolving its device says "starting".
func TestHealthBeforeAnyAnswer(t *testing.T) {
	p := &fakeProber{}
	w, err := New(Config{Server: "http://127.0.0.1:1", ID: "w"}, p, []Prober{p}, fakeFetcher{})
	if err != nil {
		t.Fatal(err)
	}
	if code, h := health(w); code != http.StatusOK || h.Status != "ok" || h.LastContact != nil || h.ServerUp || h.ID != "w" {
		t.Errorf("healthz before any contact: %d %+v", code, h)
	}
	w.resolving.Store(true)
	if code, h := health(w); code != http.StatusOK || h.Status != "starting" {
		t.Errorf("healthz while resolving: %d %+v", code, h)
	}
	w.resolving.Store(false)
	before := time.Now().UTC()
	w.seen(true)
	if _, h := health(w); h.LastContact == nil || h.LastContact.Before(before.Add(-time.Second)) || !h.ServerUp {
		t.Errorf("healthz after an answer: %+v", h)
	}
}

// TestRunOnAnEndedContext: a worker stopped while its device is probed
// returns nil (a stop, not a failed start), without registering.
func TestRunOnAnEndedContext(t *testing.T) {
	f := newFakeServer(t, 5*time.Second)
	w, err := New(Config{Server: f.srv.URL, Token: testToken, ID: "w", Host: "h", Target: compat.TargetTPU}, &fakeProber{}, []Prober{&fakeProber{}}, fakeFetcher{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx); err != nil {
		t.Errorf("Run on an ended context: %v, want nil", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.workers) != 0 {
		t.Errorf("registered: %v", f.workers)
	}
}

// TestAFetchCutShortIsInterrupted: a download that fails because the
// worker is stopping says nothing about the model (Interrupted); one that
// fails otherwise is the model's result.
func TestAFetchCutShortIsInterrupted(t *testing.T) {
	p := &fakeProber{}
	w, err := New(Config{Server: "http://s", ID: "w", Host: "h", Logger: slog.New(slog.DiscardHandler)}, p, []Prober{p},
		fakeFetcher{fail: map[string]error{"org/m": errors.New("connection reset")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out, dir := w.execute(ctx, []int{0}, job("org/m")); !out.Interrupted || dir != "" {
		t.Errorf("a fetch cut short by the stop: %+v, want interrupted", out)
	}
	if out, dir := w.execute(t.Context(), []int{0}, job("org/m")); out.Interrupted || out.Result.Status != compat.StatusError ||
		out.Result.Revision != job("org/m").Revision || dir != "" {
		t.Errorf("a failed fetch: %+v, want the model's error result", out)
	}
	if p.callsOf("org/m") != 0 {
		t.Error("probed without its files")
	}
}

// TestAFailureThatIsNotASetupProblemIsWaitedOut: any other failure is
// logged as the server not reachable, with its attempt counted from 1,
// and is never a misconfiguration.
func TestAFailureThatIsNotASetupProblemIsWaitedOut(t *testing.T) {
	var logs proctest.Buffer
	w := &Worker{cfg: Config{MisconfiguredAfter: time.Nanosecond}, log: slog.New(slog.NewTextHandler(&logs, nil))}
	w.failed(t.Context(), "lease", errors.New("connection refused"), 2)
	if s := logs.String(); !strings.Contains(s, "lease: server not reachable; retrying") || !strings.Contains(s, "attempt=3") {
		t.Errorf("log:\n%s", s)
	}
	if w.misconf.Load() != nil || w.misconfigured(time.Now().Add(time.Hour)) != "" {
		t.Error("an unreachable server counts as a misconfiguration")
	}
}

// TestGiveBackAndLeaveSayWhetherTheServerHeard: a lease given back, or a
// leave, that the server took is logged as done; one it did not take is
// logged as such (the lease then expires, the worker's silence is noticed).
func TestGiveBackAndLeaveSayWhetherTheServerHeard(t *testing.T) {
	f := newFakeServer(t, 5*time.Second, job("org/m"))
	var logs proctest.Buffer
	p := &fakeProber{}
	w, err := New(Config{Server: f.srv.URL, Token: testToken, ID: "w", Host: "h", Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		p, []Prober{p}, fakeFetcher{})
	if err != nil {
		t.Fatal(err)
	}
	leases, err := w.api.lease(t.Context(), fleet.Worker{ID: "w", Target: compat.TargetCPU, Runtime: testRuntime, Devices: 1}, 1, 0)
	if err != nil || len(leases) != 1 {
		t.Fatalf("lease: %v, %v", leases, err)
	}
	w.giveBack(leases[0], "worker stopping")
	if _, released, _, _ := f.snapshot(); len(released) != 1 || released[0] != leases[0].ID {
		t.Fatalf("released %v", released)
	}
	if s := logs.String(); !strings.Contains(s, "lease given back") || strings.Contains(s, "not given back") {
		t.Errorf("a lease the server took back:\n%s", s)
	}
	mark := len(logs.String())
	w.giveBack(leases[0], "worker stopping") // no longer current: 409
	if s := logs.String()[mark:]; !strings.Contains(s, "lease not given back") || strings.Contains(s, "lease given back") {
		t.Errorf("a lease the server did not take back:\n%s", s)
	}

	mark = len(logs.String())
	w.final = t.Context()
	w.leave()
	if s := logs.String()[mark:]; len(f.leavers()) != 1 || strings.Contains(s, "not told") {
		t.Errorf("a leave the server heard: %v\n%s", f.leavers(), s)
	}
	f.srv.Close()
	w.leave()
	if s := logs.String(); !strings.Contains(s, "the server was not told this worker leaves") {
		t.Errorf("a leave the server did not hear:\n%s", s)
	}
}
