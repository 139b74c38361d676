package scan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// fakeHub serves a fixed listing and writes config.json files into a
// snapshot folder; its function fields let a test inject failures.
type fakeHub struct {
	t        *testing.T
	dir      string
	models   []hub.ModelInfo
	configs  map[string]string // id → config.json
	listErr  error
	fetchErr map[string]error
	delay    time.Duration
	delays   map[string]time.Duration // per model, on top of delay

	infos map[string]hub.ModelInfo // ModelInfo answers (with sizes), when they differ from the listing

	mu        sync.Mutex
	downloads []string
	files     map[string][]string // id → the files of its downloads, in order
	events    []string            // "fetch:id" / "probe:id" in time order (shared with fakeProber)
}

func (h *fakeHub) ListModels(ctx context.Context, o hub.ListOptions) ([]hub.ModelInfo, error) {
	h.mu.Lock()
	err := h.listErr
	h.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := h.models
	if o.Limit < len(out) {
		out = out[:o.Limit]
	}
	return out, nil
}

func (h *fakeHub) ModelInfo(ctx context.Context, id, rev string) (hub.ModelInfo, error) {
	if m, ok := h.infos[id]; ok {
		return m, nil
	}
	for _, m := range h.models {
		if m.ID == id {
			return m, nil
		}
	}
	return hub.ModelInfo{}, &hub.Error{Status: 404, Code: hub.CodeRepoNotFound, Message: "Repository not found"}
}

func (h *fakeHub) Download(ctx context.Context, id, sha string, files []string) (string, error) {
	h.mu.Lock()
	h.downloads = append(h.downloads, id)
	if h.files == nil {
		h.files = map[string][]string{}
	}
	h.files[id] = append(h.files[id], files...)
	h.events = append(h.events, "fetch:"+id)
	h.mu.Unlock()
	if d := h.delay + h.delays[id]; d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if err := h.fetchErr[id]; err != nil {
		return "", err
	}
	dir := filepath.Join(h.dir, id, sha)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "config.json"), []byte(h.configs[id]), 0o644)
}

