package web

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/metrics"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// fakeScans is a ScanControl for tests.
type fakeScans struct {
	mu       sync.Mutex
	state    ScanState
	requests []string
}

func (f *fakeScans) RequestScan(trigger string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state.Queued {
		return ErrScanQueued
	}
	f.state.Queued = true
	f.requests = append(f.requests, trigger)
	return nil
}

func (f *fakeScans) State() ScanState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

// testServer is a server over a real SQLite store in t.TempDir().
type testServer struct {
	*Server
	db    *store.SQLite
	scans *fakeScans
	ids   []string
}

// useStore makes the server read st (a fake over its database), in every
// audience: the server's store and the shared reader's.
func (ts *testServer) useStore(st Store) {
	ts.Server.store = st
	ts.Server.data.Store = st
}

// newTestServer opens a store, seeds nModels models and nResults results
// (storetest.Seed), and builds a server; cfg's zero fields get test values.
func newTestServer(t *testing.T, nModels, nResults int, cfg Config) *testServer {
	t.Helper()
	db := storetest.MustOpen(t)
	ts := &testServer{db: db}
	if nModels > 0 {
		ts.ids = storetest.MustSeed(t, db, nModels, nResults)
	}
	if cfg.Store == nil {
		cfg.Store = db
	}
	if cfg.Scans == nil {
		ts.scans = &fakeScans{}
		cfg.Scans = ts.scans
	}
	if cfg.Logger == nil {
		cfg.Logger = discard
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.NewRegistry()
	}
	if cfg.APIRate == 0 {
		cfg.APIRate = -1 // tests make many requests; the limiter has its own test
	}
	cfg.Version = "test"
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = s
	return ts
}

// response is what a test request got back.
type response struct {
	status int
	header http.Header
	body   string
}

// do sends a request through the fiber app (no network).
func (ts *testServer) do(t *testing.T, method, target string, header map[string]string) response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if h, ok := header["Host"]; ok {
		req.Host = h
	}
	resp, err := ts.app.Test(req, 10_000)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func (ts *testServer) get(t *testing.T, target string) response {
	t.Helper()
	return ts.do(t, http.MethodGet, target, nil)
}

// decode unmarshals a JSON body, failing the test on error.
func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatalf("body is not JSON (%v): %.300s", err, r.body)
	}
	return v
}

// record stores one result for a model, failing the test on error.
func (ts *testServer) record(t *testing.T, id string, r compat.Result) store.RecordOutcome {
	t.Helper()
	out, err := ts.db.RecordResult(context.Background(), id, r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// upsert adds models, failing the test on error.
func (ts *testServer) upsert(t *testing.T, ms ...store.ModelUpsert) {
	t.Helper()
	if err := ts.db.UpsertModels(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
}

var testTime = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func passOn(target compat.Target, at time.Time, tps float64) compat.Result {
	return compat.Result{
		Target: target, Status: compat.StatusPass, Stage: compat.Ptr(compat.StageGenerate), Mode: compat.Ptr(compat.ModeFull),
		Revision: strings.Repeat("a", 40), TestedAt: at, DurationS: 12.5,
		Runtime: compat.Runtime{Torch: "2.9.0", TorchTPU: "0.2.0", Transformers: "4.57.1", Harness: "1", Device: "TPU v6e", DeviceCount: 1},
		Metrics: compat.Metrics{TokensPerS: compat.Ptr(tps), LoadS: compat.Ptr(1.5)},
		Repro:   "scanner probe x --target " + string(target),
	}
}

func failOn(target compat.Target, at time.Time, op string) compat.Result {
	sig := "unsupported_op:" + op
	return compat.Result{
		Target: target, Status: compat.StatusFail, Stage: compat.Ptr(compat.StageForward),
		FailureClass: compat.Ptr(compat.ClassUnsupportedOp), Op: compat.Ptr(op), Signature: &sig,
		Message: compat.Ptr("NotImplementedError: " + op), Mode: compat.Ptr(compat.ModeFull),
		Revision: strings.Repeat("b", 40), TestedAt: at,
		Runtime: compat.Runtime{Torch: "2.9.0", TorchTPU: "0.2.0"},
		LogTail: "Traceback\n  " + op + "\n",
	}
}

func TestNewValidatesConfig(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without a store should fail")
	}
	db := storetest.MustOpen(t)
	for _, cfg := range []Config{{Store: db, HubEndpoint: "ftp://x"}, {Store: db, PublicURL: "example.org"}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) should fail", cfg)
		}
	}
	s, err := New(Config{Store: db, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	if s.hubEndpoint != DefaultHubEndpoint {
		t.Errorf("hub endpoint default = %q", s.hubEndpoint)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown without Listen: %v", err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

func TestListenAndShutdown(t *testing.T) {
	ts := newTestServer(t, 3, 3, Config{})
	ln, err := netListen(t)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ts.Listen(ln) }()
	url := "http://" + ln.Addr().String()
	var resp *http.Response
	for i := 0; i < 50; i++ {
		if resp, err = http.Get(url + "/healthz"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz over the network: %d", resp.StatusCode)
	}
	// A request line longer than the read buffer is refused by the HTTP
	// layer before routing (FuzzRequest stays below it): 431, and the
	// server goes on serving.
	// The request goes out in one write on a connection of its own and the
	// answer is read after it: the server closes with the rest of the line
	// unread, and Go's client, still writing, could report that reset
	// instead of the answer (CI saw it once under -race).
	if code := rawStatus(t, ln.Addr().String(), "GET /models/"+strings.Repeat("%E1", 4000)+" HTTP/1.1\r\nHost: test\r\n\r\n"); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("over-long request line: %d, want 431", code)
	}
	if resp, err = http.Get(url + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz after an over-long request: %v %v", resp, err)
	}
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Listen returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Listen did not return after Shutdown")
	}
}

// rawStatus writes request, as it is, in one write on a connection of its
// own, and returns the status of the answer, read after it. For requests
// the server refuses before reading them whole (an over-long line, a body
// over the limit): Go's client, still writing, could report the server's
// reset instead of its answer. A server that waits for more than was
// sent fails the test after 10 s.
func rawStatus(t *testing.T, addr, request string) int {
	t.Helper()
	return rawResponse(t, addr, request).status
}

// rawResponse writes request as it is on a new connection to addr and
// reads the answer.
func rawResponse(t *testing.T, addr, request string) response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

func netListen(t *testing.T) (net.Listener, error) {
	t.Helper()
	return net.Listen("tcp", "127.0.0.1:0")
}
