"""Stand-in harness for the Go runner's tests (internal/probe).

It speaks the harness's command line (--model-dir, --model-id, ...,
--result-file; or --env-only --result-file) and misbehaves on request: the
behaviour is the part of --model-id after "standin/":

  pass          writes a passing result (message: argv, cwd, sys.path[0] as JSON)
  (--env-only)  detects cpu; any other target is device_unavailable, except with
                TPU_STANDIN_DEVICE set (say "TPU v7"): then tpu (and auto) is that TPU
  env           writes a passing result whose message is the environment and rlimits as JSON
  hang          names stage load, starts a grandchild sleeper that ignores SIGTERM
                (pid in MODEL_DIR/grandchild.pid), ignores SIGTERM itself, sleeps
  hang-after-result  writes a passing result, then hangs (ignoring SIGTERM)
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
"""

import json
import os
import signal
import subprocess
import sys
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
    sys.stderr.write("[standin] stage=%s\n" % s)
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


def main():
    if "--env-only" in sys.argv:
        tpu = os.environ.get("TPU_STANDIN_DEVICE", "")
        t = "tpu" if tpu and arg("--target", "auto") == "auto" else target()
        r = {"target": t, "status": "pass",
             "runtime": {"python": sys.version.split()[0], "torch": "0.0-standin",
                         "transformers": "0.0-standin", "torch_tpu": "", "harness": "",
                         "device": tpu if tpu and t == "tpu" else "standin " + t, "device_count": 1}}
        if t != "cpu" and not (tpu and t == "tpu"):
            r["runtime"].update(device="", device_count=0)
            r.update(status="error", failure_class="device_unavailable",
                     message="target %s requested but not usable on this host" % t)
        write(r)
        return 0
    what = arg("--model-id", "").split("/", 1)[-1]
    model_dir = arg("--model-dir")
    stage("env")
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
        child = subprocess.Popen([sys.executable, "-c",
                                  "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"])
        with open(os.path.join(model_dir, "grandchild.pid.tmp"), "w") as f:
            f.write(str(child.pid))
        os.replace(os.path.join(model_dir, "grandchild.pid.tmp"), os.path.join(model_dir, "grandchild.pid"))
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(300)
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
    else:
        sys.stderr.write("standin: unknown behaviour %r\n" % what)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
