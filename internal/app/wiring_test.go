package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
	"github.com/google-pytorch/torchtpu-scanner/internal/scan"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web"
)

// goneScanDB and goneScanJobs make the test binary a process that starts a
// scan on a database (with one job queued for workers when goneScanJobs is
// set), prints its id and exits: what a server that died mid-scan leaves.
const (
	goneScanDB   = "APP_TEST_GONE_SCAN_DB"
	goneScanJobs = "APP_TEST_GONE_SCAN_JOBS"
)

func TestMain(m *testing.M) {
	if db := os.Getenv(goneScanDB); db != "" {
		if err := startScanAndExit(db, os.Getenv(goneScanJobs) != ""); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startScanAndExit(db string, jobs bool) error {
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.UpsertModels(ctx, []store.ModelUpsert{{ID: "org/gone", SHA: "sha1", Downloads: 1}}); err != nil {
		return err
	}
	id, err := st.StartScan(ctx, store.Scan{Trigger: "test", Target: "cpu"})
	if err != nil {
		return err
	}
	if jobs {
		if err := st.EnqueueJobs(ctx, id, []store.NewJob{{Job: fleet.Job{ModelID: "org/gone", Revision: "sha1",
			Target: compat.TargetCPU, Mode: compat.ModeArch, Files: []string{"config.json"}, TimeoutS: 60}}}); err != nil {
			return err
		}
	}
	fmt.Println(id)
	return nil
}

// goneScan runs the test binary as a process that starts a scan on db and
// exits, and returns the scan's id.
func goneScan(t *testing.T, db string, jobs bool) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), goneScanDB+"="+db)
	if jobs {
		cmd.Env = append(cmd.Env, goneScanJobs+"=1")
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the process that leaves a scan: %v\n%s", err, out)
	}
	id, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("the process that leaves a scan printed %q", out)
	}
	return id
}

// testConfig is serve's defaults on a database and caches in t's folder,
// with a --python that does not exist (the broken prober: nothing runs).
func testConfig(t *testing.T) config.Config {
	cfg := config.Defaults()
	dir := t.TempDir()
	cfg.DB = filepath.Join(dir, "scanner.db")
	cfg.CacheDir, cfg.CacheHome = filepath.Join(dir, "cache"), filepath.Join(dir, "home")
	cfg.Python = filepath.Join(dir, "no-python")
	return cfg
}

func newApp(t *testing.T, cfg config.Config) (*App, *proctest.Buffer) {
	t.Helper()
	var logs proctest.Buffer
	a, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, nil)), "v-test")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a, &logs
}

