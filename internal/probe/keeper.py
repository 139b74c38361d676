# The keeper: the first process of every harness run, started by the Go runner as
#   python -I -u -B -c KEEPER DATA NOFILE RANKS SCRIPT ARGS...
# It sets the resource limits (Go cannot set them on a child it execs), then forks the harness
# (SCRIPT run as __main__ with ARGS) and stays behind as its parent, so that no process of the
# run outlives it. RANKS is "" for one harness process; for a sharded probe it is JSON
# {"ranks": [{VAR: VALUE, ...}, ...], "status": PATH, "grace_s": S}: one harness process per
# rank, each with its own variables added to the environment (RANK, WORLD_SIZE, its device, ...),
# all in this process group, confinement and limits. Then:
#   - the first rank to end badly (a signal, or an exit status other than 0) ends the probe: the
#     keeper kills every other rank at once, so that none waits in a collective for a dead peer;
#   - when rank 0 ends (it writes the probe's one result), the others get grace_s to end by
#     themselves, then are killed;
#   - PATH receives, as JSON, how each rank ended by itself, in the order the keeper saw it
#     (rank, pid, exit status or signal, peak RSS), which rank ended the probe, and which ranks
#     the keeper killed; the keeper exits the way the rank that ended the probe did.
# For every run:
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

import ctypes, json, time

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
spec = json.loads(sys.argv[3]) if sys.argv[3] else None
ranks = spec["ranks"] if spec else [{}]


def start(env):
    """Forks one harness process with env added to its environment; returns its pid."""
    pid = os.fork()
    if pid:
        return pid
    # The harness: default signals, and it dies with the keeper.
    for s in (signal.SIGTERM, signal.SIGUSR1):
        signal.signal(s, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != keeper:
        os._exit(1)
    os.environ.update(env)
    script = os.path.abspath(sys.argv[4])
    sys.argv = [script] + sys.argv[5:]
    sys.path.insert(0, os.path.dirname(script))
    runpy.run_path(script, run_name="__main__")
    sys.exit(0)  # never back into the keeper's loop


def bad(status):
    return os.WIFSIGNALED(status) or os.waitstatus_to_exitcode(status) != 0


def ended(rank, pid, status, ru):
    end = {"rank": rank, "pid": pid, "exit": None, "signal": None, "max_rss_bytes": ru.ru_maxrss * 1024}
    if os.WIFSIGNALED(status):
        end["signal"] = os.WTERMSIG(status)
    else:
        end["exit"] = os.waitstatus_to_exitcode(status)
    return end


pids = {}
for r, env in enumerate(ranks):
    pids[start(env)] = r
ends, statuses, decisive, deadline = [], {}, None, None
while len(statuses) < len(ranks):
    try:
        pid, st, ru = os.wait4(-1, os.WNOHANG if deadline is not None else 0)
    except ChildProcessError:
        break
    if pid == 0:  # rank 0 is done; the others are finishing
        if time.monotonic() >= deadline:
            break
        time.sleep(0.02)
        continue
    if pid not in pids:
        continue  # a descendant orphaned to this subreaper
    r = pids[pid]
    statuses[r] = st
    ends.append(ended(r, pid, st, ru))
    if decisive is None and (r == 0 or bad(st)):
        decisive = r
        if r != 0 or len(ranks) == 1:
            break  # a rank failed: nothing is left to wait for
        deadline = time.monotonic() + float(spec.get("grace_s", 5))
killed = sorted(r for r in range(len(ranks)) if r not in statuses)
kill_tree()
if spec:
    report = {"ranks": len(ranks), "ends": ends, "decisive": decisive, "killed": killed}
    try:
        tmp = spec["status"] + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(report, fh)
        os.replace(tmp, spec["status"])
    except OSError as e:
        sys.stderr.write("scanner keeper: cannot write %s: %r\n" % (spec["status"], e))
sys.stdout.flush()
sys.stderr.flush()
status = statuses.get(decisive if decisive is not None else 0)
if status is not None and os.WIFSIGNALED(status):
    sig = os.WTERMSIG(status)
    try:
        signal.signal(sig, signal.SIG_DFL)
    except (OSError, ValueError, RuntimeError):
        pass  # SIGKILL and SIGSTOP have no handler to reset
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)
os._exit(os.waitstatus_to_exitcode(status) if status is not None else 1)
