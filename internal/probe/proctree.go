package probe

import (
	"bytes"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// No process of a probe outlives it. Three mechanisms share the work:
//
//   - the keeper (keeper.py), the first process of every harness run, is a
//     child subreaper: everything the harness starts stays in its tree, even
//     a setsid() grandchild whose parent died; it kills what is left when
//     the harness ends, and when the scanner dies (Pdeathsig, even after a
//     SIGKILL of the scanner);
//   - on a timeout or shutdown, the runner kills the keeper's tree from
//     outside (killTree), descendants first;
//   - the scanner is a child subreaper too (enableSubreaper): if the keeper
//     itself dies early (killed by the harness it keeps), its orphans come to
//     the scanner rather than init, and the runner kills those that carry
//     the probe's mark in their environment (sweepOrphans).

// probeMarkVar is set in every harness's environment to a value unique to
// the run; its descendants inherit it, which is how the runner recognizes
// them once they are orphans.
const probeMarkVar = "TORCHTPU_SCANNER_RUN"

var subreaperOnce sync.Once

// enableSubreaper makes this process a child subreaper
// (PR_SET_CHILD_SUBREAPER), once; a failure is logged and leaves orphans of
// a dead keeper to init, where sweepOrphans cannot see them.
func enableSubreaper(log *slog.Logger) {
	subreaperOnce.Do(func() {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			log.Warn("probe: cannot become a child subreaper; orphans of a killed keeper go to init", "err", err)
		}
	})
}

// leaders are the pids of the harness processes the runner started and
// os/exec will wait for: the orphan sweep leaves them (and only them, of
// this process's children without the mark) alone, and never reaps them.
var leaders = struct {
	sync.Mutex
	pids map[int]bool
}{pids: map[int]bool{}}

func addLeader(pid int) {
	leaders.Lock()
	leaders.pids[pid] = true
	leaders.Unlock()
}

func removeLeader(pid int) {
	leaders.Lock()
	delete(leaders.pids, pid)
	leaders.Unlock()
}

func isLeader(pid int) bool {
	leaders.Lock()
	defer leaders.Unlock()
	return leaders.pids[pid]
}

// procEntry is one process of /proc.
type procEntry struct {
	pid, ppid int
	zombie    bool
}

// readProcs lists the processes of /proc. Processes that end while it
// reads are skipped.
func readProcs() []procEntry {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]procEntry, 0, len(dir))
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readStat(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// readStat parses /proc/PID/stat: "pid (comm) state ppid ...", where comm
// may hold spaces and parentheses.
func readStat(pid int) (procEntry, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procEntry{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procEntry{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 2 {
		return procEntry{}, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return procEntry{}, false
	}
	return procEntry{pid: pid, ppid: ppid, zombie: string(f[0]) == "Z"}, true
}

// descendants are the live processes below root in procs, parents before
// their children.
func descendants(procs []procEntry, root int) []int {
	kids := map[int][]procEntry{}
	for _, p := range procs {
		kids[p.ppid] = append(kids[p.ppid], p)
	}
	var out []int
	todo := []int{root}
	for len(todo) > 0 {
		pid := todo[0]
		todo = todo[1:]
		for _, k := range kids[pid] {
			todo = append(todo, k.pid)
			if !k.zombie {
				out = append(out, k.pid)
			}
		}
	}
	return out
}

// killDescendants SIGKILLs every live process below root until none is
// left, root is gone (stop closed: its pid may be reused), or a few seconds
// have passed (a process stuck in the kernel cannot die sooner). While root
// lives and is a subreaper (the keeper), the orphans of the killed come to
// it and are found in the next round.
func killDescendants(root int, stop <-chan struct{}) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-stop:
			return
		default:
		}
		d := descendants(readProcs(), root)
		if len(d) == 0 {
			return
		}
		for _, pid := range d {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sweepOrphans kills the processes that came to this process as orphans and
// carry mark in their environment (probeMarkVar), with their descendants,
// and reaps them. Children the runner started itself (leaders) are left
// alone, as is any child without the mark: other code of this process may
// have started it and will wait for it.
func sweepOrphans(mark string) {
	if mark == "" {
		return
	}
	me := os.Getpid()
	want := []byte("\x00" + probeMarkVar + "=" + mark + "\x00")
	// Killing an orphan's descendants makes orphans of theirs, which come
	// here too: sweep until a round finds none.
	for range 20 {
		found := false
		for _, p := range readProcs() {
			if p.ppid != me || p.zombie || isLeader(p.pid) {
				continue
			}
			env, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/environ")
			if err != nil || !bytes.Contains(append(append([]byte{0}, env...), 0), want) {
				continue
			}
			found = true
			killDescendants(p.pid, nil)
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			reapChild(p.pid, 2*time.Second)
		}
		if !found {
			return
		}
	}
}

// reapChild waits for the child pid to end, at most d.
func reapChild(pid int, d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if got == pid || err != nil || time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
