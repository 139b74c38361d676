package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// TestMain lets the test binary act as the scanner itself, so that process
// tests can start, kill -9 and SIGTERM a real scanner process.
func TestMain(m *testing.M) {
	if os.Getenv("SCANNER_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// scannerProcess starts the scanner as a child process.
func scannerProcess(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SCANNER_TEST_MAIN=1", "HF_TOKEN=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, &out
}

func standinArgs(t *testing.T, h *hubtest.Hub, db, cache string) []string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.Missing(t, "python3 is needed for the stand-in harness")
	}
	harness, err := filepath.Abs("testdata/standin_harness.py")
	if err != nil {
		t.Fatal(err)
	}
	return []string{"scan", "--hub-endpoint", h.URL(), "--db", db, "--cache-dir", cache, "--target", "cpu",
		"--mode", "arch", "--python", "python3", "--harness", harness, "--limit", "100", "--log-format", "json"}
}

func llamaRepos(ids ...string) []hubtest.Repo {
	var repos []hubtest.Repo
	for i, id := range ids {
		repos = append(repos, configRepo(id, "llama", "text-generation", int64(1000-i)))
	}
	return repos
}

func countResults(t *testing.T, db string) (int, map[string]int) {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	models, _, err := st.ListModels(context.Background(), store.ModelQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	total := 0
	for _, m := range models {
		h, err := st.History(context.Background(), m.ID, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		per[m.ID] = len(h)
		total += len(h)
	}
	return total, per
}

// TestKillMinus9MidScan kills the scanner without warning in the middle of
// a scan: what was recorded stays, the database is intact, and the next
// scan marks the old one interrupted and tests only what is missing,
// without duplicates.
func TestKillMinus9MidScan(t *testing.T) {
	ids := []string{"crash/m-0", "crash/m-1", "crash/m-2", "crash/m-3", "crash/m-4", "crash/m-5"}
	h := hubtest.New(t, llamaRepos(ids...)...)
	dir := t.TempDir()
	db, cache := filepath.Join(dir, "scanner.db"), filepath.Join(dir, "hub")
	args := standinArgs(t, h, db, cache)

	cmd, out := scannerProcess(t, args...)
	testenv.EventuallyShowing(t, "two results", 60*time.Second, func() bool {
		n, _ := countResultsQuiet(db)
		return n >= 2
	}, out.String)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	before, _ := countResults(t, db)
	if before >= len(ids) {
		t.Fatalf("the scan finished before it was killed (%d results); the test needs slower probes", before)
	}

	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.IntegrityCheck(context.Background()); err != nil || ok != "ok" {
		t.Fatalf("integrity after kill -9: %q %v", ok, err)
	}
	st.Close()

	// Restart: the killed scan is marked interrupted, the rest is tested.
	var stdout, stderr bytes.Buffer
	if code := runWithEnv(t, args, &stdout, &stderr); code != 0 {
		t.Fatalf("second scan exited %d:\n%s", code, stderr.String())
	}
	total, per := countResults(t, db)
	if total != len(ids) {
		t.Errorf("%d results for %d models after restart: %v", total, len(ids), per)
	}
	for _, id := range ids {
		if per[id] != 1 {
			t.Errorf("%s has %d results, want exactly 1", id, per[id])
		}
	}
	st, err = store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	scans, err := st.ListScans(context.Background(), 10)
	if err != nil || len(scans) != 2 {
		t.Fatalf("scans: %v %v", scans, err)
	}
	killed, second := scans[1], scans[0]
	if killed.Status != store.ScanInterrupted || killed.FinishedAt == nil {
		t.Errorf("killed scan: %+v", killed)
	}
	if second.Status != store.ScanDone || second.Probed != len(ids)-before || second.Unchanged != before {
		t.Errorf("second scan probed %d and kept %d, want %d and %d", second.Probed, second.Unchanged, len(ids)-before, before)
	}
	if ok, _ := st.IntegrityCheck(context.Background()); ok != "ok" {
		t.Errorf("integrity: %s", ok)
	}
}

// TestSIGTERMMidProbe stops the scanner while a probe that ignores SIGTERM
// holds the device: the scanner stops taking work, kills the probe's whole
// process group after the grace period, records the scan as interrupted
// and blames no model.
func TestSIGTERMMidProbe(t *testing.T) {
	h := hubtest.New(t, llamaRepos("term/hang-model", "term/next-model")...)
	dir := t.TempDir()
	db, cache := filepath.Join(dir, "scanner.db"), filepath.Join(dir, "hub")
	args := append(standinArgs(t, h, db, cache), "--probe-grace", "1s")
	cmd, out := scannerProcess(t, args...)

	// The runner's keeper and the harness it forked both have the model id
	// in their command line; both ignore SIGTERM once under way.
	testenv.EventuallyShowing(t, "the probe to start", 60*time.Second, func() bool {
		ps := procsWith("term/hang-model")
		return len(ps) >= 2 && ignoreSIGTERM(ps)
	}, out.String)
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("scanner still running 20 s after SIGTERM:\n%s", out.String())
	}
	took := time.Since(start)
	if took < time.Second {
		t.Errorf("exited after %v, before the probe's 1 s grace", took)
	}
	if left := procsWith("term/hang-model"); len(left) > 0 {
		t.Errorf("harness processes %v still alive after the scanner exited", left)
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit code %d, want 1 (scan interrupted)", code)
	}
	if !strings.Contains(out.String(), "interrupted") {
		t.Errorf("no word of the interruption:\n%s", out.String())
	}

	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	scans, _ := st.ListScans(context.Background(), 1)
	if len(scans) != 1 || scans[0].Status != store.ScanInterrupted {
		t.Errorf("scan record: %+v", scans)
	}
	// The probe that was stopped is not held against its model. (The other
	// model may have been fetched first and probed before the signal: a
	// result that was measured is kept.)
	if r, err := st.LatestResult(context.Background(), "term/hang-model", compat.TargetCPU); err == nil {
		t.Errorf("the stopped probe was recorded as %s", r.Status)
	}
	if r, err := st.LatestResult(context.Background(), "term/next-model", compat.TargetCPU); err == nil && r.Status != compat.StatusPass {
		t.Errorf("the other model was recorded as %s", r.Status)
	}
}

// procsWith lists the live processes with s in their command line.
var procsWith = proctest.With

// ignoreSIGTERM reports whether every process of pids ignores SIGTERM (the
// SigIgn mask of /proc/PID/status).
func ignoreSIGTERM(pids []int) bool {
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			return false
		}
		_, rest, _ := strings.Cut(string(b), "\nSigIgn:\t")
		mask, err := strconv.ParseUint(strings.Fields(rest + " x")[0], 16, 64)
		if err != nil || mask&(1<<(syscall.SIGTERM-1)) == 0 {
			return false
		}
	}
	return true
}

