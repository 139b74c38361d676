package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// The fleet's operations end to end (issue 23): real `scanner worker`
// processes, the stand-in harness, the fake Hub, loopback only. Each test
// ends with every model's result recorded exactly once and the scan in a
// final state.

// scanRow is a scan as /api/v1/scans shows it, with the fleet's fields.
type scanRow struct {
	ID           int64      `json:"id"`
	Status       string     `json:"status"`
	Planned      int        `json:"planned"`
	Done         int        `json:"done"`
	Probed       int        `json:"probed"`
	Error        string     `json:"error"`
	StartedAt    time.Time  `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at"`
	StalledSince *time.Time `json:"stalled_since"`
	FleetNote    string     `json:"fleet_note"`
}

// scanAfter waits for a scan newer than after to end and returns it.
func scanAfter(t *testing.T, base string, after int64, limit time.Duration, out *syncBuffer) scanRow {
	t.Helper()
	var got scanRow
	waitFleet(t, limit, fmt.Sprintf("a scan after %d to end", after), out, func() bool {
		sb := apiGet[struct {
			Scans []scanRow `json:"scans"`
		}](t, base+"/api/v1/scans?limit=1")
		if len(sb.Scans) == 1 && sb.Scans[0].ID > after && sb.Scans[0].Status != "running" {
			got = sb.Scans[0]
			return true
		}
		return false
	})
	return got
}

// everyModelOnce checks that every repo has exactly one result, a pass by a
// worker, and that the database is intact; it returns each model's result
// harness version.
func everyModelOnce(t *testing.T, db string, repos []hubtest.Repo) map[string]string {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	harness := map[string]string{}
	for _, r := range repos {
		hist, err := st.History(context.Background(), r.ID, "", 10)
		if err != nil || len(hist) != 1 {
			t.Errorf("%s: %d results (%v), want exactly one", r.ID, len(hist), err)
			continue
		}
		if res := hist[0]; res.Status != "pass" || res.Worker == "" || res.WorkerTestedAt == nil {
			t.Errorf("%s: %s by worker %q (worker time %v): %s", r.ID, res.Status, res.Worker, res.WorkerTestedAt, str(res.Message))
		}
		harness[r.ID] = hist[0].Runtime.Harness
	}
	if ok, err := st.IntegrityCheck(context.Background()); err != nil || ok != "ok" {
		t.Errorf("integrity: %q %v", ok, err)
	}
	return harness
}

// fleetOf starts the fake Hub with repos and a server for workers with the
// extra flags, in a folder of its own.
func fleetOf(t *testing.T, repos []hubtest.Repo, extra ...string) (h *hubtest.Hub, dir, db string, server *exec.Cmd, out *syncBuffer, base string) {
	t.Helper()
	h = hubtest.New(t, repos...)
	dir = t.TempDir()
	db = filepath.Join(dir, "scanner.db")
	server, out, base = fleetServer(t, h, db, filepath.Join(dir, "server-hub"), extra...)
	return h, dir, db, server, out, base
}

func sleepRepos(prefix string, ms, n int) []hubtest.Repo {
	var repos []hubtest.Repo
	for i := range n {
		repos = append(repos, configRepo(fmt.Sprintf("%s/sleep-%d-model-%d", prefix, ms, i), "llama", "text-generation", int64(1000-i)))
	}
	return repos
}

func standinHarness(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.Missing(t, "python3 is needed for the stand-in harness")
	}
	h, err := filepath.Abs("testdata/standin_harness.py")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestFleetScanDeadline: --scan-timeout under --dispatch workers ends the
