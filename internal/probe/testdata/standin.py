"""Stand-in harness for the Go runner's tests (internal/probe).

It speaks the harness's command line (--model-dir, --model-id, ...,
--result-file; or --env-only --result-file) and misbehaves on request: the
behaviour is the part of --model-id after "standin/":

  pass          writes a passing result (message: argv, cwd, sys.path[0] as JSON)
  (--env-only)  detects cpu; any other target is device_unavailable, except with
                TPU_STANDIN_DEVICE set (say "TPU v7"): then tpu (and auto) is that TPU
  env           writes a passing result whose message is the environment and rlimits as JSON
  hang          names stage load, starts a child sleeper that ignores SIGTERM (its pid on
                stderr: "child_pids=N"), ignores SIGTERM itself, sleeps
  orphans       as hang, and also leaves a grandchild that called setsid() and ignores
                SIGTERM, whose parent has exited ("child_pids=N,M" on stderr)
  orphans-exit  starts the same two, then writes a passing result (message: child_pids=N,M)
                and exits
  orphans-killkeeper  starts the same two, then SIGKILLs its parent (the runner's keeper)
  escape        tries to write into the snapshot, its blobs and the folders around them, to
                read a file next to the cache, and to signal the scanner; writes a passing
                result whose message is what each attempt got, as JSON
  hang-after-result  writes a passing result, then hangs (ignoring SIGTERM)
  sleep         names stage load and sleeps: a harness that SIGTERM ends (its default action)
  unmarked      as hang, with two sleepers that ignore SIGTERM, lack the run's mark in their
                environment and were orphaned to the keeper: one in the run's process group,
                one in a session of its own ("child_pids=N,M")
  unmarked-killkeeper  starts the first of those (the process-group one), then SIGKILLs its
                parent (the runner's keeper) ("child_pids=N")
  segv          names stage forward, then SIGSEGV
  abort         names stage compile, then abort() (SIGABRT)
  abort-env     abort() in stage env, as a TPU runtime that CHECK-fails while starting
  sigkill       SIGKILLs itself (as the kernel's OOM killer would)
  oom           allocates past its RLIMIT_DATA, catches MemoryError, writes status oom
  oom-noresult  allocates past its RLIMIT_DATA and dies of the MemoryError
  garbage       prints 8 MiB of random bytes to stdout and to stderr, exits 1, no result
  exit0         exits 0 without a result
  badstatus     writes status "passed"
  untested      writes status "untested" (a contract word, but never a result)
  badstage      writes stage "warmup"
  claimtpu      writes target tpu whatever was asked
  wrongmode     writes mode full whatever was asked
  nan           writes a failing result with NaN and Infinity metrics (Python's json default)
  huge          writes a 2 MiB result
  notjson       writes a result file that is not JSON
  segv-after    writes a passing result, then SIGSEGV
  tpu           writes error/device_unavailable on a tpu request (as the real harness on a host without one)
  logtail       writes a failing result with a log_tail of its own, and other lines on stderr
  continuation  writes a passing result with a continuation over the caps, with control
                characters, markup and a lone surrogate in it

Sharded probes (--devices N; each rank runs this with RANK, WORLD_SIZE, ... in its environment):

  ranks-pass    every rank writes its environment's rendezvous and device variables to
                $TMPDIR/rank<R>.json; rank 0 waits for all of them and writes a passing result
                (devices_used N, sharding tp) whose message is the list, by rank, as JSON
  ranks-kill1   rank 1 names stage forward, then SIGKILLs itself; the other ranks wait for it as
                in a collective (sleep, ignoring SIGTERM)
  ranks-fail1   rank 1 writes its own failure (unsupported_op in forward) to result.rank1.json and
                exits 3; the other ranks wait as above
  ranks-linger  rank 0 writes a passing result and exits; the other ranks ignore SIGTERM and sleep
  ranks-rank0-fail  rank 0 writes a failing result (numerics) and exits; the others wait as above
"""

import errno
import json
import os
import signal
import subprocess
import sys
import tempfile
import time


def arg(name, default=None):
    a = sys.argv[1:]
    return a[a.index(name) + 1] if name in a else default


def write(result, path=None):
    path = path or arg("--result-file")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        if isinstance(result, str):
            f.write(result)
        else:
            json.dump(result, f)
    os.replace(tmp, path)