// runWithEnv runs the scanner in-process with the same environment the
// child had.
func runWithEnv(t *testing.T, args []string, stdout, stderr *bytes.Buffer) int {
	t.Setenv("HF_TOKEN", "")
	return run(args, stdout, stderr)
}

// countResultsQuiet counts results without failing the test (the database
// may not exist yet).
func countResultsQuiet(db string) (int, error) {
	if _, err := os.Stat(db); err != nil {
		return 0, err
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	models, _, err := st.ListModels(context.Background(), store.ModelQuery{Limit: 1000})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range models {
		if m.Result != nil {
			n++
		}
	}
	return n, nil
}

// TestSourceCacheMatchesHub scans models from the Hub, then scans the same
// cache offline (--source cache, the Hub unreachable) into a fresh
// database: an air-gapped host gets the same results.
func TestSourceCacheMatchesHub(t *testing.T) {
	ids := []string{"cache/alpha", "cache/beta", "cache/gamma"}
	h := hubtest.New(t, llamaRepos(ids...)...)
	dir := t.TempDir()
	cache := filepath.Join(dir, "hub")
	var stdout, stderr bytes.Buffer
	online := standinArgs(t, h, filepath.Join(dir, "online.db"), cache)
	if code := runWithEnv(t, online, &stdout, &stderr); code != 0 {
		t.Fatalf("online scan: %d\n%s", code, stderr.String())
	}
	offline := standinArgs(t, h, filepath.Join(dir, "offline.db"), cache)
	for i, a := range offline {
		if a == h.URL() {
			offline[i] = "http://127.0.0.1:1" // nothing listens there
		}
	}
	offline = append(offline, "--source", "cache")
	h.ResetLog()
	if code := runWithEnv(t, offline, &stdout, &stderr); code != 0 {
		t.Fatalf("offline scan: %d\n%s", code, stderr.String())
	}
	if n := len(h.Requests()); n != 0 {
		t.Errorf("the cache source made %d Hub requests", n)
	}
	ctx := context.Background()
	on, err := store.Open(ctx, filepath.Join(dir, "online.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer on.Close()
	off, err := store.Open(ctx, filepath.Join(dir, "offline.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	for _, id := range ids {
		a, errA := on.LatestResult(ctx, id, compat.TargetCPU)
		b, errB := off.LatestResult(ctx, id, compat.TargetCPU)
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v / %v", id, errA, errB)
		}
		if a.Status != b.Status || a.Revision != b.Revision || str(a.Stage) != str(b.Stage) || str(a.Mode) != str(b.Mode) {
			t.Errorf("%s: hub %s@%s stage %s, cache %s@%s stage %s", id, a.Status, a.Revision, str(a.Stage), b.Status, b.Revision, str(b.Stage))
		}
	}
}
