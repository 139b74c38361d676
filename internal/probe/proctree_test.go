package probe

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// uniqueTag makes a stand-in's model id unique ("standin/orphans.TAG"): the
// id is in the argv of every process of the run, so procsWith finds them.
func uniqueTag() string { return "t" + strings.ToLower(rand.Text()[:12]) }

// procsWith lists the live processes with tag in their command line.
var procsWith = proctest.With

// waitNoProcs fails unless every process with tag in its command line is
// gone within a few seconds; it kills the survivors.
func waitNoProcs(t *testing.T, tag string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if len(procsWith(tag)) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	left := procsWith(tag)
	for _, pid := range left {
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		t.Errorf("process %d outlived the probe: %q", pid, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

var childPidsRE = regexp.MustCompile(`child_pids=([0-9,]+)`)

// childPids are the pids the stand-in reported on stderr; want is how many
// it starts.
func childPids(t *testing.T, logTail string, want int) []int {
	t.Helper()
	m := childPidsRE.FindStringSubmatch(logTail)
	if m == nil {
		t.Fatalf("the stand-in reported no child pids; log tail %q", logTail)
	}
	var pids []int
	for _, s := range strings.Split(m[1], ",") {
		pid, err := strconv.Atoi(s)
		if err != nil || pid <= 1 {
			t.Fatalf("bad child pid %q in %q", s, m[0])
		}
		pids = append(pids, pid)
	}
	if len(pids) != want {
		t.Fatalf("%d child pids (%v), want %d", len(pids), pids, want)
	}
	return pids
}

// TestNoProcessOutlivesAProbe: whatever the harness leaves behind (a child
// in its process group that ignores SIGTERM, a grandchild that called
// setsid() and whose parent is gone), nothing of it outlives the probe,
// whether the probe times out, ends normally, or the harness kills the
// runner's keeper first.
func TestNoProcessOutlivesAProbe(t *testing.T) {
	tests := []struct {
		behaviour string
		timeout   time.Duration
		status    compat.Status
		children  int // sleepers the stand-in reports (child_pids)
	}{
		{"orphans", 4 * time.Second, compat.StatusTimeout, 2},
		{"orphans-exit", 30 * time.Second, compat.StatusPass, 2},
		{"orphans-killkeeper", 30 * time.Second, "", 2}, // the keeper died of SIGKILL: whatever the runner makes of it
		// A process without the run's mark, orphaned to the keeper, then to
		// the runner: the run's process group is killed once the keeper is gone.
		{"unmarked-killkeeper", 30 * time.Second, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.behaviour, func(t *testing.T) {
			t.Parallel()
			r := standinRunner(t, nil)
			tag := uniqueTag()
			req := standinRequest(t, tc.behaviour+"."+tag)
			req.Timeout = tc.timeout
			res := r.Probe(context.Background(), req)
			if tc.status != "" && res.Status != tc.status {
				t.Errorf("status %s (%s), want %s", res.Status, str(res.Message), tc.status)
			}
			pids := childPids(t, res.LogTail+str(res.Message), tc.children)
			waitNoProcs(t, tag)
			for _, pid := range pids {
				waitGone(t, pid)
			}
			if tc.behaviour == "orphans-killkeeper" {
				// The setsid() grandchild came to the runner (a subreaper) when
				// the keeper died; the runner's sweep killed it, and reaps it
				// too: it does not stay a zombie of this process.
				waitReaped(t, pids[1])
			}
		})
	}
}

// The scanner-kill test re-runs this test binary as a scanner that probes
// one stand-in and is then killed with SIGKILL.
const (
	scannerTagVar = "PROBE_TEST_SCANNER_TAG"
	scannerDirVar = "PROBE_TEST_SCANNER_DIR"
)

// subreaperVar makes the test binary a process that only becomes a child
// subreaper, logging to stderr, and prints PR_GET_CHILD_SUBREAPER.
const subreaperVar = "PROBE_TEST_SUBREAPER"

func subreaperProcess() int {
	enableSubreaper(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	var v int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(v)
	return 0
}

// TestEnableSubreaper: the runner's process becomes a child subreaper (so
// orphans of a killed keeper come to it), and says nothing when that works.
func TestEnableSubreaper(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), subreaperVar+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || strings.TrimSpace(stdout.String()) != "1" || stderr.Len() > 0 {
		t.Errorf("subreaper: %v, PR_GET_CHILD_SUBREAPER %q, stderr %q; want 1 and nothing logged", err, stdout.String(), stderr.String())
	}
}

// miniScanner probes "standin/orphans.TAG" with a long timeout: it runs
// until the test kills it.
func miniScanner(tag, dir string) int {
	r, err := NewRunner(Config{Python: python3, Script: filepath.Join("testdata", "standin.py"),
		Timeout: 5 * time.Minute, MemLimitBytes: 256 << 20, TempDir: dir, Logger: quietLogger()})
	if err != nil {
		return 3
	}
	snap, err := os.MkdirTemp(dir, "snapshot-")
	if err != nil {
		return 3
	}
	r.Probe(context.Background(), Request{ModelID: "standin/orphans." + tag, Revision: strings.Repeat("0", 40),
		SnapshotDir: snap, Target: compat.TargetCPU, Mode: compat.ModeArch})
	return 0
}

// TestNoProcessOutlivesAKilledScanner kills a scanner with SIGKILL while
// its probe's harness runs with a child that ignores SIGTERM and a setsid()
// grandchild: none of them survives it.
func TestNoProcessOutlivesAKilledScanner(t *testing.T) {
	if python3 == "" {
		t.Skip("no python3 on this host: the runner tests need one to run the stand-in harness")
	}
	t.Parallel()
	tag := uniqueTag()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), scannerTagVar+"="+tag, scannerDirVar+"="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The keeper, the harness, its child and the setsid grandchild.
	testenv.EventuallyShowing(t, "the probe's processes all to start", 30*time.Second, func() bool { return len(procsWith(tag)) >= 4 }, func() string {
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Sprintf("%v\n%s", procsWith(tag), out.String())
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitNoProcs(t, tag)
}

// TestDescendants: every live process below root, parents before their
// children, through zombies (whose children are still alive), and nothing
// outside root's tree.
func TestDescendants(t *testing.T) {
	procs := []procEntry{
		{pid: 1, ppid: 0},
		{pid: 10, ppid: 1}, // root
		{pid: 11, ppid: 10},
		{pid: 12, ppid: 10, zombie: true},
		{pid: 13, ppid: 11},
		{pid: 14, ppid: 12}, // child of a zombie: alive, listed
		{pid: 20, ppid: 1},  // a sibling of root: not below it
		{pid: 21, ppid: 20},
	}
	got := descendants(procs, 10)
	if want := []int{11, 13, 14}; !slices.Equal(got, want) {
		t.Errorf("descendants(10) = %v, want %v", got, want)
	}
	if got := descendants(procs, 13); len(got) != 0 {
		t.Errorf("descendants of a leaf: %v, want none", got)
	}
}

// TestNoUnmarkedProcessOutlivesACancelledProbe: processes that lack the
// run's mark and were orphaned to the keeper (one in the run's process
// group, one in a session of its own) die with the probe when it is
// stopped: the runner kills the keeper's whole tree, not only the marked
// processes and the group. The probe is stopped once they all run.
func TestNoUnmarkedProcessOutlivesACancelledProbe(t *testing.T) {
	t.Parallel()
	r := standinRunner(t, nil)
	tag := uniqueTag()
	req := standinRequest(t, "unmarked."+tag)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan compat.Result, 1)
	go func() { done <- r.Probe(ctx, req) }()
	// Stop it once both sleepers run (exec'd, their launchers gone) and the
	// harness ignores SIGTERM (it reported them first), so that only the
	// runner can end them.
	ready := func() bool {
		sleepers := 0
		for _, pid := range procsWith(tag) {
			cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			argv := strings.Split(string(cmd), "\x00")
			switch {
			case len(argv) > 2 && argv[1] == "-c" && strings.HasPrefix(argv[2], "import signal, time;"):
				sleepers++
			case len(argv) > 2 && argv[1] == "-c": // a launcher
				return false
			default: // the keeper or the harness (python -I ...)
				status, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
				m := regexp.MustCompile(`(?m)^SigIgn:\s*([0-9a-f]+)$`).FindSubmatch(status)
				if m == nil {
					return false
				}
				if ign, err := strconv.ParseUint(string(m[1]), 16, 64); err != nil || ign&(1<<(syscall.SIGTERM-1)) == 0 {
					return false
				}
			}
		}
		return sleepers == 2
	}
	deadline := time.Now().Add(60 * time.Second)
	for !ready() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	res := <-done
	if res.Status != compat.StatusError || str(res.Message) != InterruptedMessage {
		t.Errorf("status %s (%s), want error: interrupted", res.Status, str(res.Message))
	}
	pids := childPids(t, res.LogTail, 2)
	waitNoProcs(t, tag)
	for _, pid := range pids {
		waitGone(t, pid)
	}
}

// waitReaped fails unless pid, a child of this process once orphaned, is
// gone altogether within a few seconds: not even a zombie (nobody but this
// process would reap it).
func waitReaped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		i := bytes.LastIndexByte(stat, ')')
		if f := bytes.Fields(stat[i+2:]); len(f) > 1 && string(f[1]) != strconv.Itoa(os.Getpid()) {
			return // the pid was reused by a process that is not ours
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("process %d is still a child of this process: killed but never reaped", pid)
}