def stage(s):
    # the ranks of a sharded probe share stderr: each says whose line it is, as the harness does
    who = "[rank %s]" % os.environ["RANK"] if int(os.environ.get("WORLD_SIZE", "1")) > 1 else "[standin]"
    sys.stderr.write("%s stage=%s\n" % (who, s))
    sys.stderr.flush()


def target():
    t = arg("--target", "auto")
    return "cpu" if t == "auto" else t


def mode():
    m = arg("--mode", "auto")
    return "arch" if m == "auto" else m


def base(status, **kw):
    r = {"target": target(), "status": status, "mode": mode(),
         "runtime": {"python": sys.version.split()[0], "torch": "0.0-standin",
                     "transformers": "0.0-standin", "torch_tpu": "", "harness": "",
                     "device": "standin cpu", "device_count": 1},
         "metrics": {"load_s": 0.5, "first_forward_s": None, "forward_ms": None, "compile_s": None,
                     "tokens_per_s": None, "peak_mem_bytes": None, "max_abs_diff": 0.0,
                     "top1_agreement": 1.0},
         "tested_at": "", "revision": "wrong-revision-from-harness"}
    r.update(kw)
    return r


def allocate():
    hold = []
    while True:
        hold.append(bytearray(16 << 20))


SLEEPER = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"


def sleeper():
    """A child in the harness's process group that ignores SIGTERM; the model id is in its argv."""
    return subprocess.Popen([sys.executable, "-c", SLEEPER, arg("--model-id")]).pid


def setsid_orphan():
    """A grandchild in a session of its own, ignoring SIGTERM, whose parent has exited."""
    code = ("import os, sys\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    os.setsid()\n"
            "    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)\n"
            "    os.execv(sys.executable, [sys.executable, '-c', sys.argv[1], sys.argv[2]])\n"
            "print(pid)\n")
    out = subprocess.run([sys.executable, "-c", code, SLEEPER, arg("--model-id")], stdout=subprocess.PIPE, text=True)
    return int(out.stdout.strip())


def unmarked_orphan(new_session):
    """A sleeper whose environment lacks the run's mark and whose parent has exited (so the
    keeper, a subreaper, is its parent); in a session of its own if new_session."""
    code = ("import os, sys\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    if sys.argv[3] == '1':\n"
            "        os.setsid()\n"
            "    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)\n"
            "    env = {k: v for k, v in os.environ.items() if k != 'TORCHTPU_SCANNER_RUN'}\n"
            "    os.execve(sys.executable, [sys.executable, '-c', sys.argv[1], sys.argv[2]], env)\n"
            "print(pid)\n")
    out = subprocess.run([sys.executable, "-c", code, SLEEPER, arg("--model-id"), "1" if new_session else "0"],
                         stdout=subprocess.PIPE, text=True)
    return int(out.stdout.strip())


def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def escape(model_dir):
    """What each forbidden (and each allowed) access gets: "ok" or the errno's name."""
    repo = os.path.dirname(os.path.dirname(model_dir))  # models--org--name
    cache = os.path.dirname(repo)

    def create(path):
        with open(path, "w") as f:
            f.write("planted")

    def append(path):
        with open(path, "a") as f:
            f.write("tampered")

    def read(path):
        with open(path) as f:
            f.read()

    scanner = int(open("/proc/%d/stat" % os.getppid()).read().rsplit(")", 1)[1].split()[1])
    return {
        "read_snapshot_file": attempt(lambda: read(os.path.join(model_dir, "config.json"))),
        "append_snapshot_file": attempt(lambda: append(os.path.join(model_dir, "config.json"))),
        "create_in_snapshot": attempt(lambda: create(os.path.join(model_dir, "planted.json"))),
        "create_in_blobs": attempt(lambda: create(os.path.join(repo, "blobs", "planted"))),
        "create_in_cache": attempt(lambda: create(os.path.join(cache, "planted"))),
        "read_next_to_cache": attempt(lambda: read(os.path.join(cache, "token"))),
        "create_in_tmp": attempt(lambda: create(os.path.join("/tmp", "standin-planted-%d" % os.getpid()))),
        "create_in_TMPDIR": attempt(lambda: create(os.path.join(os.environ["TMPDIR"], "ok"))),
        "create_in_HOME": attempt(lambda: create(os.path.join(os.environ["HOME"], "ok"))),
        "write_dev_null": attempt(lambda: append("/dev/null")),
        "signal_scanner": attempt(lambda: os.kill(scanner, 0)),
    }