func scanStatus(t *testing.T, a *App, id int64) store.ScanStatus {
	t.Helper()
	sc, err := a.Store.GetScan(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return sc.Status
}

// A server that probes locally takes over what a dead one left: the jobs it
// had queued for workers are cancelled and its scan marked interrupted;
// each is logged, and a start with nothing left logs neither.
func TestNewSettlesWhatAGoneServerLeft(t *testing.T) {
	cfg := testConfig(t)
	id := goneScan(t, cfg.DB, true)
	a, logs := newApp(t, cfg)
	if got := scanStatus(t, a, id); got != store.ScanInterrupted {
		t.Errorf("the gone process's scan is %s, want interrupted", got)
	}
	for _, want := range []string{"jobs queued for workers by an earlier process cancelled", "jobs=1",
		"scans left running by a process that is gone marked interrupted", "scans=1"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if a.Fleet != nil || a.Scanner.Fleet != nil {
		t.Errorf("--dispatch local built a dispatcher")
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := a.Store.ListScans(context.Background(), 1); err == nil {
		t.Error("the database still answers after Close")
	}
	a, logs = newApp(t, cfg)
	defer a.Close()
	if strings.Contains(logs.String(), "cancelled") || strings.Contains(logs.String(), "interrupted") {
		t.Errorf("a start with nothing to settle logged:\n%s", logs)
	}
}

// Under --dispatch workers the dead server's scan whose jobs are still
// queued is resumed, not interrupted, and the scanner hands its jobs to
// the dispatcher, waiting --worker-wait for a worker.
func TestNewResumesUnderDispatchWorkers(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dispatch, cfg.WorkerWait = config.DispatchWorkers, 7*time.Second
	id := goneScan(t, cfg.DB, true)
	plain := goneScan(t, cfg.DB, false)
	a, logs := newApp(t, cfg)
	if got := scanStatus(t, a, id); got != store.ScanRunning {
		t.Errorf("the scan with queued jobs is %s, want running (resumed)", got)
	}
	if got := scanStatus(t, a, plain); got != store.ScanInterrupted {
		t.Errorf("the scan without jobs is %s, want interrupted", got)
	}
	if want := fmt.Sprintf("scans=[%d]", id); !strings.Contains(logs.String(), "are resumed") || !strings.Contains(logs.String(), want) {
		t.Errorf("log lacks the resumed scan %s:\n%s", want, logs)
	}
	if a.Fleet == nil || a.Scanner.Fleet != a.Fleet || a.Scanner.FleetWait != 7*time.Second {
		t.Errorf("dispatcher %v, scanner's %v waiting %v", a.Fleet, a.Scanner.Fleet, a.Scanner.FleetWait)
	}
	if st := (scanControl{a.Service, a.Fleet}).State(); st.Workers != 0 || st.WorkersBusy != 0 || st.Running {
		t.Errorf("state %+v, want no workers and no scan of this process's", st)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// The resumed scan is this process's now: a start beside it resumes nothing, and says nothing.
	a, logs = newApp(t, cfg)
	defer a.Close()
	if strings.Contains(logs.String(), "resumed") || strings.Contains(logs.String(), "interrupted") {
		t.Errorf("a start with nothing to settle logged:\n%s", logs)
	}
	if got := scanStatus(t, a, id); got != store.ScanRunning {
		t.Errorf("the live process's scan is %s, want running", got)
	}
}

// New builds the parts from the config: without a usable Python the
// broken prober answers every probe with why; the scan hooks feed
// /metrics.
func TestNewWiresTheParts(t *testing.T) {
	cfg := testConfig(t)
	a, _ := newApp(t, cfg)
	defer a.Close()
	if a.Store == nil || a.Hub == nil || a.Service == nil || a.Scanner.Store != a.Store || a.Scanner.HasToken {
		t.Fatalf("parts: store %v hub %v service %v; scanner store %v, has token %v", a.Store, a.Hub, a.Service, a.Scanner.Store, a.Scanner.HasToken)
	}
	b, ok := a.Runner.(brokenProber)
	if !ok {
		t.Fatalf("runner %T, want the broken prober", a.Runner)
	}
	res := b.Probe(context.Background(), probe.Request{Target: compat.TargetCPU})
	if res.Status != compat.StatusError || res.Target != compat.TargetCPU || res.FailureClass == nil ||
		*res.FailureClass != compat.ClassImportError || res.Message == nil || !strings.Contains(*res.Message, "no usable Python") {
		t.Errorf("broken prober's result %+v", res)
	}
	if _, _, err := b.Env(context.Background(), compat.TargetCPU); err == nil || !strings.Contains(err.Error(), "no usable Python") {
		t.Errorf("broken prober's Env: %v", err)
	}
	a.Scanner.Hooks.ProbeDone(compat.Result{Status: compat.StatusPass}, 3*time.Second)
	a.Scanner.Hooks.ScanDone(store.Scan{Status: store.ScanDone})
	out := metricsText(t, a)
	for _, want := range []string{`scanner_probes_total{status="pass"} 1`, `scanner_probe_duration_seconds_sum{status="pass"} 3`,
		`scanner_scans_total{status="done"} 1`, `scanner_build_info{version="v-test"`} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(out, "\nscanner_device_busy_fraction ") {
		t.Error("device busy set by a scan that did not measure it")
	}
	busy := 0.25
	a.Scanner.Hooks.ScanDone(store.Scan{Status: store.ScanFailed, DeviceBusy: &busy})
	if out := metricsText(t, a); !strings.Contains(out, "\nscanner_device_busy_fraction 0.25\n") || !strings.Contains(out, `scanner_scans_total{status="failed"} 1`) {
		t.Errorf("after a measured scan:\n%s", out)
	}

	cfg.Token = "hf_x"
	cfg.DB = filepath.Join(t.TempDir(), "other.db")
	withToken, _ := newApp(t, cfg)
	defer withToken.Close()
	if !withToken.Scanner.HasToken {
		t.Error("a Hub token configured, but the scanner says none")
	}
}

func metricsText(t *testing.T, a *App) string {
	t.Helper()
	var b strings.Builder
	if err := a.Metrics.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// New fails, and says which database, when the database cannot be opened.
func TestNewRefusesADatabaseItCannotOpen(t *testing.T) {
	cfg := testConfig(t)
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.DB = filepath.Join(file, "scanner.db") // under a file: no folder can be made
	if a, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler), "v"); err == nil || !strings.Contains(err.Error(), "open database "+cfg.DB) {
		if a != nil {
			a.Close()
		}
		t.Errorf("New on %s: %v", cfg.DB, err)
	}
}

// Backup copies the database; a database that is not there is an error
// naming it.
func TestBackup(t *testing.T) {
	cfg := testConfig(t)
	id := goneScan(t, cfg.DB, false)
	to := filepath.Join(t.TempDir(), "copy.db")
	if err := Backup(context.Background(), cfg, to); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	cp, err := store.Open(context.Background(), to)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if sc, err := cp.GetScan(context.Background(), id); err != nil || sc.Trigger != "test" {
		t.Errorf("the copy's scan %d: %+v, %v", id, sc, err)
	}
	cfg.DB = filepath.Join(t.TempDir(), "missing.db")
	if err := Backup(context.Background(), cfg, filepath.Join(t.TempDir(), "x.db")); err == nil || !strings.Contains(err.Error(), "missing.db") {
		t.Errorf("Backup of a missing database: %v", err)
	}
	cfg.DB = filepath.Join(filepath.Dir(to), "copy.db")
	if err := Backup(context.Background(), cfg, filepath.Join(to, "under-a-file.db")); err == nil || !strings.Contains(err.Error(), "backup to") {
		t.Errorf("Backup to a path under a file: %v", err)
	}
}

// The web server's scan control: a second request while one is queued is
// web.ErrScanQueued, the web package's word for it.
func TestScanControlRequest(t *testing.T) {
	cfg := testConfig(t)
	a, _ := newApp(t, cfg)
	defer a.Close()
	c := scanControl{s: a.Service}
	if err := c.RequestScan("test"); err != nil {
		t.Fatalf("first request: %v", err)
	}
	if !c.State().Queued {
		t.Error("state does not say a scan is queued")
	}
	if err := c.RequestScan("test"); !errors.Is(err, web.ErrScanQueued) {
		t.Errorf("second request: %v, want web.ErrScanQueued", err)
	}
}

// chainProgress calls both observers, the first one first; without a
// first, the second alone.
func TestChainProgress(t *testing.T) {
	var calls []string
	first := func(p scan.Progress) { calls = append(calls, "a"+strconv.Itoa(p.Done)) }
	second := func(p scan.Progress) { calls = append(calls, "b"+strconv.Itoa(p.Done)) }
	chainProgress(first, second)(scan.Progress{Done: 1})
	chainProgress(nil, second)(scan.Progress{Done: 2})
	if got := strings.Join(calls, ","); got != "a1,b1,b2" {
		t.Errorf("calls %s, want a1,b1,b2", got)
	}
}

func TestSchedule(t *testing.T) {
	cfg := config.Defaults()
	cfg.Schedule = "0 3 * * *"
	if got := schedule(cfg); got != "0 3 * * *" {
		t.Errorf("schedule %q", got)
	}
	cfg.NoSchedule = true
	if got := schedule(cfg); got != "off" {
		t.Errorf("--no-schedule: %q, want off", got)
	}
}

// --vllm-python gives scans the serving probe (ServeProbe, with the
// config's interpreter); without it a scan runs none.
func TestNewWiresTheServingProbe(t *testing.T) {
	cfg := testConfig(t)
	a, _ := newApp(t, cfg)
	if a.Scanner.ServeProbe != nil {
		t.Errorf("a serving probe without --vllm-python")
	}
	a.Close()
	cfg.VLLMPython = "/nonexistent/vllm/python"
	a, _ = newApp(t, cfg)
	defer a.Close()
	if a.Scanner.ServeProbe == nil {
		t.Fatal("no serving probe with --vllm-python")
	}
	_, err := a.Scanner.ServeProbe(context.Background(), t.TempDir(), compat.Result{Mode: compat.Ptr(compat.ModeArch)})
	if err == nil || !strings.Contains(err.Error(), "needs the real weights") {
		t.Errorf("an arch-mode probe's serving probe: %v", err)
	}
}

// A worker with --vllm-python runs the same serving probe as a scan
// (serveProbeOf: ServeProbeIn) for the jobs that ask for it; without it,
// none.
func TestWorkerWiresTheServingProbe(t *testing.T) {
	cfg := testConfig(t)
	if workerConfig(cfg, "h", 0, nil, "v").ServeProbe != nil {
		t.Errorf("a worker's serving probe without --vllm-python")
	}
	cfg.VLLMPython = "/nonexistent/vllm/python"
	wc := workerConfig(cfg, "h", 0, nil, "v")
	if wc.ServeProbe == nil {
		t.Fatal("no worker serving probe with --vllm-python")
	}
	_, err := wc.ServeProbe(context.Background(), t.TempDir(), compat.Result{Mode: compat.Ptr(compat.ModeArch)})
	if err == nil || !strings.Contains(err.Error(), "needs the real weights") {
		t.Errorf("an arch-mode probe's serving probe on a worker: %v", err)
	}
}
