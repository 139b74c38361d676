package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

const (
	fleetAdminToken  = "fleet-test-admin-token"
	fleetWorkerToken = "fleet-test-worker-token"
)

// syncBuffer is a process's output, safe to read while it is written.
type syncBuffer struct{ proctest.Buffer }

// logLines are the JSON log lines of a process whose msg is msg.
func (s *syncBuffer) logLines(msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// fleetProcess starts the scanner (this test binary) with extra
// environment variables.
func fleetProcess(t testing.TB, env []string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	return fleetProcessIn(t, nil, env, args...)
}

// fleetProcessIn is fleetProcess through the command prefix wrap (which
// runs its last argument with the rest, as unshare … sh -c 'exec "$0" "$@"'
// does); nil runs the scanner itself.
func fleetProcessIn(t testing.TB, wrap []string, env []string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	if len(wrap) > 0 {
		cmd = exec.Command(wrap[0], append(append(wrap[1:len(wrap):len(wrap)], os.Args[0]), args...)...)
	}
	cmd.Env = append(append(os.Environ(), "SCANNER_TEST_MAIN=1", "HF_TOKEN="), env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, out
}

// fleetServer starts `serve --dispatch workers` on a free loopback port and
// returns its base URL.
func fleetServer(t testing.TB, h *hubtest.Hub, db, cache string, extra ...string) (*exec.Cmd, *syncBuffer, string) {
	t.Helper()
	return fleetServerIn(t, nil, h, db, cache, extra...)
}

// fleetServerIn is fleetServer through the command prefix wrap (see
// fleetProcessIn).
func fleetServerIn(t testing.TB, wrap []string, h *hubtest.Hub, db, cache string, extra ...string) (*exec.Cmd, *syncBuffer, string) {
	t.Helper()
	args := append([]string{"serve", "--dispatch", "workers", "--no-schedule", "--addr", "127.0.0.1:0",
		"--db", db, "--hub-endpoint", h.URL(), "--cache-dir", cache, "--target", "cpu", "--mode", "arch", "--rate-limit", "0",
		"--log-format", "json"}, extra...)
	cmd, out := fleetProcessIn(t, wrap, []string{"SCANNER_ADMIN_TOKEN=" + fleetAdminToken, "SCANNER_WORKER_TOKEN=" + fleetWorkerToken}, args...)
	return cmd, out, servingAt(t, out)
}

// servingAt waits for a serve process's "serving" log line (JSON) and
// returns its base URL.
func servingAt(t testing.TB, out *syncBuffer) string {
	t.Helper()
	var base string
	waitFleet(t, 30*time.Second, "the server to listen", out, func() bool {
		if l := out.logLines("serving"); len(l) > 0 {
			base = "http://" + fmt.Sprint(l[0]["addr"])
			return true
		}
		return false
	})
	return base
}

// fleetWorker starts `scanner worker` and returns it with its worker id.
func fleetWorker(t testing.TB, h *hubtest.Hub, server, python, harness, cache string, extra ...string) (*exec.Cmd, *syncBuffer, string) {
	t.Helper()
	args := append([]string{"worker", "--server", server, "--hub-endpoint", h.URL(), "--target", "cpu", "--devices", "1", "--python", python,
		"--cache-dir", cache, "--timeout", "5m", "--probe-grace", "2s", "--log-format", "json"}, extra...)
	if harness != "" {
		args = append(args, "--harness", harness)
	}
	cmd, out := fleetProcess(t, []string{"SCANNER_WORKER_TOKEN=" + fleetWorkerToken}, args...)
	var id string
	waitFleet(t, 120*time.Second, "the worker to register", out, func() bool {
		if l := out.logLines("registered"); len(l) > 0 {
			id = fmt.Sprint(l[0]["worker_id"])
			return true
		}
		return false
	})
	return cmd, out, id
}

func waitFleet(t testing.TB, limit time.Duration, what string, out *syncBuffer, cond func() bool) {
	t.Helper()
	testenv.EventuallyShowing(t, what, limit, cond, func() string { return lastLines(out.String(), 40) })
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

func apiGet[T any](t testing.TB, url string) T {
	t.Helper()
	var v T
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(b, &v) != nil {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return v
}

type workersBody struct {
	Workers []fleet.WorkerView `json:"workers"`
}

type scansBody struct {
	Scans []struct {
		ID      int64  `json:"id"`
		Status  string `json:"status"`
		Planned int    `json:"planned"`
		Done    int    `json:"done"`
		Probed  int    `json:"probed"`
	} `json:"scans"`
}

// requestScan starts a scan through the API, as an operator would.
func requestScan(t testing.TB, base string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/scans", nil)
	req.Header.Set("Authorization", "Bearer "+fleetAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /api/v1/scans: %d", resp.StatusCode)
	}
}

// scanDone waits for the newest scan to finish and returns it.
func scanDone(t testing.TB, base string, limit time.Duration, out *syncBuffer) scansBody {
	t.Helper()
	var sb scansBody
	waitFleet(t, limit, "the scan to finish", out, func() bool {
		sb = apiGet[scansBody](t, base+"/api/v1/scans?limit=1")
		return len(sb.Scans) == 1 && sb.Scans[0].Status != "running"
	})
	return sb
}

// TestFleetSurvivesAKilledWorker runs one server with --dispatch workers and
// three real `scanner worker` processes on loopback, scans the fake Hub with
// the real harness on CPU, and kills one worker with SIGKILL mid-probe: its
// lease expires and another worker probes the model; every model ends with
// exactly one result, and the database is intact.
func TestFleetSurvivesAKilledWorker(t *testing.T) {
	py := needPython(t)
	var repos []hubtest.Repo
	for i, fam := range []string{"llama", "gpt2", "bert", "t5", "llama"} {
		task := map[string]string{"llama": "text-generation", "gpt2": "text-generation", "bert": "fill-mask", "t5": "text2text-generation"}[fam]
		repos = append(repos, configRepo(fmt.Sprintf("fleet/%s-%d", fam, i), fam, task, int64(1000-i)))
	}
	h := hubtest.New(t, repos...)
	dir := t.TempDir()
	db := filepath.Join(dir, "scanner.db")
	server, serverOut, base := fleetServer(t, h, db, filepath.Join(dir, "server-hub"), "--lease-ttl", "3s", "--limit", "5")

	type proc struct {
		cmd *exec.Cmd
		out *syncBuffer
	}
	workers := map[string]proc{}
	for i := range 3 {
		cmd, out, id := fleetWorker(t, h, base, py, "", filepath.Join(dir, fmt.Sprintf("worker-%d-hub", i)))
		workers[id] = proc{cmd, out}
	}
	if live := apiGet[workersBody](t, base+"/api/v1/workers").Workers; len(live) != 3 {
		t.Fatalf("%d workers listed, want 3", len(live))
	}
	requestScan(t, base)

	// Kill the first worker seen holding a lease, once its harness runs.
	var victim string
	waitFleet(t, 120*time.Second, "a worker to lease a job", serverOut, func() bool {
		for _, w := range apiGet[workersBody](t, base+"/api/v1/workers").Workers {
			if w.Busy > 0 {
				victim = w.ID
				return true
			}
		}
		return false
	})
	killed := workers[victim]
	waitFleet(t, 60*time.Second, "the victim's probe to start", killed.out, func() bool {
		return len(killed.out.logLines("job leased")) > 0
	})
	time.Sleep(time.Second) // mid-probe: the harness is importing torch or running
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.cmd.Wait()
	lost := fmt.Sprint(killed.out.logLines("job leased")[0]["model"])

	sb := scanDone(t, base, 10*time.Minute, serverOut)
	if s := sb.Scans[0]; s.Status != "done" || s.Planned != 5 || s.Done != 5 || s.Probed != 5 {
		t.Errorf("scan %+v", s)
	}
	// The killed lease was leased again, to another worker.
	relet := false
	for _, l := range serverOut.logLines("job leased") {
		if l["model"] == lost && fmt.Sprint(l["attempt"]) == "2" && l["worker_id"] != victim {
			relet = true
		}
	}
	if !relet {
		t.Errorf("the killed worker's job (%s) was not leased again:\n%s", lost, lastLines(serverOut.String(), 60))
	}
	// The survivors and the server stop gracefully.
	for id, w := range workers {
		if id == victim {
			continue
		}
		w.cmd.Process.Signal(syscall.SIGTERM)
		if err := w.cmd.Wait(); err != nil {
			t.Errorf("worker %s after SIGTERM: %v\n%s", id, err, lastLines(w.out.String(), 20))
		}
	}
	server.Process.Signal(syscall.SIGTERM)
	if err := server.Wait(); err != nil {
		t.Errorf("server after SIGTERM: %v", err)
	}

	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, r := range repos {
		hist, err := st.History(context.Background(), r.ID, "", 10)
		if err != nil || len(hist) != 1 {
			t.Errorf("%s: %d results (%v), want exactly one", r.ID, len(hist), err)
			continue
		}
		if res := hist[0]; res.Status != "pass" || res.Worker == "" || res.Target != "cpu" {
			t.Errorf("%s: %s on %q by worker %q: %s", r.ID, res.Status, res.Target, res.Worker, str(res.Message))
		}
	}
	if ok, err := st.IntegrityCheck(context.Background()); err != nil || ok != "ok" {
		t.Errorf("integrity: %q %v", ok, err)
	}
}

// TestFleetSurvivesAServerRestart kills the server with SIGKILL mid-scan
// and starts it again on the same address: the queued and leased jobs
// survive in SQLite, the workers reconnect, and the same scan completes
// with exactly one result per model.
func TestFleetSurvivesAServerRestart(t *testing.T) {
	k := killServerMidScan(t, "restart", standinHarness(t))
	_, secondOut, base2 := fleetServer(t, k.hub, k.db, k.serverCache, k.args...)
	sb := scanDone(t, base2, 3*time.Minute, secondOut)
	if s := sb.Scans[0]; s.Status != "done" || s.Planned != 8 || s.Done != 8 || s.Probed != 8 {
		t.Errorf("the resumed scan: %+v\n%s", s, lastLines(secondOut.String(), 30))
	}
	if len(secondOut.logLines("resuming a scan left to its queue")) != 1 {
		t.Errorf("the restarted server did not resume the scan:\n%s", lastLines(secondOut.String(), 30))
	}
	stopGracefully(t, "worker", k.workers...)
	st, err := store.Open(context.Background(), k.db)
	if err != nil {
		t.Fatal(err)
	}
	scans, err := st.ListScans(context.Background(), 10)
	st.Close()
	if err != nil || len(scans) != 1 {
		t.Errorf("scans %+v (%v): want the one scan, resumed", scans, err)
	}
	everyModelOnce(t, k.db, k.repos)
}

// killed is a fleet whose server was killed mid-scan.
type killed struct {
	hub             *hubtest.Hub
	repos           []hubtest.Repo
	db, serverCache string
	args            []string // the server's flags: its address is fixed, to start the next on it
	workers         []*exec.Cmd
	at              time.Time // when the server was killed
}

// killServerMidScan starts a server for workers on a fixed loopback
// address and two workers of harness, scans 8 models of 0.7 s, and kills
// the server with SIGKILL after two results.
func killServerMidScan(t *testing.T, prefix, harness string) killed {
	t.Helper()
	k := killed{repos: sleepRepos(prefix, 700, 8)}
	k.hub = hubtest.New(t, k.repos...)
	dir := t.TempDir()
	k.db, k.serverCache = filepath.Join(dir, "scanner.db"), filepath.Join(dir, "server-hub")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	k.args = []string{"--addr", addr, "--lease-ttl", "5s", "--limit", "8"}
	first, firstOut, base := fleetServer(t, k.hub, k.db, k.serverCache, k.args...)
	for i := range 2 {
		cmd, _, _ := fleetWorker(t, k.hub, base, "python3", harness, filepath.Join(dir, fmt.Sprintf("w%d", i)))
		k.workers = append(k.workers, cmd)
	}
	requestScan(t, base)
	waitFleet(t, 60*time.Second, "two results", firstOut, func() bool { return len(firstOut.logLines("result recorded")) >= 2 })
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	k.at = time.Now()
	return k
}

// stopGracefully sends SIGTERM to each process and checks it exits 0.
func stopGracefully(t *testing.T, what string, cmds ...*exec.Cmd) {
	t.Helper()
	for _, c := range cmds {
		c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("%s after SIGTERM: %v", what, err)
		}
	}
}