def confined():
    """Whether Landlock stops this process creating a file in /tmp (outside its run folder),
    as it stopped CUDA's driver on the H200 VM of the first device run."""
    try:
        fd, path = tempfile.mkstemp(dir="/tmp", prefix="standin-confined-")
    except OSError:
        return True
    os.close(fd)
    os.unlink(path)
    return False


def main():
    if "--env-only" in sys.argv:
        if os.environ.get("TPU_STANDIN_ENV_HANG") == "1":  # a runtime that never answers
            time.sleep(3600)
        tpu = os.environ.get("TPU_STANDIN_DEVICE", "")
        # a TPU whose runtime, like CUDA's driver on the H200 VM, needs files Landlock does not name
        google = os.environ.get("TPU_STANDIN_TPU_OUTSIDE_LANDLOCK") == "1"
        if google and not confined():
            tpu = "standin TPU that Landlock breaks"
        t = "tpu" if tpu and arg("--target", "auto") == "auto" else target()
        r = {"target": t, "status": "pass",
             "runtime": {"python": sys.version.split()[0], "torch": "0.0-standin",
                         "transformers": "0.0-standin", "torch_tpu": "", "harness": "",
                         "device": tpu if tpu and t == "tpu" else "standin " + t, "device_count": 1},
             "google_torch_tpu": google and arg("--target", "auto") in ("tpu", "auto")}
        if t == "cuda" and os.environ.get("TPU_STANDIN_CUDA_OUTSIDE_LANDLOCK") == "1" and not confined():
            r["runtime"].update(device="standin GPU that Landlock breaks")
        elif t != "cpu" and not (tpu and t == "tpu"):
            r["runtime"].update(device="", device_count=0)
            r.update(status="error", failure_class="device_unavailable",
                     message="target %s requested but not usable on this host" % t)
        write(r)
        return 0
    what = arg("--model-id", "").split("/", 1)[-1].split(".", 1)[0]
    model_dir = arg("--model-dir")
    stage("env")
    if what.startswith("ranks-"):
        return ranks(what)
    if what == "pass":
        stage("load")
        msg = json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0]})
        write(base("pass", stage="generate", message=msg))
    elif what == "env":
        import resource as R
        lim = {k: R.getrlimit(getattr(R, "RLIMIT_" + k)) for k in ("DATA", "NOFILE", "CORE")}
        write(base("pass", message=json.dumps({"env": dict(os.environ), "rlimit": lim})))
    elif what == "abort-env":
        os.abort()
    elif what == "hang":
        stage("load")
        pids = [sleeper()]
        sys.stderr.write("child_pids=%s\n" % ",".join(map(str, pids)))
        sys.stderr.flush()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(300)
    elif what in ("orphans", "orphans-exit", "orphans-killkeeper"):
        stage("load")
        pids = [sleeper(), setsid_orphan()]
        sys.stderr.write("child_pids=%s\n" % ",".join(map(str, pids)))
        sys.stderr.flush()
        if what == "orphans-exit":
            write(base("pass", stage="generate", message="child_pids=%s" % ",".join(map(str, pids))))
            return 0
        if what == "orphans-killkeeper":
            os.kill(os.getppid(), signal.SIGKILL)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(300)
    elif what == "sleep":
        stage("load")
        time.sleep(300)
    elif what in ("unmarked", "unmarked-killkeeper"):
        stage("load")
        pids = [unmarked_orphan(False)]
        if what == "unmarked":
            pids.append(unmarked_orphan(True))
        sys.stderr.write("child_pids=%s\n" % ",".join(map(str, pids)))
        sys.stderr.flush()
        if what == "unmarked-killkeeper":
            os.kill(os.getppid(), signal.SIGKILL)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(300)
    elif what == "escape":
        write(base("pass", stage="generate", message=json.dumps(escape(model_dir))))
    elif what == "hang-after-result":
        write(base("pass", stage="generate"))
        stage("teardown")
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(300)
    elif what == "segv":
        stage("forward")
        os.kill(os.getpid(), signal.SIGSEGV)
    elif what == "abort":
        stage("compile")
        os.abort()
    elif what == "sigkill":
        stage("load")
        os.kill(os.getpid(), signal.SIGKILL)
    elif what == "oom":
        stage("load")
        try:
            allocate()
        except MemoryError:
            write(base("oom", stage="load", failure_class="oom", message="MemoryError while loading"))
    elif what == "oom-noresult":
        stage("load")
        allocate()
    elif what == "garbage":
        chunk = 1 << 16
        for _ in range((8 << 20) // chunk):
            os.write(1, os.urandom(chunk))
            os.write(2, os.urandom(chunk))
        sys.stderr.write("\nlast words of the garbage harness\n")
        return 1
    elif what == "exit0":
        return 0
    elif what == "badstatus":
        write(base("passed"))
    elif what == "untested":
        write(base("untested"))
    elif what == "badstage":
        write(base("fail", stage="warmup", failure_class="other"))
    elif what == "claimtpu":
        write(base("pass", target="tpu"))
    elif what == "wrongmode":
        write(base("pass", mode="full"))
    elif what == "nan":
        r = base("fail", stage="numerics", failure_class="numerics_mismatch", message="NaN in logits")
        r["metrics"]["max_abs_diff"] = float("nan")
        r["metrics"]["forward_ms"] = float("inf")
        write(json.dumps(r))
    elif what == "huge":
        write(base("pass", message="x" * (2 << 20)))
    elif what == "notjson":
        write("this is not json {")
    elif what == "segv-after":
        write(base("pass", stage="generate"))
        os.kill(os.getpid(), signal.SIGSEGV)
    elif what == "tpu":
        write(base("error", stage="env", failure_class="device_unavailable",
                   message="no TPU on this host (torch_tpu not importable)"))
    elif what == "logtail":
        sys.stderr.write("scanner-visible stderr line\n")
        write(base("fail", stage="forward", failure_class="unsupported_op", op="aten::_fft_r2c",
                   log_tail="Traceback (harness's own)\nNotImplementedError: aten::_fft_r2c\n"))
    elif what == "continuation":
        text = "<script>alert(1)</script>\x00\x1b[31m\ud800 ok\n" + "é" * 2000
        write(base("pass", stage="generate", continuation={"prompt": "P\x07" + "p" * 400, "text": text}))
    else:
        sys.stderr.write("standin: unknown behaviour %r\n" % what)
        return 2
    return 0


RANK_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS",
             "TPU_VISIBLE_DEVICES", "TPU_VISIBLE_CHIPS", "TORCH_TPU_SLICEBUILDER_ADDRESSES", "TORCH_TPU_TOPOLOGY",
             "TORCH_TPU_XPROF_SESSION_ID", "CUDA_VISIBLE_DEVICES")


