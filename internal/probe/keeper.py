# The keeper: the first process of every harness run, started by the Go runner as
#   python -I -u -B -c KEEPER DATA NOFILE SCRIPT ARGS...
# It sets the resource limits (Go cannot set them on a child it execs), then forks the harness
# (SCRIPT run as __main__ with ARGS) and stays behind as its parent, so that no process of the
# run outlives it:
#   - it is a child subreaper: a descendant whose parent dies (a setsid() grandchild, a
#     daemon) is re-parented to the keeper, not to init, so the whole tree stays below it;
#   - when the harness ends, it SIGKILLs every descendant left, reaps them, and exits the way
#     the harness did (same exit status, or the same signal), so the runner's view of "the
#     leader's exit" is the harness's;
#   - when the scanner dies (even by SIGKILL), the kernel sends the keeper SIGUSR1
#     (PR_SET_PDEATHSIG), and the keeper kills the tree and exits. The harness itself gets
#     SIGKILL when the keeper dies.
# The keeper ignores SIGTERM and SIGINT: the runner's SIGTERM to the process group is for the
# harness; the keeper stays to clean up after it. It is this module's only job to keep the tree
# together; the Go runner (proctree.go) kills the tree from outside on a timeout.
import os, resource as R, runpy, signal, sys
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
    sys.stderr.write("scanner keeper: cannot set resource limits: %r\n" % (e,))
    sys.exit(97)

import ctypes, time

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
libc = ctypes.CDLL(None, use_errno=True)
scanner = os.getppid()


def descendants():
    """Live processes below this one, from /proc (zombies are only reaped)."""
    me, kids = os.getpid(), {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                st = f.read()
            fields = st[st.rindex(b")") + 2:].split()
            kids.setdefault(int(fields[1]), []).append((int(name), fields[0]))
        except (OSError, ValueError, IndexError):
            continue
    out, todo = [], [me]
    while todo:
        for pid, state in kids.get(todo.pop(), ()):
            todo.append(pid)
            if state != b"Z":
                out.append(pid)
    return out


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_tree():
    """SIGKILLs every descendant until none is left (orphans of the killed come to this
    subreaper, and are found on the next round), then reaps them."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        pids = descendants()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        reap()
        time.sleep(0.01)
    reap()


def scanner_gone(signum, frame):
    kill_tree()
    os._exit(1)


signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGUSR1, scanner_gone)
libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
libc.prctl(PR_SET_PDEATHSIG, signal.SIGUSR1, 0, 0, 0)
if os.getppid() != scanner:  # the scanner died before the prctl
    os._exit(1)

keeper = os.getpid()
child = os.fork()
if child == 0:
    # The harness: default signals, and it dies with the keeper.
    for s in (signal.SIGTERM, signal.SIGUSR1):
        signal.signal(s, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != keeper:
        os._exit(1)
    del libc, ctypes
    script = os.path.abspath(sys.argv[3])
    sys.argv = [script] + sys.argv[4:]
    sys.path.insert(0, os.path.dirname(script))
    runpy.run_path(script, run_name="__main__")
else:
    status = None
    while status is None:
        try:
            pid, st = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == child:
            status = st
    kill_tree()
    sys.stdout.flush()
    sys.stderr.flush()
    if status is not None and os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            pass  # SIGKILL and SIGSTOP have no handler to reset
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if status is not None else 1)
