"""Stand-in harness for the scanner's process tests (cmd/scanner).

It speaks the harness's command line and writes a passing arch-mode result
on cpu after a pause; the model id says how to behave:

  .../hang-*   ignores SIGTERM and sleeps (the scanner must kill it); the
               tests find it by its command line
  .../warn-*   passes, then exits 3 (the runner logs a warning)
  .../sleep-MS-*  sleeps MS milliseconds, then passes (the fleet benchmark)
  .../timed-*  passes like anything else, with a message that says when it ran and
               on which device: {"start": t, "end": t, "tpu_visible_devices": ...,
               "cuda_visible_devices": ...} (times from time.time()); as the ranks of a
               sharded probe, each rank notes its own in $TMPDIR and rank 0 reports the
               earliest start, the latest end, every rank's device ("0,1") and "ranks"
  anything else  sleeps 0.6 s, then passes

Ranks of a sharded probe (RANK, WORLD_SIZE in the environment) other than 0 write no
result; rank 0's says devices_used WORLD_SIZE and sharding tp.

A standin_runtime.json next to this script (tests copy the script to make
one) changes the runtime it reports, {"runtime": {...}}, and lists models
that fail on it, {"fail": ["org/name", ...]}: two copies make two runtimes.
"""

import json
import os
import signal
import sys
import time

STARTED = time.time()


def arg(name, default=None):
    a = sys.argv[1:]
    return a[a.index(name) + 1] if name in a else default


def write(result):
    path = arg("--result-file")
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(path + ".tmp", path)


RUNTIME = {"python": "3", "torch": "standin", "transformers": "standin", "torch_tpu": "",
           "harness": "standin-1", "device": "cpu", "device_count": 1}
FAIL = set()
SIDECAR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standin_runtime.json")
if os.path.exists(SIDECAR):
    with open(SIDECAR) as f:
        side = json.load(f)
    RUNTIME.update(side.get("runtime", {}))
    FAIL = set(side.get("fail", []))

if "--env-only" in sys.argv:
    write({"target": "cpu", "status": "pass", "runtime": RUNTIME, "metrics": {}})
    sys.exit(0)

model = arg("--model-id")
RANK, WORLD = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
SHARDED = {"devices_used": WORLD, "sharding": "tp"} if WORLD > 1 else {}
if RANK != 0 and "/timed-" not in model:
    sys.exit(0)  # rank 0 answers for the group
if "/hang-" in model:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.stderr.write("stage=load start\n")
    sys.stderr.flush()
    time.sleep(600)

pause = 0.6
name = model.split("/")[-1]
if name.startswith("sleep-"):
    pause = int(name.split("-")[1]) / 1000
time.sleep(pause)
if model in FAIL:
    write({
        "target": "cpu", "status": "fail", "stage": "forward", "failure_class": "unsupported_op",
        "op": "aten::standin", "reason": None, "signature": "unsupported_op:aten::standin",
        "message": "NotImplementedError: aten::standin", "mode": arg("--mode"),
        "revision": arg("--revision"), "tested_at": "", "duration_s": 0.6, "runtime": RUNTIME,
        "metrics": {"load_s": 0.1, "first_forward_s": None, "forward_ms": None, "compile_s": None,
                    "tokens_per_s": None, "peak_mem_bytes": None, "max_abs_diff": None, "top1_agreement": None},
        "repro": "",
    })
    sys.exit(0)
message = None
if "/timed-" in model and WORLD > 1:
    mine = os.path.join(os.environ["TMPDIR"], "rank%d.json" % RANK)
    with open(mine + ".tmp", "w") as f:
        json.dump({"start": STARTED, "end": time.time(), "tpu": os.environ.get("TPU_VISIBLE_DEVICES"),
                   "cuda": os.environ.get("CUDA_VISIBLE_DEVICES")}, f)
    os.replace(mine + ".tmp", mine)
    if RANK != 0:
        sys.exit(0)
    paths = [os.path.join(os.environ["TMPDIR"], "rank%d.json" % r) for r in range(WORLD)]
    while not all(os.path.exists(p) for p in paths):
        time.sleep(0.01)
    ranks = [json.load(open(p)) for p in paths]
    message = json.dumps({"start": min(r["start"] for r in ranks), "end": time.time(), "ranks": WORLD,
                          "tpu_visible_devices": ",".join(str(r["tpu"]) for r in ranks),
                          "cuda_visible_devices": ",".join(str(r["cuda"]) for r in ranks)})
elif "/timed-" in model:
    message = json.dumps({"start": STARTED, "end": time.time(),
                          "tpu_visible_devices": os.environ.get("TPU_VISIBLE_DEVICES"),
                          "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")})
write({
    "target": "cpu", "status": "pass", "stage": "generate", "failure_class": None, "op": None,
    "reason": None, "signature": None, "message": message, "mode": arg("--mode"),
    "revision": arg("--revision"), "tested_at": "", "duration_s": pause, "runtime": RUNTIME,
    "metrics": {"load_s": 0.1, "first_forward_s": 0.1, "forward_ms": 1.0, "compile_s": None,
                "tokens_per_s": None, "peak_mem_bytes": None, "max_abs_diff": 0.0, "top1_agreement": 1.0},
    "repro": "", **SHARDED,
})
if "/warn-" in model:
    sys.exit(3)