def wait_as_in_a_collective():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(300)


def ranks(what):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    sharded = dict(devices_used=world, sharding="tp")
    if what == "ranks-pass":
        mine = {k: os.environ.get(k) for k in RANK_VARS}
        with open(os.path.join(os.environ["TMPDIR"], "rank%d.json.tmp" % rank), "w") as f:
            json.dump(mine, f)
        os.replace(os.path.join(os.environ["TMPDIR"], "rank%d.json.tmp" % rank),
                   os.path.join(os.environ["TMPDIR"], "rank%d.json" % rank))
        if rank != 0:
            return 0
        paths = [os.path.join(os.environ["TMPDIR"], "rank%d.json" % r) for r in range(world)]
        while not all(os.path.exists(p) for p in paths):
            time.sleep(0.01)
        seen = [json.load(open(p)) for p in paths]
        write(base("pass", stage="generate", message=json.dumps(seen), **sharded))
    elif what == "ranks-kill1":
        if rank == 1:
            stage("forward")
            time.sleep(0.3)
            os.kill(os.getpid(), signal.SIGKILL)
        wait_as_in_a_collective()
    elif what == "ranks-fail1":
        if rank == 1:
            stage("forward")
            path = arg("--result-file")
            root, ext = os.path.splitext(path)
            write(base("fail", stage="forward", failure_class="unsupported_op", op="aten::standin",
                       signature="unsupported_op:aten::standin", message="NotImplementedError: aten::standin",
                       **sharded), root + ".rank1" + ext)
            return 3
        wait_as_in_a_collective()
    elif what == "ranks-linger":
        if rank == 0:
            write(base("pass", stage="generate", **sharded))
            return 0
        wait_as_in_a_collective()
    elif what == "ranks-rank0-fail":
        if rank == 0:
            stage("numerics")
            write(base("fail", stage="numerics", failure_class="numerics_mismatch", message="max_abs_diff 9",
                       **sharded))
            return 0
        wait_as_in_a_collective()
    return 0


if __name__ == "__main__":
    sys.exit(main())
