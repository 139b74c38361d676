package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/dispatch"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
	"github.com/google-pytorch/torchtpu-scanner/web/work"
)

// fakeWork records the calls that reach it and answers err when set.
type fakeWork struct {
	mu    sync.Mutex
	calls []string
	err   error
	views []fleet.WorkerView
}

func (f *fakeWork) call(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
	return f.err
}

func (f *fakeWork) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeWork) Register(_ context.Context, w fleet.Worker) (fleet.RegisterResponse, error) {
	return fleet.RegisterResponse{LeaseTTLS: 120, HeartbeatS: 30, MaxWaitS: 30}, f.call("register " + w.ID)
}
func (f *fakeWork) Lease(_ context.Context, r fleet.LeaseRequest) (fleet.LeaseResponse, error) {
	return fleet.LeaseResponse{Leases: []fleet.Lease{{ID: "L1", JobID: 7, Job: fleet.Job{ModelID: "org/m"}}}}, f.call(fmt.Sprintf("lease %s %d", r.Worker.ID, r.Max))
}
func (f *fakeWork) Heartbeat(_ context.Context, r fleet.HeartbeatRequest) (fleet.HeartbeatResponse, error) {
	return fleet.HeartbeatResponse{Renewed: r.Leases, Lost: []string{}}, f.call("heartbeat " + r.WorkerID)
}
func (f *fakeWork) Result(_ context.Context, r fleet.ResultRequest) error {
	return f.call("result " + r.LeaseID + " " + string(r.Result.Status))
}
func (f *fakeWork) Release(_ context.Context, r fleet.ReleaseRequest) error {
	return f.call("release " + r.LeaseID)
}
func (f *fakeWork) Leave(_ context.Context, r fleet.LeaveRequest) error {
	return f.call("leave " + r.WorkerID)
}
func (f *fakeWork) Workers(context.Context) ([]fleet.WorkerView, error) {
	return f.views, f.call("workers")
}

const testWorkerToken = "wt-secret-of-the-fleet"

