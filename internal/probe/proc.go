package probe

import (
	"bytes"
	"context"
	_ "embed"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// LogTailMax is the most stderr a result keeps (Result.LogTail).
const LogTailMax = 64 << 10

// limitsExit is the exit status of the keeper when it cannot apply the
// resource limits; the harness never ran.
const limitsExit = 97

// keeper is run with `python -I -u -B -c keeper DATA NOFILE SCRIPT ARGS…`:
// it sets the harness's resource limits (Go cannot set limits on a child it
// execs): RLIMIT_DATA (not RLIMIT_AS: importing torch alone maps ~4 GiB of
// address space, and CUDA and PJRT reserve far more, while RLIMIT_DATA
// counts only writable private memory, which is what allocations use),
// RLIMIT_NOFILE, and RLIMIT_CORE=0, soft and hard, so the harness cannot
// raise them again; then it forks the harness (SCRIPT as __main__, its
// directory first on sys.path, which -I leaves off) and keeps its process
// tree together until it ends (see keeper.py and proctree.go).
//
//go:embed keeper.py
var keeper string

// tailBuffer keeps the last max bytes written to it, in at most 2*max
// bytes of memory.
type tailBuffer struct {
	max   int
	buf   []byte
	total int64
}

func newTailBuffer(max int) *tailBuffer {
	return &tailBuffer{max: max, buf: make([]byte, 0, 2*max)}
}

// Write appends p, dropping the oldest bytes beyond max. It never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	t.total += int64(n)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if len(t.buf)+len(p) > cap(t.buf) {
		keep := t.max - len(p)
		copy(t.buf, t.buf[len(t.buf)-keep:])
		t.buf = t.buf[:keep]
	}
	t.buf = append(t.buf, p...) // may exceed max until the next trim; Bytes trims
	return n, nil
}

// Bytes returns the last max bytes written.
func (t *tailBuffer) Bytes() []byte {
	if len(t.buf) > t.max {
		return t.buf[len(t.buf)-t.max:]
	}
	return t.buf
}

// stageRE finds a stage in a harness progress line: "stage=load",
// "stage: load", `"stage": "load"`, "[load]" at the line's start, or
// "stage load".
var stageRE = regexp.MustCompile(`(?i)(?:\bstage["']?\s*[:=]?\s*["']?|^\s*\[)(env|config|load|forward|numerics|compile|generate)\b`)

// stageTracker remembers the last stage named on a line of stderr, and for
// the ranks of a sharded probe, which share that stderr, each rank's last
// (a line that starts with "[rank N]"). Lines longer than a few hundred
// bytes are only matched on their start.
type stageTracker struct {
	line  []byte
	last  compat.Stage
	ranks map[int]compat.Stage
}

// rankLineRE finds the rank a line of a sharded probe's stderr is from.
var rankLineRE = regexp.MustCompile(`^\s*\[rank (\d{1,3})\]`)

const stageLineMax = 512

func (s *stageTracker) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := stageLineMax - len(s.line); room > 0 {
			s.line = append(s.line, chunk[:min(room, len(chunk))]...)
		}
		if i < 0 {
			break
		}
		s.endLine()
		p = p[i+1:]
	}
	return n, nil
}

func (s *stageTracker) endLine() {
	if st := matchStage(s.line); st != "" {
		s.last = st
		if m := rankLineRE.FindSubmatch(s.line); m != nil {
			if s.ranks == nil {
				s.ranks = map[int]compat.Stage{}
			}
			r, _ := strconv.Atoi(string(m[1]))
			s.ranks[r] = st
		}
	}
	s.line = s.line[:0]
}

// Stage returns the last stage seen, "" if none.
func (s *stageTracker) Stage() compat.Stage {
	if st := matchStage(s.line); st != "" {
		return st
	}
	return s.last
}

// matchStage returns the stage a line names, "" if none. Most lines (and
// all of a flood of garbage) are turned down without the regexp.
func matchStage(line []byte) compat.Stage {
	t := bytes.TrimLeft(line, " \t")
	if len(t) == 0 || (t[0] != '[' && !containsFold(t, "stage")) {
		return ""
	}
	if m := stageRE.FindSubmatch(line); m != nil {
		return compat.Stage(bytes.ToLower(m[1]))
	}
	return ""
}

// containsFold reports whether b contains the lower-case ASCII word w in
// any case.
func containsFold(b []byte, w string) bool {
	for i := 0; i+len(w) <= len(b); i++ {
		j := 0
		for j < len(w) && b[i+j]|0x20 == w[j] {
			j++
		}
		if j == len(w) {
			return true
		}
	}
	return false
}