func (h *fakeHub) event(e string) {
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

// fakeProber answers each probe from a queue of statuses per model.
type fakeProber struct {
	hub     *fakeHub
	mu      sync.Mutex
	answers map[string][]compat.Status
	calls   map[string]int
	reqs    map[string]probe.Request // the last request per model
	runtime compat.Runtime
	delay   time.Duration
	block   chan struct{} // when set, probes wait on it (or ctx)
}

func (p *fakeProber) Env(ctx context.Context, t compat.Target) (compat.Target, compat.Runtime, error) {
	return compat.TargetCPU, p.runtime, nil
}

func (p *fakeProber) Probe(ctx context.Context, req probe.Request) compat.Result {
	if p.hub != nil {
		p.hub.event("probe:" + req.ModelID)
	}
	if p.block != nil {
		select {
		case <-p.block:
		case <-ctx.Done():
			return compat.Result{Status: compat.StatusError, Target: req.Target, Message: compat.Ptr("interrupted")}
		}
	}
	if p.delay > 0 {
		time.Sleep(p.delay)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls == nil {
		p.calls = map[string]int{}
	}
	n := p.calls[req.ModelID]
	p.calls[req.ModelID]++
	if p.reqs == nil {
		p.reqs = map[string]probe.Request{}
	}
	p.reqs[req.ModelID] = req
	st := compat.StatusPass
	if a := p.answers[req.ModelID]; len(a) > 0 {
		st = a[min(n, len(a)-1)]
	}
	r := compat.Result{Target: req.Target, Status: st, Revision: req.Revision, Runtime: p.runtime, Mode: compat.Ptr(req.Mode),
		TestedAt: time.Now().UTC(), Repro: compat.Repro(req.ModelID, req.Revision, req.Target, req.Mode)}
	if st == compat.StatusPass {
		r.Stage = compat.Ptr(compat.StageGenerate)
	} else if st == compat.StatusFail {
		r.Stage = compat.Ptr(compat.StageForward)
		r.FailureClass = compat.Ptr(compat.ClassUnsupportedOp)
		r.Op = compat.Ptr("aten::foo")
		r.Signature = compat.Ptr("unsupported_op:aten::foo")
	}
	return r
}

func (p *fakeProber) count(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[id]
}

var quiet = slog.New(slog.DiscardHandler)

const llamaConfig = `{"architectures":["LlamaForCausalLM"],"model_type":"llama"}`

func model(id, task, lib string, tags ...string) hub.ModelInfo {
	return hub.ModelInfo{ID: id, RequestedID: id, SHA: "sha-" + filepath.Base(id), PipelineTag: task, Library: lib, Tags: tags, Downloads: 100}
}

type fixture struct {
	hub    *fakeHub
	prober *fakeProber
	store  *store.SQLite
	s      *Scanner
}

func newFixture(t *testing.T, models ...hub.ModelInfo) *fixture {
	t.Helper()
	h := &fakeHub{t: t, dir: t.TempDir(), models: models, configs: map[string]string{}, fetchErr: map[string]error{}}
	for _, m := range models {
		h.configs[m.ID] = llamaConfig
	}
	p := &fakeProber{hub: h, answers: map[string][]compat.Status{}, runtime: compat.Runtime{Torch: "2.15.0", Transformers: "5.23.0", Harness: "0.1.0", Device: "cpu", DeviceCount: 1}}
	st := storetest.MustOpen(t)
	return &fixture{hub: h, prober: p, store: st, s: &Scanner{Hub: h, Prober: p, Store: st, CacheDir: t.TempDir(), Logger: quiet}}
}

func (f *fixture) status(t *testing.T, id string) compat.Status {
	t.Helper()
	r, err := f.store.LatestResult(context.Background(), id, compat.TargetCPU)
	if errors.Is(err, store.ErrNotFound) {
		return compat.StatusUntested
	}
	if err != nil {
		t.Fatal(err)
	}
	return r.Status
}

func TestScanRecordsEveryModel(t *testing.T) {
	f := newFixture(t,
		model("org/llama", "text-generation", "transformers"),
		model("org/custom", "text-generation", "transformers", "custom_code"),
		model("org/gated", "text-generation", "transformers"),
		model("org/timm", "image-classification", "timm"),
		model("org/broken", "text-generation", "transformers"),
		model("org/automap", "text-generation", "transformers"),
		model("org/gone", "text-generation", "transformers"),
		model("org/flaky-net", "text-generation", "transformers"),
	)
	f.hub.models[2].Gated = true
	f.hub.configs["org/broken"] = `{"architectures": [`
	f.hub.configs["org/automap"] = `{"architectures":["X"],"model_type":"x","auto_map":{"AutoModel":"m.X"}}`
	f.hub.fetchErr["org/gone"] = &hub.Error{Status: 404, Code: hub.CodeEntryNotFound, Message: "Entry not found"}
	f.hub.fetchErr["org/flaky-net"] = errors.New("connection reset by peer")

	sc, err := f.s.Run(context.Background(), Options{Target: compat.TargetAuto, Mode: compat.ModeArch, Limit: 100}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Status != store.ScanDone || sc.Planned != 8 || sc.Done != 8 || sc.Probed != 1 {
		t.Fatalf("scan %+v", sc)
	}
	if sc.Target != "cpu" || sc.Runtime.Torch != "2.15.0" {
		t.Errorf("scan record: target %q runtime %+v, want the target auto resolved to and its runtime", sc.Target, sc.Runtime)
	}
	want := map[string]struct {
		status compat.Status
		reason compat.Reason
	}{
		"org/llama":     {compat.StatusPass, ""},
		"org/custom":    {compat.StatusSkipped, compat.ReasonRemoteCode},
		"org/gated":     {compat.StatusSkipped, compat.ReasonGated},
		"org/timm":      {compat.StatusSkipped, compat.ReasonUnsupportedLibrary},
		"org/broken":    {compat.StatusFail, ""},
		"org/automap":   {compat.StatusSkipped, compat.ReasonRemoteCode},
		"org/gone":      {compat.StatusSkipped, compat.ReasonNotFound},
		"org/flaky-net": {compat.StatusError, ""},
	}
	for id, w := range want {
		r, err := f.store.LatestResult(context.Background(), id, compat.TargetCPU)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if r.Status != w.status {
			t.Errorf("%s: status %s, want %s (%v)", id, r.Status, w.status, deref(r.Message))
		}
		if w.reason != "" && (r.Reason == nil || *r.Reason != w.reason) {
			t.Errorf("%s: reason %v, want %s", id, deref(r.Reason), w.reason)
		}
		if r.Target != compat.TargetCPU || r.Revision != "sha-"+filepath.Base(id) || r.ScanID == nil || *r.ScanID != sc.ID {
			t.Errorf("%s: target %s revision %s scan %v", id, r.Target, r.Revision, r.ScanID)
		}
	}
	broken, _ := f.store.LatestResult(context.Background(), "org/broken", compat.TargetCPU)
	if deref(broken.Stage) != "config" || deref(broken.FailureClass) != "config_error" {
		t.Errorf("broken config: stage %s class %s", deref(broken.Stage), deref(broken.FailureClass))
	}
	// Gated and custom-code models are declined from the listing, before any download.
	for _, id := range f.hub.downloads {
		if id == "org/gated" || id == "org/custom" || id == "org/timm" {
			t.Errorf("downloaded %s, which preflight should decline from the listing", id)
		}
	}
}

func TestSecondScanRetestsOnlyWhatChanged(t *testing.T) {
	f := newFixture(t, model("a/one", "text-generation", "transformers"), model("a/two", "text-generation", "transformers"))
	ctx := context.Background()
	if _, err := f.s.Run(ctx, Options{Mode: compat.ModeArch}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	f.hub.downloads = nil
	sc, err := f.s.Run(ctx, Options{Mode: compat.ModeArch}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Unchanged != 2 || sc.Probed != 0 || len(f.hub.downloads) != 0 {
		t.Fatalf("nothing changed, yet unchanged=%d probed=%d downloads=%v", sc.Unchanged, sc.Probed, f.hub.downloads)
	}

	tests := []struct {
		name   string
		change func()
		want   []string
	}{
		{"new revision", func() { f.hub.models[0].SHA = "sha-new" }, []string{"a/one"}},
		{"new runtime", func() { f.prober.runtime.TorchTPU = "0.3.0" }, []string{"a/one", "a/two"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.change()
			f.hub.downloads = nil
			if _, err := f.s.Run(ctx, Options{Mode: compat.ModeArch}, Hooks{}); err != nil {
				t.Fatal(err)
			}
			got := slices.Sorted(slices.Values(f.hub.downloads))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("retested %v, want %v", got, tt.want)
			}
		})
	}
	f.hub.downloads = nil
	if _, err := f.s.Run(ctx, Options{Mode: compat.ModeArch, Force: true}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if len(f.hub.downloads) != 2 {
		t.Fatalf("--force retested %v", f.hub.downloads)
	}
}

func TestStatusChangeNeedsConfirmation(t *testing.T) {
	tests := []struct {
		name       string
		answers    []compat.Status // first scan, then the second scan's probe and rerun
		wantStatus compat.Status
		wantKind   compat.EventKind
		wantProbes int
	}{
		{"confirmed regression", []compat.Status{compat.StatusPass, compat.StatusFail, compat.StatusFail}, compat.StatusFail, compat.EventRegression, 3},
		{"flaky regression", []compat.Status{compat.StatusPass, compat.StatusFail, compat.StatusPass}, compat.StatusPass, compat.EventFlaky, 3},
		{"confirmed fix", []compat.Status{compat.StatusFail, compat.StatusPass, compat.StatusPass}, compat.StatusPass, compat.EventFix, 3},
		{"no change, no rerun", []compat.Status{compat.StatusPass, compat.StatusPass}, compat.StatusPass, compat.EventNew, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, model("a/m", "text-generation", "transformers"))
			f.prober.answers["a/m"] = tt.answers
			ctx := context.Background()
			if _, err := f.s.Run(ctx, Options{Mode: compat.ModeArch}, Hooks{}); err != nil {
				t.Fatal(err)
			}
			if _, err := f.s.Run(ctx, Options{Mode: compat.ModeArch, Force: true}, Hooks{}); err != nil {
				t.Fatal(err)
			}
			if got := f.status(t, "a/m"); got != tt.wantStatus {
				t.Errorf("status %s, want %s", got, tt.wantStatus)
			}
			if n := f.prober.count("a/m"); n != tt.wantProbes {
				t.Errorf("%d probes, want %d", n, tt.wantProbes)
			}
			ev, err := f.store.ModelEvents(ctx, "a/m", 10)
			if err != nil || len(ev) == 0 {
				t.Fatalf("events %v %v", ev, err)
			}
			if ev[0].Kind != tt.wantKind {
				t.Errorf("newest event %s, want %s", ev[0].Kind, tt.wantKind)
			}
		})
	}
}

func TestHubDownFailsScanWithoutBlamingModels(t *testing.T) {
	f := newFixture(t, model("a/m", "text-generation", "transformers"))
	f.hub.listErr = errors.New("GET http://127.0.0.1:9/api/models?sort=downloads&expand%5B%5D=sha: dial tcp: connection refused")
	var hubErr error
	sc, err := f.s.Run(context.Background(), Options{}, Hooks{HubFailure: func(err error) { hubErr = err }})
	if !errors.Is(err, ErrHub) {
		t.Fatalf("err = %v, want ErrHub", err)
	}
	if sc.Status != store.ScanFailed || !strings.Contains(sc.Error, "connection refused") || strings.Contains(sc.Error, "expand") {
		t.Errorf("scan %+v: want the cause, with the listing query shortened", sc)
	}
	if hubErr == nil {
		t.Error("HubFailure hook not called")
	}
	if got := f.status(t, "a/m"); got != compat.StatusUntested {
		t.Errorf("model got a result (%s) although the Hub was down", got)
	}
}

func TestExactModelsAndInvalidIDs(t *testing.T) {
	f := newFixture(t, model("a/m", "text-generation", "transformers"))
	sc, err := f.s.Run(context.Background(), Options{Models: []string{"a/m", "no/such-model", "../etc/passwd"}}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if f.status(t, "a/m") != compat.StatusPass {
		t.Errorf("a/m not probed")
	}
	if r, err := f.store.LatestResult(context.Background(), "no/such-model", compat.TargetCPU); err != nil || r.Status != compat.StatusSkipped || deref(r.Reason) != "not_found" {
		t.Errorf("missing model: %+v %v", r, err)
	}
	if sc.Error == "" || sc.Planned != 2 {
		t.Errorf("invalid id not reported: %+v", sc)
	}
}

// TestFetchOverlapsProbe checks the pipeline: the next model's files are
// fetched while the current model holds the device.
// TestFetchOverlapsProbe: downloads run ahead of the probes, so the device
// is busier than in a naive download-then-probe loop over the same models,
// measured side by side here. With a download as long as a probe the naive
// loop keeps the device busy half the time at best; the pipeline, after the
// first download, nearly all the time.
func TestFetchOverlapsProbe(t *testing.T) {
	const n, fetch, probeTime = 8, 40 * time.Millisecond, 40 * time.Millisecond
	var models []hub.ModelInfo
	for i := range n {
		models = append(models, model(fmt.Sprintf("a/%d", i+1), "text-generation", "transformers"))
	}
	f := newFixture(t, models...)
	f.hub.delay = fetch
	f.prober.delay = probeTime
	sc, err := f.s.Run(context.Background(), Options{Mode: compat.ModeArch}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	// fetch:a/2 and fetch:a/3 must come before probe:a/1 has finished, i.e. before probe:a/2.
	f.hub.mu.Lock()
	idx := map[string]int{}
	for i, e := range f.hub.events {
		idx[e] = i
	}
	events := slices.Clone(f.hub.events)
	f.hub.mu.Unlock()
	if !(idx["fetch:a/2"] < idx["probe:a/2"] && idx["fetch:a/3"] < idx["probe:a/2"]) {
		t.Errorf("fetches did not run ahead of probes: %v", events)
	}

	// The naive loop over the same fake Hub and prober.
	ctx := context.Background()
	naiveStart := time.Now()
	var naiveBusy time.Duration
	for _, m := range models {
		dir, err := f.hub.Download(ctx, m.ID, m.SHA, []string{"config.json"})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		f.prober.Probe(ctx, probe.Request{ModelID: m.ID, Revision: m.SHA, SnapshotDir: dir, Target: compat.TargetCPU, Mode: compat.ModeArch})
		naiveBusy += time.Since(t0)
	}
	naive := naiveBusy.Seconds() / time.Since(naiveStart).Seconds()
	if sc.DeviceBusy == nil {
		t.Fatal("no device busy fraction")
	}
	t.Logf("device busy: pipelined %.2f, naive download-then-probe %.2f", *sc.DeviceBusy, naive)
	// Ideal: pipelined 8×40/(40+8×40) = 0.89, naive 0.5. A naive loop
	// cannot reach 0.7, nor beat itself by 0.2.
	if *sc.DeviceBusy < 0.7 || *sc.DeviceBusy < naive+0.2 {
		t.Errorf("device busy fraction %.2f, naive loop %.2f: want at least 0.7 and 0.2 above the naive loop", *sc.DeviceBusy, naive)
	}
}

func TestCancelledScanIsInterrupted(t *testing.T) {
	f := newFixture(t, model("a/1", "text-generation", "transformers"), model("a/2", "text-generation", "transformers"))
	f.prober.block = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for f.prober.count("a/1") == 0 {
			f.hub.mu.Lock()
			started := len(f.hub.events) > 1
			f.hub.mu.Unlock()
			if started {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	sc, err := f.s.Run(ctx, Options{Mode: compat.ModeArch}, Hooks{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if sc.Status != store.ScanInterrupted {
		t.Errorf("scan status %s", sc.Status)
	}
	if got := f.status(t, "a/1"); got != compat.StatusUntested {
		t.Errorf("an interrupted probe was recorded as %s", got)
	}
}

func TestServiceQueuesOneScanAtATime(t *testing.T) {
	f := newFixture(t, model("a/1", "text-generation", "transformers"))
	f.prober.block = make(chan struct{})
	svc := NewService(f.s, Options{Mode: compat.ModeArch}, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.Run(ctx); close(done) }()

	if err := svc.Request("manual"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return svc.State().Running })
	if err := svc.Request("manual"); err != nil {
		t.Fatalf("second request while one runs: %v", err)
	}
	if err := svc.Request("schedule"); !errors.Is(err, ErrQueued) {
		t.Fatalf("third request: %v, want ErrQueued", err)
	}
	close(f.prober.block)
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { st := svc.State(); return !st.Running && !st.Queued })
	scans, err := f.store.ListScans(context.Background(), 10)
	if err != nil || len(scans) != 2 {
		t.Fatalf("scans %d %v", len(scans), err)
	}
	cancel()
	<-done
	if err := svc.Request("manual"); !errors.Is(err, ErrStopped) {
		t.Errorf("request after stop: %v", err)
	}
}

func TestServiceRetriesWhenTheHubIsDown(t *testing.T) {
	f := newFixture(t, model("a/1", "text-generation", "transformers"))
	f.hub.listErr = errors.New("GET http://127.0.0.1:9/api/models?sort=downloads&expand%5B%5D=sha: dial tcp: connection refused")
	svc := NewService(f.s, Options{Mode: compat.ModeArch}, quiet)
	svc.RetryAfter = 20 * time.Millisecond
	runService(t, svc)

	if err := svc.Request("startup"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return svc.State().HubError != "" })
	if got := svc.State().HubError; strings.Contains(got, "expand") || !strings.Contains(got, "connection refused") {
		t.Errorf("banner text %q: want the cause without the listing query", got)
	}
	f.hub.mu.Lock()
	f.hub.listErr = nil // the Hub is back
	f.hub.mu.Unlock()
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return f.status(t, "a/1") == compat.StatusPass })
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return svc.State().HubError == "" })
	scans, _ := f.store.ListScans(context.Background(), 10)
	if len(scans) < 2 || scans[0].Trigger != "retry" || scans[len(scans)-1].Status != store.ScanFailed {
		t.Errorf("scans: %+v", scans)
	}
}

// TestProbesKeepPopularityOrder: fetchers run concurrently, yet the devices
// get the models in the listing's order, even when the first is slowest to
// download.
func TestProbesKeepPopularityOrder(t *testing.T) {
	f := newFixture(t, model("a/1", "text-generation", "transformers"), model("a/2", "text-generation", "transformers"),
		model("a/3", "text-generation", "transformers"), model("a/4", "text-generation", "transformers"))
	f.hub.delays = map[string]time.Duration{"a/1": 80 * time.Millisecond, "a/2": 40 * time.Millisecond}
	if _, err := f.s.Run(context.Background(), Options{Mode: compat.ModeArch}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	var probes []string
	for _, e := range f.hub.events {
		if id, ok := strings.CutPrefix(e, "probe:"); ok {
			probes = append(probes, id)
		}
	}
	if want := []string{"a/1", "a/2", "a/3", "a/4"}; !slices.Equal(probes, want) {
		t.Errorf("probe order %v, want %v", probes, want)
	}
}

// TestExplicitModeRetests: a result in arch mode does not answer a scan
// that asks for --mode full (nor the other way round); auto takes either.
func TestExplicitModeRetests(t *testing.T) {
	f := newFixture(t, model("a/m", "text-generation", "transformers"))
	ctx := context.Background()
	run := func(mode compat.Mode) (probes int) {
		t.Helper()
		before := f.prober.count("a/m")
		if _, err := f.s.Run(ctx, Options{Mode: mode}, Hooks{}); err != nil {
			t.Fatal(err)
		}
		return f.prober.count("a/m") - before
	}
	if n := run(compat.ModeArch); n != 1 {
		t.Fatalf("first scan probed %d times", n)
	}
	if n := run(compat.ModeAuto); n != 0 {
		t.Errorf("auto retested an arch result %d times", n)
	}
	if n := run(compat.ModeArch); n != 0 {
		t.Errorf("arch retested an arch result %d times", n)
	}
	// The fixture has no weights: full mode ends in a skip (no_safetensors),
	// which is a new outcome, not the old arch pass.
	run(compat.ModeFull)
	if r, err := f.store.LatestResult(ctx, "a/m", compat.TargetCPU); err != nil || deref(r.Reason) != "no_safetensors" {
		t.Errorf("--mode full kept the arch result: %v %v", r.Status, err)
	}
}

// TestPlanReachesTheProbe: auto mode is decided by the plan, per model, and
// the probe gets full or arch (never auto) with the budget and the reason;
// the weights are downloaded in full mode only, and the sizes a listing
// lacks are asked for.
func TestPlanReachesTheProbe(t *testing.T) {
	withWeights := func(id string) hub.ModelInfo {
		m := model(id, "text-generation", "transformers")
		m.Siblings = []hub.Sibling{{Name: "config.json"}, {Name: "model.safetensors"}, {Name: "generation_config.json"}}
		return m
	}
	sized := func(m hub.ModelInfo, bytes int64) hub.ModelInfo {
		m.Siblings = []hub.Sibling{{Name: "config.json", Size: 600}, {Name: "model.safetensors", Size: bytes}, {Name: "generation_config.json", Size: 100}}
		m.FilesMetadata = true
		return m
	}
	small, huge, unsized := withWeights("a/small"), withWeights("a/huge"), withWeights("a/unsized")
	pickled := model("a/pickled", "text-generation", "transformers")
	pickled.Siblings = []hub.Sibling{{Name: "config.json"}, {Name: "pytorch_model.bin"}}
	f := newFixture(t, small, huge, unsized, pickled)
	f.hub.infos = map[string]hub.ModelInfo{"a/small": sized(small, 1<<20), "a/huge": sized(huge, 1<<50)}
	if _, err := f.s.Run(context.Background(), Options{Mode: compat.ModeAuto, Target: compat.TargetCPU}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		mode  compat.Mode
		files []string
		why   string
	}{
		"a/small":   {compat.ModeFull, []string{"config.json", "model.safetensors", "generation_config.json"}, "auto -> full"},
		"a/huge":    {compat.ModeArch, []string{"config.json"}, "auto -> arch: the weights (1048576.00 GiB)"},
		"a/unsized": {compat.ModeArch, []string{"config.json"}, "sizes are unknown"},
		"a/pickled": {compat.ModeArch, []string{"config.json"}, "no safetensors checkpoint"},
	}
	for id, w := range want {
		req, ok := f.prober.reqs[id]
		if !ok {
			t.Errorf("%s: not probed", id)
			continue
		}
		if req.Mode != w.mode || req.MemoryBudgetBytes <= 0 || !strings.Contains(req.PlanNote, w.why) || !strings.Contains(req.PlanNote, "untested on cpu") {
			t.Errorf("%s: probed in mode %q with budget %d and note %q; want %s, a budget, and %q", id, req.Mode, req.MemoryBudgetBytes, req.PlanNote, w.mode, w.why)
		}
		if got := f.hub.files[id]; !slices.Equal(got, w.files) {
			t.Errorf("%s: downloaded %v, want %v", id, got, w.files)
		}
		if r, err := f.store.LatestResult(context.Background(), id, compat.TargetCPU); err != nil || r.Mode == nil || *r.Mode != w.mode {
			t.Errorf("%s: recorded %+v %v, want mode %s", id, r.Mode, err, w.mode)
		}
	}
}

// TestFullModeDeclinedFromTheListing: --mode full on a repo whose listing
// names no safetensors checkpoint is declined before any download.
func TestFullModeDeclinedFromTheListing(t *testing.T) {
	m := model("a/pickled", "text-generation", "transformers")
	m.Siblings = []hub.Sibling{{Name: "config.json"}, {Name: "pytorch_model.bin"}}
	f := newFixture(t, m)
	if _, err := f.s.Run(context.Background(), Options{Mode: compat.ModeFull}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	r, err := f.store.LatestResult(context.Background(), "a/pickled", compat.TargetCPU)
	if err != nil || r.Status != compat.StatusSkipped || deref(r.Reason) != "no_safetensors" || deref(r.Mode) != "full" {
		t.Fatalf("result %+v %v: want skipped no_safetensors in mode full", r, err)
	}
	if len(f.hub.downloads) != 0 || f.prober.count("a/pickled") != 0 {
		t.Errorf("downloads %v, probes %d: the listing already said no", f.hub.downloads, f.prober.count("a/pickled"))
	}
}

// TestHooksOfScannerAndScan: the Scanner's hooks (set at construction)
// and the hooks of one Run both see the scan, the Scanner's first.
func TestHooksOfScannerAndScan(t *testing.T) {
	f := newFixture(t, model("a/1", "text-generation", "transformers"))
	var seen []string
	f.s.Hooks = Hooks{
		ProbeDone: func(r compat.Result, _ time.Duration) { seen = append(seen, "scanner:probe:"+string(r.Status)) },
		ScanDone:  func(s store.Scan) { seen = append(seen, "scanner:done:"+string(s.Status)) },
	}
	_, err := f.s.Run(context.Background(), Options{Mode: compat.ModeArch}, Hooks{
		Progress: func(p Progress) { seen = append(seen, "run:progress:"+p.ModelID) },
		ScanDone: func(s store.Scan) { seen = append(seen, "run:done:"+string(s.Status)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"scanner:probe:pass", "run:progress:a/1", "scanner:done:done", "run:done:done"}
	if !slices.Equal(seen, want) {
		t.Errorf("hooks saw %v, want %v", seen, want)
	}
}