func (ts *testServer) post(t *testing.T, target, token string, body []byte) response {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := ts.app.Test(req, 10_000)
	if err != nil {
		t.Fatalf("POST %s: %v", target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWorkRoutesNeedTheirToken(t *testing.T) {
	fw := &fakeWork{}
	ts := newTestServer(t, 0, 0, Config{Work: fw, WorkerToken: testWorkerToken, AdminToken: "admin-token"})
	body := mustJSON(t, fleet.LeaseRequest{Worker: fleet.Worker{ID: "w"}, Max: 1})
	for _, tc := range []struct {
		token string
		want  int
	}{
		{"", http.StatusUnauthorized},
		{"wrong", http.StatusForbidden},
		{"admin-token", http.StatusForbidden}, // the admin token is not the workers'
		{testWorkerToken + "x", http.StatusForbidden},
	} {
		for _, path := range []string{fleet.PathRegister, fleet.PathLease, fleet.PathHeartbeat, fleet.PathResult, fleet.PathRelease, fleet.PathLeave} {
			if r := ts.post(t, path, tc.token, body); r.status != tc.want || !strings.Contains(r.body, `"error"`) {
				t.Errorf("%s with token %q: %d %s, want %d", path, tc.token, r.status, r.body, tc.want)
			}
		}
	}
	if c := fw.called(); len(c) != 0 {
		t.Errorf("refused requests reached the dispatcher: %v", c)
	}
	if r := ts.post(t, fleet.PathLease, testWorkerToken, body); r.status != 200 {
		t.Errorf("the right token: %d %s", r.status, r.body)
	}
}

func TestWorkRoutesAreOffWithoutAToken(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no token":      {Work: &fakeWork{}},
		"no dispatcher": {WorkerToken: testWorkerToken},
	} {
		ts := newTestServer(t, 0, 0, cfg)
		if r := ts.post(t, fleet.PathLease, testWorkerToken, []byte(`{}`)); r.status != http.StatusNotFound {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
}

func TestWorkRoutesPassThroughAndMapErrors(t *testing.T) {
	fw := &fakeWork{}
	ts := newTestServer(t, 0, 0, Config{Work: fw, WorkerToken: testWorkerToken})
	res := fleet.ResultRequest{LeaseID: "L1", WorkerID: "w", ModelID: "org/m", Result: compat.Result{Status: compat.StatusPass}}
	r := ts.post(t, fleet.PathLease, testWorkerToken, mustJSON(t, fleet.LeaseRequest{Worker: fleet.Worker{ID: "w"}, Max: 2}))
	if lr := decode[fleet.LeaseResponse](t, r); r.status != 200 || len(lr.Leases) != 1 || lr.Leases[0].ID != "L1" ||
		r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("lease: %d %s", r.status, r.body)
	}
	if r := ts.post(t, fleet.PathResult, testWorkerToken, mustJSON(t, res)); r.status != 200 {
		t.Errorf("result: %d %s", r.status, r.body)
	}
	if r := ts.post(t, fleet.PathLeave, testWorkerToken, mustJSON(t, fleet.LeaveRequest{WorkerID: "w"})); r.status != 200 {
		t.Errorf("leave: %d %s", r.status, r.body)
	}
	want := []string{"lease w 2", "result L1 pass", "leave w"}
	if c := fw.called(); strings.Join(c, ",") != strings.Join(want, ",") {
		t.Errorf("calls %v, want %v", c, want)
	}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("store: %w", fleet.ErrLeaseNotCurrent), http.StatusConflict},
		{fmt.Errorf("store: %w: other model", fleet.ErrBadResult), http.StatusBadRequest},
		{fmt.Errorf("%w: devices", dispatch.ErrBadRequest), http.StatusBadRequest},
		{dispatch.ErrClosed, http.StatusServiceUnavailable},
		{fmt.Errorf("store: %w", store.ErrGone), http.StatusServiceUnavailable}, // workers retry until a restart
		{fmt.Errorf("store: worker %q: %w", "w", store.ErrNotFound), http.StatusNotFound},
		{fmt.Errorf("disk I/O error"), http.StatusInternalServerError},
	} {
		fw.err = tc.err
		if r := ts.post(t, fleet.PathResult, testWorkerToken, mustJSON(t, res)); r.status != tc.want {
			t.Errorf("%v: %d %s, want %d", tc.err, r.status, r.body, tc.want)
		}
	}
	fw.err = nil
	n := len(fw.called())
	if r := ts.post(t, fleet.PathResult, testWorkerToken, []byte(`{"lease_id": `)); r.status != http.StatusBadRequest {
		t.Errorf("garbage: %d", r.status)
	}
	big := mustJSON(t, fleet.ResultRequest{LeaseID: "L1", ModelID: "org/m", Result: compat.Result{LogTail: strings.Repeat("x", fleet.MaxBodyBytes)}})
	if r := ts.post(t, fleet.PathResult, testWorkerToken, big); r.status != http.StatusBadRequest {
		t.Errorf("a result over 1 MiB: %d %.200s", r.status, r.body)
	}
	if len(fw.called()) != n {
		t.Errorf("bad bodies reached the dispatcher: %v", fw.called()[n:])
	}
	// A body of exactly MaxBodyBytes is within the limit.
	edge := res
	edge.Result.LogTail = "x"
	edge.Result.LogTail = strings.Repeat("x", 1+fleet.MaxBodyBytes-len(mustJSON(t, edge)))
	if body := mustJSON(t, edge); len(body) != fleet.MaxBodyBytes {
		t.Fatalf("edge body of %d bytes", len(body))
	} else if r := ts.post(t, fleet.PathResult, testWorkerToken, body); r.status != 200 {
		t.Errorf("a result of exactly %d bytes: %d %.200s", fleet.MaxBodyBytes, r.status, r.body)
	}
}

func TestWorkRoutesAreNotRateLimitedLikeTheAPI(t *testing.T) {
	fw := &fakeWork{}
	ts := newTestServer(t, 0, 0, Config{Work: fw, WorkerToken: testWorkerToken, APIRate: 0.001, APIBurst: 2})
	hb := mustJSON(t, fleet.HeartbeatRequest{WorkerID: "w"})
	for i := range 20 {
		if r := ts.post(t, fleet.PathHeartbeat, testWorkerToken, hb); r.status != 200 {
			t.Fatalf("heartbeat %d: %d", i, r.status)
		}
	}
	limited := false
	for range 5 {
		if ts.get(t, "/api/v1/summary").status == http.StatusTooManyRequests {
			limited = true
		}
	}
	if !limited {
		t.Error("the API limit did not apply (the test's premise)")
	}
}

func TestWorkersListing(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	if r := ts.get(t, "/api/v1/workers"); r.status != 200 || !strings.Contains(r.body, `"dispatch":"local"`) || !strings.Contains(r.body, `"workers":[]`) {
		t.Errorf("without workers: %d %s", r.status, r.body)
	}
	fw := &fakeWork{views: []fleet.WorkerView{{ID: "tpu-0-1a2b3c4d", Host: "tpu-0", Target: "tpu", Device: "TPU v6e", Devices: 8,
		LastSeen: time.Now().UTC(), Live: true, Busy: 3, JobsDone: 12, Planned: true},
		{ID: "tpu-1-5e6f7a8b", Host: "tpu-1", Target: "tpu", Devices: 8, Serving: &fleet.WorkerServing{VLLMTorchTPU: "0.29.0"}}}}
	ts = newTestServer(t, 0, 0, Config{Work: fw, WorkerToken: testWorkerToken})
	r := ts.get(t, "/api/v1/workers")
	got := decode[work.List](t, r)
	if r.status != 200 || got.Dispatch != "workers" || len(got.Workers) != 2 || got.Workers[0].Busy != 3 || got.Workers[0].JobsDone != 12 {
		t.Errorf("%d %s", r.status, r.body)
	}
	// whether each runs serving probes (--vllm-python), and with which vLLM-TorchTPU: null when not
	if !strings.Contains(r.body, `"planned":true,"serving":null}`) || !strings.Contains(r.body, `"serving":{"vllm_torchtpu":"0.29.0"}`) {
		t.Errorf("the listing does not say which workers serve: %s", r.body)
	}
	if strings.Contains(r.body, testWorkerToken) {
		t.Error("the listing shows the worker token")
	}
}

func TestTheNoticeCountsBusyWorkers(t *testing.T) {
	ts := newTestServer(t, 3, 3, Config{})
	id, err := ts.db.StartScan(context.Background(), store.Scan{Trigger: "test", Target: "tpu"})
	if err != nil {
		t.Fatal(err)
	}
	ts.scans.state = ScanState{Running: true, ScanID: id, Workers: 4, WorkersBusy: 3}
	if r := ts.get(t, "/"); !strings.Contains(r.body, "3 of 4 workers busy") {
		t.Errorf("notice: %s", between(r.body, `class="notice"`, "</p>"))
	}
	ts.scans.state = ScanState{Running: true, ScanID: id}
	if r := ts.get(t, "/"); strings.Contains(r.body, "workers busy") {
		t.Error("a local scan's notice talks about workers")
	}
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return "(none)"
	}
	s = s[i:]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}