// scan interrupted (not left running beside the next), withdraws what it
// queued, lets the probe in flight finish (recorded once: the next scan
// adopts it), and frees the scan lock: the scans that follow test the rest,
// one after the other, until one is done.
func TestFleetScanDeadline(t *testing.T) {
	harness := standinHarness(t)
	repos := sleepRepos("deadline", 1500, 6)
	h, dir, db, server, serverOut, base := fleetOf(t, repos, "--lease-ttl", "5s", "--limit", "6", "--scan-timeout", "6s")
	worker, _, _ := fleetWorker(t, h, base, "python3", harness, filepath.Join(dir, "w0"))

	requestScan(t, base)
	first := scanAfter(t, base, 0, 2*time.Minute, serverOut)
	if first.Status != "interrupted" || !strings.Contains(first.Error, "--scan-timeout") || first.Done >= 6 {
		t.Fatalf("the first scan %+v: want interrupted by its deadline with models left", first)
	}
	scans := []scanRow{first}
	for last := first; last.Status != "done"; {
		if len(scans) > 6 {
			t.Fatalf("no scan completed: %+v", scans)
		}
		requestScan(t, base)
		last = scanAfter(t, base, last.ID, 2*time.Minute, serverOut)
		if last.Status != "done" && last.Status != "interrupted" {
			t.Fatalf("scan %+v", last)
		}
		scans = append(scans, last)
	}
	for _, sc := range scans {
		t.Logf("scan %d: %s, %d of %d done, %d probed", sc.ID, sc.Status, sc.Done, sc.Planned, sc.Probed)
	}
	for i := 1; i < len(scans); i++ {
		if prev := scans[i-1]; prev.FinishedAt == nil || scans[i].StartedAt.Before(*prev.FinishedAt) {
			t.Errorf("scan %d started at %v, before scan %d ended (%v): two scans ran at once", scans[i].ID, scans[i].StartedAt,
				prev.ID, prev.FinishedAt)
		}
	}
	stopGracefully(t, "worker", worker)
	stopGracefully(t, "server", server)
	everyModelOnce(t, db, repos)
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, sc := range scans {
		if c, err := st.ScanJobs(context.Background(), sc.ID); err != nil || c.Open() != 0 {
			t.Errorf("scan %d (%s) left jobs open: %+v %v", sc.ID, sc.Status, c, err)
		}
	}
	if n := len(serverOut.logLines("scan failed")); n != 0 {
		t.Errorf("%d scans logged as failed: a deadline is an interruption", n)
	}
}

// TestFleetRolloutMidScan: the workers of one runtime are replaced by
// workers of another mid-scan (SIGTERM: they finish, give back, leave).
// The scan's queued jobs match no live worker; past --worker-wait it
// re-plans them for the runtime the fleet runs now, says so on its record,
// and completes, every model once, some on each runtime.
func TestFleetRolloutMidScan(t *testing.T) {
	standinHarness(t)
	oldHarness, newHarness := standinRuntime(t, "rollout-old", "rollout/none"), standinRuntime(t, "rollout-new", "rollout/none")
	repos := sleepRepos("rollout", 700, 10)
	h, dir, db, server, serverOut, base := fleetOf(t, repos, "--lease-ttl", "5s", "--limit", "10", "--worker-wait", "3s")
	var old []*exec.Cmd
	for i := range 2 {
		cmd, _, _ := fleetWorker(t, h, base, "python3", oldHarness, filepath.Join(dir, fmt.Sprintf("old-%d", i)))
		old = append(old, cmd)
	}
	requestScan(t, base)
	waitFleet(t, 60*time.Second, "two results on the old runtime", serverOut, func() bool {
		return len(serverOut.logLines("result recorded")) >= 2
	})
	var fresh []*exec.Cmd
	for i := range 2 {
		cmd, _, _ := fleetWorker(t, h, base, "python3", newHarness, filepath.Join(dir, fmt.Sprintf("new-%d", i)))
		fresh = append(fresh, cmd)
	}
	stopGracefully(t, "an old worker", old...)
	sc := scanAfter(t, base, 0, 3*time.Minute, serverOut)
	if sc.Status != "done" || sc.Planned != 10 || sc.Done != 10 || sc.Probed != 10 {
		t.Errorf("scan %+v\n%s", sc, lastLines(serverOut.String(), 30))
	}
	if !strings.Contains(sc.FleetNote, "re-planned") || !strings.Contains(sc.FleetNote, "rollout-new") || sc.StalledSince != nil {
		t.Errorf("the scan's record after the rollout: note %q, stalled since %v", sc.FleetNote, sc.StalledSince)
	}
	if len(serverOut.logLines("no live worker can take the scan's queued jobs")) == 0 ||
		len(serverOut.logLines("queued jobs re-planned for the runtime the fleet runs now")) != 1 {
		t.Errorf("the stall and the re-plan were not logged:\n%s", lastLines(serverOut.String(), 40))
	}
	stopGracefully(t, "a new worker", fresh...)
	stopGracefully(t, "server", server)
	byRuntime := map[string]int{}
	for _, v := range everyModelOnce(t, db, repos) {
		byRuntime[strings.SplitN(v, "+", 2)[0]]++
	}
	if byRuntime["rollout-old"] < 2 || byRuntime["rollout-new"] < 1 || byRuntime["rollout-old"]+byRuntime["rollout-new"] != 10 {
		t.Errorf("results by runtime %v: want the first on the old runtime, the rest on the new", byRuntime)
	}
}