// procSpec is one harness process to run: the keeper, which applies
// limits and runs script with args, once or once per rank (ranks, the
// keeper's RANKS argument; "" for one process).
type procSpec struct {
	python string
	script string
	args   []string // the harness's
	limits []string // the keeper's DATA and NOFILE
	ranks  string
	dir    string
	env    []string
	grace  time.Duration
	policy *policy // what the process may touch (Landlock); nil: unconfined
	mark   string  // the value of probeMarkVar in env: how its orphans are known
}

// procOutcome is how a harness process ended.
type procOutcome struct {
	startErr    error                // the process never started
	state       *os.ProcessState     // nil if it never started
	killed      bool                 // the runner killed it (ctx done: timeout or shutdown)
	stderrTail  []byte               // last LogTailMax bytes of stderr
	stdoutBytes int64                // total stdout (discarded)
	lastStage   compat.Stage         // last stage named on stderr
	rankStages  map[int]compat.Stage // each rank's last stage, for a sharded probe
	wall        time.Duration        // from start to exit
	rusage      *syscall.Rusage      // the leader's resource usage (with its reaped children), if known
	pid         int                  // the leader's pid = the group's id
	// oomKiller says whether the kernel's out-of-memory killer killed a
	// process while the probe ran ("yes", "no", "" when it cannot tell),
	// oomWords the counter's readings.
	oomKiller, oomWords string
}

// argv is the interpreter's command line: the keeper, its arguments, the
// harness's.
func (s procSpec) argv() []string {
	a := append([]string{"-I", "-u", "-B", "-c", keeper}, s.limits...)
	a = append(a, s.ranks, s.script)
	return append(a, s.args...)
}

// runProc runs spec until it exits or ctx is done. The process runs in its
// own process group, confined (spec.policy), and dies with the scanner
// (Pdeathsig). On ctx done it sends SIGTERM to the whole group, and after
// the grace period kills the whole tree. No process of the run outlives
// runProc (see proctree.go). stdout is drained and discarded; stderr's tail
// is kept. Memory use is bounded whatever the harness prints.
func runProc(ctx context.Context, spec procSpec) procOutcome {
	p, err := startProc(spec)
	if err != nil {
		return procOutcome{startErr: err}
	}
	p.drain()
	killed := p.wait(ctx)
	return p.finish(killed)
}

// proc is one running harness process.
type proc struct {
	spec           procSpec
	cmd            *exec.Cmd
	start, end     time.Time
	stdout, stderr *os.File      // read ends of the pipes
	exited         chan struct{} // closed once the leader was waited for
	tail           *tailBuffer
	stages         *stageTracker
	stdoutBytes    int64
	readers        sync.WaitGroup
}

// startProc starts spec's process, confined by its policy.
func startProc(spec procSpec) (*proc, error) {
	fd, flags := -1, uint32(0)
	if spec.policy != nil {
		var err error
		if fd, flags, err = spec.policy.ruleset(); err != nil {
			return nil, err
		}
		if fd >= 0 {
			defer unix.Close(fd)
		}
	}
	stdoutR, stdoutW, stderrR, stderrW, devnull, err := stdio()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(spec.python, spec.argv()...)
	cmd.Dir, cmd.Env = spec.dir, spec.env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, stdoutW, stderrW
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// The keeper replaces it with SIGUSR1 once it runs (then it kills
		// its tree before it dies).
		Pdeathsig: syscall.SIGKILL,
	}
	p := &proc{spec: spec, cmd: cmd, stdout: stdoutR, stderr: stderrR, exited: make(chan struct{}),
		tail: newTailBuffer(LogTailMax), stages: &stageTracker{}}
	started := make(chan error, 1)
	go p.run(fd, flags, started)
	err = <-started
	closeFiles(stdoutW, stderrW, devnull) // the child has its copies
	if err != nil {
		closeFiles(stdoutR, stderrR)
		return nil, err
	}
	return p, nil
}

// stdio opens the harness's stdout and stderr pipes and its stdin,
// /dev/null.
func stdio() (stdoutR, stdoutW, stderrR, stderrW, devnull *os.File, err error) {
	if stdoutR, stdoutW, err = os.Pipe(); err != nil {
		return
	}
	if stderrR, stderrW, err = os.Pipe(); err != nil {
		closeFiles(stdoutR, stdoutW)
		return
	}
	if devnull, err = os.Open(os.DevNull); err != nil {
		closeFiles(stdoutR, stdoutW, stderrR, stderrW)
	}
	return
}