func TestTheModelPageNamesTheWorker(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	ts.upsert(t, store.ModelUpsert{ID: "org/fleet", SHA: "abc"})
	ts.record(t, "org/fleet", compat.Result{Target: "tpu", Status: compat.StatusPass, Revision: "abc", TestedAt: time.Now().UTC(),
		Worker: "scanner-worker-7d9f-<b>x</b>"})
	r := ts.get(t, "/models/org/fleet")
	if !strings.Contains(r.body, "<dt>Worker</dt><dd>scanner-worker-7d9f-&lt;b&gt;x&lt;/b&gt;</dd>") {
		t.Errorf("worker not shown (escaped): %s", between(r.body, "<dt>Duration", "Runtime"))
	}
	if a := ts.get(t, "/api/v1/models/org/fleet"); !strings.Contains(a.body, `"worker":"scanner-worker-7d9f-\u003cb\u003ex\u003c/b\u003e"`) {
		t.Errorf("API: %.400s", a.body)
	}
}

// The worker protocol over HTTP, with the real dispatcher and queue behind
// it: a missing or wrong token changes nothing; a result naming another
// model, one that is not contract JSON and one over 1 MiB get 400 and the
// lease stays; the right result is recorded once, and the same post again
// (a late result) gets 409 and records nothing.
func TestWorkRoutesOverTheRealQueue(t *testing.T) {
	ctx := context.Background()
	db := storetest.MustOpen(t)
	d := dispatch.New(db, dispatch.Config{LeaseTTL: time.Minute, Logger: discard})
	t.Cleanup(d.Close)
	ts := newTestServer(t, 0, 0, Config{Store: db, Work: d, WorkerToken: testWorkerToken})
	rt := compat.Runtime{Torch: "2.15.0", Transformers: "5.23.0", Harness: "h", Device: "cpu", DeviceCount: 1}
	w := fleet.Worker{ID: "w-1", Host: "host-1", Target: compat.TargetCPU, Runtime: rt, Devices: 1, MemoryBytes: 8 << 30}
	if err := db.UpsertModels(ctx, []store.ModelUpsert{{ID: "org/m", SHA: "sha"}, {ID: "org/other", SHA: "sha"}}); err != nil {
		t.Fatal(err)
	}
	scanID, err := db.StartScan(ctx, store.Scan{Trigger: "test", Target: "cpu", Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	job := fleet.Job{ModelID: "org/m", Revision: "sha", Target: compat.TargetCPU, Mode: compat.ModeArch, Files: []string{"config.json"}}
	if err := d.Enqueue(ctx, scanID, []store.NewJob{{Rank: 0, RuntimeKey: rt.RetestKey(), Job: job}}); err != nil {
		t.Fatal(err)
	}
	leaseReq := mustJSON(t, fleet.LeaseRequest{Worker: w, Max: 1})
	for token, want := range map[string]int{"": http.StatusUnauthorized, "wrong": http.StatusForbidden} {
		if r := ts.post(t, fleet.PathLease, token, leaseReq); r.status != want {
			t.Errorf("lease with token %q: %d %s, want %d", token, r.status, r.body, want)
		}
	}
	if c, _ := db.ScanJobs(ctx, scanID); c.Queued != 1 || c.Leased != 0 {
		t.Fatalf("refused leases changed the queue: %+v", c)
	}
	r := ts.post(t, fleet.PathLease, testWorkerToken, leaseReq)
	lr := decode[fleet.LeaseResponse](t, r)
	if r.status != 200 || len(lr.Leases) != 1 || lr.Leases[0].Job.ModelID != "org/m" {
		t.Fatalf("lease: %d %s", r.status, r.body)
	}
	l := lr.Leases[0]
	res := fleet.ResultRequest{LeaseID: l.ID, WorkerID: w.ID, ModelID: "org/m", Result: compat.Result{Target: compat.TargetCPU,
		Status: compat.StatusPass, Revision: "sha", TestedAt: time.Now().UTC(), Runtime: rt, Mode: compat.Ptr(compat.ModeArch)}}
	foreign := res
	foreign.ModelID = "org/other"
	big := res
	big.Result.LogTail = strings.Repeat("x", fleet.MaxBodyBytes)
	for name, body := range map[string][]byte{
		"another model":  mustJSON(t, foreign),
		"not JSON":       []byte(`{"lease_id": "` + l.ID + `", "result": {"status": 7}}`),
		"over 1 MiB":     mustJSON(t, big),
		"unknown status": bytes.Replace(mustJSON(t, res), []byte(`"status":"pass"`), []byte(`"status":"great"`), 1),
	} {
		if r := ts.post(t, fleet.PathResult, testWorkerToken, body); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %.300s, want 400", name, r.status, r.body)
		}
	}
	for token, want := range map[string]int{"": http.StatusUnauthorized, "wrong": http.StatusForbidden} {
		if r := ts.post(t, fleet.PathResult, token, mustJSON(t, res)); r.status != want {
			t.Errorf("result with token %q: %d, want %d", token, r.status, want)
		}
	}
	if c, _ := db.ScanJobs(ctx, scanID); c.Leased != 1 || c.Done != 0 {
		t.Errorf("after refused results: %+v; the lease stays", c)
	}
	if h, _ := db.History(ctx, "org/m", "", 10); len(h) != 0 {
		t.Errorf("refused results were recorded: %+v", h)
	}
	if r := ts.post(t, fleet.PathResult, testWorkerToken, mustJSON(t, res)); r.status != 200 {
		t.Fatalf("the result: %d %s", r.status, r.body)
	}
	if r := ts.post(t, fleet.PathResult, testWorkerToken, mustJSON(t, res)); r.status != http.StatusConflict {
		t.Errorf("the same result again: %d %s, want 409", r.status, r.body)
	}
	h, err := db.History(ctx, "org/m", "", 10)
	if err != nil || len(h) != 1 || h[0].Worker != "host-1" || h[0].Status != compat.StatusPass {
		t.Errorf("history %+v (%v): want exactly one pass by host-1", h, err)
	}
}

// TestAStalledScanSaysSoOnTheAPI: /api/v1/scans/{id} says since when no
// live worker can take the scan's jobs, and what the fleet does about it.
func TestAStalledScanSaysSoOnTheAPI(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{})
	id, err := ts.db.StartScan(context.Background(), store.Scan{Trigger: "manual", Target: "tpu", StartedAt: testTime})
	if err != nil {
		t.Fatal(err)
	}
	since := testTime.Add(time.Minute)
	if err := ts.db.SetScanStall(context.Background(), id, &since, "no live worker runs tpu runtime 2.15.0|0.2.0|5.23.0|h"); err != nil {
		t.Fatal(err)
	}
	r := ts.get(t, fmt.Sprintf("/api/v1/scans/%d", id))
	body := decode[map[string]any](t, r)
	if body["stalled_since"] != since.Format(time.RFC3339Nano) || !strings.Contains(fmt.Sprint(body["fleet_note"]), "no live worker runs tpu") {
		t.Errorf("stalled scan: %s", r.body)
	}
	if err := ts.db.SetScanStall(context.Background(), id, nil, ""); err != nil {
		t.Fatal(err)
	}
	r = ts.get(t, fmt.Sprintf("/api/v1/scans/%d", id))
	if strings.Contains(r.body, "stalled_since") || strings.Contains(r.body, "fleet_note") {
		t.Errorf("a scan no longer stalled: %s", r.body)
	}
}