// asHost is the prefix that runs a command under host name in a UTS
// namespace of its own (unshare -u, and -r where this is not root), or nil
// where no such namespace can be had.
func asHost(name string) []string {
	flags := []string{"-u"}
	if os.Geteuid() != 0 {
		flags = append(flags, "-r")
	}
	out, err := exec.Command("unshare", append(flags, "sh", "-c", "hostname "+name+" && hostname")...).Output()
	if err != nil || strings.TrimSpace(string(out)) != name {
		return nil
	}
	return append(append([]string{"unshare"}, flags...), "sh", "-c", `hostname `+name+` && exec "$0" "$@"`)
}

// TestFleetServerRestartUnderANewHostName kills the server (SIGKILL)
// mid-scan and starts another on the same database and address under
// another host name, as a recreated container (a Deployment's pod) is. The
// scan's owner is gone though its host name is not this one's: once it has
// not renewed the scan for store.OwnerTTL the new server adopts it; the
// workers reconnect, and the scan completes, every model once.
func TestFleetServerRestartUnderANewHostName(t *testing.T) {
	k := killServerMidScan(t, "newhost", standinHarness(t))
	wrap := asHost("scanner-new-pod")
	if wrap == nil {
		// No UTS namespace here: the dead server's record is made another
		// host's, which is what the new server then sees.
		t.Log("unshare -u is not available: the killed server's scan is given another host's owner instead")
		rewriteOwner(t, k.db, "scanner-old-pod:1:boot:instance")
	}
	_, secondOut, base2 := fleetServerIn(t, wrap, k.hub, k.db, k.serverCache, k.args...)
	sc := scanAfter(t, base2, 0, 4*time.Minute, secondOut)
	if sc.Status != "done" || sc.Planned != 8 || sc.Done != 8 || sc.Probed != 8 {
		t.Errorf("the adopted scan: %+v\n%s", sc, lastLines(secondOut.String(), 30))
	}
	if len(secondOut.logLines("resuming a scan left to its queue")) != 1 {
		t.Errorf("the new server did not resume the scan:\n%s", lastLines(secondOut.String(), 30))
	}
	if took := time.Since(k.at); took < store.OwnerTTL {
		t.Errorf("the scan was adopted %v after its owner died, before it could be silent for %v", took, store.OwnerTTL)
	}
	if wrap != nil {
		if owner := scanOwner(t, k.db, sc.ID); !strings.HasPrefix(owner, "scanner-new-pod:") {
			t.Errorf("the adopted scan's owner is %q, want the new pod", owner)
		}
	}
	stopGracefully(t, "worker", k.workers...)
	everyModelOnce(t, k.db, k.repos)
}

// rewriteOwner records owner as the owner of every running scan.
func rewriteOwner(t *testing.T, db, owner string) {
	t.Helper()
	conn, err := sql.Open("sqlite3", db+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(`UPDATE scans SET owner = ? WHERE status = 'running'`, owner); err != nil {
		t.Fatal(err)
	}
}

func scanOwner(t *testing.T, db string, id int64) string {
	t.Helper()
	conn, err := sql.Open("sqlite3", db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var owner string
	if err := conn.QueryRow(`SELECT owner FROM scans WHERE id = ?`, id).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	return owner
}
