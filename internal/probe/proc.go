package probe

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// LogTailMax is the most stderr a result keeps (Result.LogTail).
const LogTailMax = 64 << 10

// preambleExit is the exit status of the limits preamble when it cannot
// apply the resource limits; the harness never ran.
const preambleExit = 97

// preamble is run with `python -I -u -B -c preamble DATA NOFILE SCRIPT ARGS…`.
// Go cannot set resource limits on a child it execs, so the child sets its
// own before it runs the harness: RLIMIT_DATA (not RLIMIT_AS: importing
// torch alone maps ~4 GiB of address space, and CUDA and PJRT reserve far
// more, while RLIMIT_DATA counts only writable private memory, which is what
// allocations use), RLIMIT_NOFILE, and RLIMIT_CORE=0. Soft and hard limits
// are both lowered, so the harness cannot raise them again. The harness's
// directory goes first on sys.path (-I leaves it off), and it runs as
// __main__ with its own argv.
const preamble = `import os, resource as R, runpy, sys
try:
    def lim(res, v):
        v = int(v)
        if v <= 0:
            return
        soft, hard = R.getrlimit(res)
        if hard != R.RLIM_INFINITY and v > hard:
            v = hard
        R.setrlimit(res, (v, v))
    lim(R.RLIMIT_DATA, sys.argv[1])
    lim(R.RLIMIT_NOFILE, sys.argv[2])
    R.setrlimit(R.RLIMIT_CORE, (0, 0))
except Exception as e:
    sys.stderr.write("scanner preamble: cannot set resource limits: %r\n" % (e,))
    sys.exit(97)
script = os.path.abspath(sys.argv[3])
sys.argv = [script] + sys.argv[4:]
sys.path.insert(0, os.path.dirname(script))
runpy.run_path(script, run_name="__main__")
`

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

// stageTracker remembers the last stage named on a line of stderr. Lines
// longer than a few hundred bytes are only matched on their start.
type stageTracker struct {
	line []byte
	last compat.Stage
}

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

// procSpec is one harness process to run.
type procSpec struct {
	python string
	args   []string // after the interpreter's own flags
	dir    string
	env    []string
	grace  time.Duration
}

// procOutcome is how a harness process ended.
type procOutcome struct {
	startErr    error            // the process never started
	state       *os.ProcessState // nil if it never started
	killed      bool             // the runner killed it (ctx done: timeout or shutdown)
	stderrTail  []byte           // last LogTailMax bytes of stderr
	stdoutBytes int64            // total stdout (discarded)
	lastStage   compat.Stage     // last stage named on stderr
	wall        time.Duration    // from start to exit
	rusage      *syscall.Rusage  // the leader's resource usage, if known
	pid         int              // the leader's pid = the group's id
}

// runProc runs spec in its own process group until it exits or ctx is done.
// On ctx done it sends SIGTERM to the whole group, then SIGKILL after the
// grace period. When the leader has exited, anything left in its group is
// killed, so no harness process outlives runProc. stdout is drained and
// discarded; stderr's tail is kept. Memory use is bounded whatever the
// harness prints.
func runProc(ctx context.Context, spec procSpec) procOutcome {
	var out procOutcome
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		out.startErr = err
		return out
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutR.Close()
		stdoutW.Close()
		out.startErr = err
		return out
	}

	cmd := exec.CommandContext(ctx, spec.python, spec.args...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = stdoutW
	cmd.Stderr = stderrW
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// If the scanner itself dies, the leader dies with it (its group is
		// then orphaned, but no longer holds the device through the leader).
		Pdeathsig: syscall.SIGKILL,
	}
	var killed atomic.Bool
	var cancelAt atomic.Int64
	cmd.Cancel = func() error {
		killed.Store(true)
		cancelAt.Store(time.Now().UnixNano())
		// The group id is the leader's pid (Setpgid with Pgid 0).
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
	// After the grace period exec sends SIGKILL to the leader; the rest of
	// the group is handled below.
	cmd.WaitDelay = spec.grace

	start := time.Now()
	err = cmd.Start()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdoutR.Close()
		stderrR.Close()
		out.startErr = err
		return out
	}
	out.pid = cmd.Process.Pid

	tail := newTailBuffer(LogTailMax)
	stages := &stageTracker{}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		n, _ := io.CopyBuffer(io.Discard, onlyReader{stdoutR}, buf)
		out.stdoutBytes = n
	}()
	go func() {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := stderrR.Read(buf)
			if n > 0 {
				tail.Write(buf[:n])
				stages.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()

	_ = cmd.Wait() // the outcome is in ProcessState
	out.wall = time.Since(start)
	out.state = cmd.ProcessState
	out.killed = killed.Load()
	if out.state != nil {
		if ru, ok := out.state.SysUsage().(*syscall.Rusage); ok {
			out.rusage = ru
		}
	}

	// Reap the rest of the group: after a cancel, give it what is left of
	// the grace period to go by itself; else kill it at once.
	pgid := out.pid
	if out.killed {
		deadline := time.Unix(0, cancelAt.Load()).Add(spec.grace)
		for time.Now().Before(deadline) && syscall.Kill(-pgid, 0) == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)

	// Every writer is dead now, unless one escaped the group (setsid); do
	// not wait for such a one forever.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		stdoutR.Close()
		stderrR.Close()
		<-done
	}
	stdoutR.Close()
	stderrR.Close()

	out.stderrTail = bytes.Clone(tail.Bytes())
	out.lastStage = stages.Stage()
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

// errNoStart reports whether err is "the interpreter does not exist".
func errNoStart(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist)
}