func closeFiles(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// run starts the process and waits for it on one OS thread, locked and
// never unlocked (see confine.go): the Landlock domain and no_new_privs it
// sets on that thread pass to the child, and the child's Pdeathsig fires
// only when the thread exits, which it does only after the child.
func (p *proc) run(fd int, flags uint32, started chan<- error) {
	runtime.LockOSThread()
	if fd >= 0 {
		if err := restrictThread(fd, flags); err != nil {
			started <- err
			return
		}
	}
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		started <- err
		return
	}
	pid := p.cmd.Process.Pid
	addLeader(pid)
	started <- nil
	_ = p.cmd.Wait() // the outcome is in ProcessState
	p.end = time.Now()
	removeLeader(pid)
	close(p.exited)
}

// drain reads stdout (discarded, counted) and stderr (tail and stage kept)
// until every writer is gone.
func (p *proc) drain() {
	p.readers.Add(2)
	go func() {
		defer p.readers.Done()
		buf := make([]byte, 32<<10)
		p.stdoutBytes, _ = io.CopyBuffer(io.Discard, onlyReader{p.stdout}, buf)
	}()
	go func() {
		defer p.readers.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := p.stderr.Read(buf)
			if n > 0 {
				p.tail.Write(buf[:n])
				p.stages.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
}

// wait waits for the leader to exit. When ctx is done first it sends
// SIGTERM to the group and, after the grace period, kills the tree. It
// reports whether the runner stopped the process.
func (p *proc) wait(ctx context.Context) bool {
	select {
	case <-p.exited:
		return false
	case <-ctx.Done():
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(p.spec.grace):
		p.kill()
	}
	return true
}

// kill kills the leader's tree: the descendants first, while the leader
// (the keeper, a subreaper) still collects the orphans, then the leader,
// once it had a moment to reap them and exit by itself.
func (p *proc) kill() {
	pid := p.cmd.Process.Pid
	killDescendants(pid, p.exited)
	select {
	case <-p.exited:
	case <-time.After(time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// finish collects the outcome once the leader has exited. The keeper
// killed its tree before it exited; what is left escaped it (the keeper was
// killed itself): the rest of the group, and orphans with the run's mark
// that came to this process, a subreaper.
func (p *proc) finish(killed bool) procOutcome {
	pid := p.cmd.Process.Pid
	out := procOutcome{state: p.cmd.ProcessState, killed: killed, wall: p.end.Sub(p.start), pid: pid}
	if ru, ok := out.state.SysUsage().(*syscall.Rusage); ok {
		out.rusage = ru
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	sweepOrphans(p.spec.mark)

	// Every writer is dead now, unless one escaped everything; do not wait
	// for such a one forever.
	done := make(chan struct{})
	go func() { p.readers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		p.stdout.Close()
		p.stderr.Close()
		<-done
	}
	p.stdout.Close()
	p.stderr.Close()
	out.stdoutBytes = p.stdoutBytes
	out.stderrTail = bytes.Clone(p.tail.Bytes())
	out.lastStage = p.stages.Stage()
	out.rankStages = p.stages.ranks
	return out
}

// onlyReader hides a reader's other methods (WriterTo), so io.CopyBuffer
// uses the given buffer.
type onlyReader struct{ io.Reader }

// signalOf reports the signal that ended the process, if any.
func signalOf(st *os.ProcessState) (syscall.Signal, bool) {
	if st == nil {
		return 0, false
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return ws.Signal(), true
}

// signalNames are the names of the signals a harness dies of in practice.
var signalNames = map[syscall.Signal]string{
	syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT", syscall.SIGKILL: "SIGKILL",
	syscall.SIGBUS: "SIGBUS", syscall.SIGILL: "SIGILL", syscall.SIGFPE: "SIGFPE",
	syscall.SIGTERM: "SIGTERM", syscall.SIGTRAP: "SIGTRAP", syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGSYS: "SIGSYS", syscall.SIGINT: "SIGINT",
	syscall.SIGHUP: "SIGHUP", syscall.SIGQUIT: "SIGQUIT", syscall.SIGXFSZ: "SIGXFSZ",
}

// signalName is "SIGSEGV" for syscall.SIGSEGV, "signal 42" for an unnamed one.
func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return "signal " + strconv.Itoa(int(s))
}
