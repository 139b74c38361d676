"""Is a TPU usable here? The env stage's TPU check, run where a dying TPU runtime is an answer.

Google's torch_tpu (0.2.0, from PyPI) cannot be asked in the harness's own process:

* Importing it binds its C++ glue, which registers TorchTPU's device guard with torch. From then on
  torch may start the TPU runtime for work that never touches a TPU (the autograd engine counts every
  registered device before a backward; tpu_hooks.cc TpuDeviceGuardImpl::deviceCount starts PjRt), and
  libtpu, on a host without the GCE metadata server, retries each of its ``tpu-env`` keys 30 times,
  about 29 s per key. A cpu fallback must therefore run in a process that never imported it.
* When the PCI scan finds a chip but the runtime cannot start (the chip held by another process, a
  driver or Landlock denial), libtpu CHECK-fails and raises SIGABRT on the first op (compilation.cc
  "Failed to create default compilation context"), which no ``except`` catches.

So the env stage (harness.probe_torch_tpu) asks in three steps, cheapest first:

1. ``scan_pci``: the PCI scan torch_tpu itself makes before it registers the "tpu" device
   (torch_tpu/_internal/utils/hardware.py _scan_pci_tpus: Google's vendor id 0x1ae0, a TPU device id,
   an IOMMU group present under /dev/vfio). No chip there: no TPU, and torch_tpu is never imported.
2. ``runtime_env``: with a chip, libtpu reads its topology from the metadata server's ``tpu-env``
   unless TPU_SKIP_MDS_QUERY is set; where that server does not answer (``metadata_has_tpu_env``),
   the runtime runs as one host (TPU_SKIP_MDS_QUERY=1, worker 0 named localhost), which is what the
   scanner runs: one process per chip of this host.
3. ``run_check``: this file run as a script in a child process (``python -I -u -B harness_tpu.py
   RESULT``): it loads torch_tpu through its ``torch.backends`` entry point, runs ``first_op`` and
   writes what it found. A child that dies (SIGABRT) or outlives ``timeout`` is an answer too, with
   libtpu's last meaningful line (``libtpu_last_line``). Only a child that ran the op lets the harness
   load torch_tpu itself.

Only torch_tpu 0.2.0's public API is used (tests/test_tpu_api.py reads its registry): the device is
known by ``torch.device("tpu")``, its name by ``torch.tpu.get_device_name()``, its count by
``torch.accelerator.device_count()``; ``torch.tpu.device_count()`` and ``synchronize()`` are internal
with torch >= 2.11 and raise when called from user code.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

# torch_tpu/_internal/utils/hardware.py: Google's PCI vendor id and the device ids of its TPUs.
GOOGLE_PCI_VENDOR = "0x1ae0"
TPU_PCI_DEVICES = {"0x005e": "TPU v4", "0x0062": "TPU v5p", "0x0063": "TPU v5e", "0x006f": "TPU v6e",
                   "0x0076": "TPU v7"}

# The metadata server libtpu asks for its topology (libtpu.so: ".../computeMetadata/v1/instance/attributes/"
# and the "tpu-env" attribute), by address: a host without it must not wait for a name lookup either.
METADATA_SERVER = "169.254.169.254"
METADATA_TPU_ENV_URL = f"http://{METADATA_SERVER}/computeMetadata/v1/instance/attributes/tpu-env"
METADATA_TIMEOUT_S = 2.0

# How long the child may take from loading torch_tpu to the end of its first op (libtpu's start, where it
# waits for a metadata server). The env stage ends within about a minute with it on a host that imports
# torch in seconds; importing torch before that has its own allowance, IMPORT_TIMEOUT_S, so that a busy
# host is not mistaken for a runtime that waits.
CHECK_TIMEOUT_S = 50.0
IMPORT_TIMEOUT_S = 120.0
STEP_IMPORT = "importing torch"

# The most of the child's stderr kept (its tail) and echoed to the harness's own stderr.
STDERR_TAIL = 64 << 10
ECHO_TAIL = 4 << 10


@dataclasses.dataclass
class PciScan:
    """What the PCI bus shows: chips torch_tpu would count (a TPU device id, exposed through VFIO),
    TPUs on the bus it would not count (no VFIO group), and Google devices with an unknown id behind
    VFIO (a newer generation: only torch_tpu can tell)."""

    chips: int = 0
    unexposed: int = 0
    unknown: int = 0
    name: str = ""

    def none(self) -> bool:
        """True when torch_tpu's own scan cannot count a chip: it registers no "tpu" device then."""
        return self.chips == 0 and self.unknown == 0

    def describe(self) -> str:
        s = f"the PCI scan counted {self.chips} TPU chip{'' if self.chips == 1 else 's'}"
        if self.unexposed:
            s += f" ({self.unexposed} TPU device(s) on the bus not exposed through /dev/vfio, which torch_tpu needs)"
        if self.unknown:
            s += f" and {self.unknown} unknown Google device(s) behind /dev/vfio"
        return s


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def scan_pci(root: str = "/") -> PciScan:
    """The PCI scan of torch_tpu's hardware.py, under root (a test gives a fake tree)."""
    scan = PciScan()
    devices = os.path.join(root, "sys", "bus", "pci", "devices")
    try:
        entries = sorted(os.listdir(devices))
    except OSError:
        return scan
    for entry in entries:
        dev = os.path.join(devices, entry)
        if _read(os.path.join(dev, "vendor")).lower() != GOOGLE_PCI_VENDOR:
            continue
        device_id = _read(os.path.join(dev, "device")).lower()
        try:
            group = os.path.basename(os.readlink(os.path.join(dev, "iommu_group")))
            exposed = os.path.exists(os.path.join(root, "dev", "vfio", group))
        except OSError:
            exposed = False
        if device_id in TPU_PCI_DEVICES:
            if exposed:
                scan.chips += 1
                scan.name = scan.name or TPU_PCI_DEVICES[device_id]
            else:
                scan.unexposed += 1
        elif exposed:
            scan.unknown += 1
    return scan


def metadata_has_tpu_env(url: str = METADATA_TPU_ENV_URL, timeout: float = METADATA_TIMEOUT_S) -> bool:
    """Whether the GCE metadata server answers libtpu's question (the tpu-env attribute) within timeout."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    req = urllib.request.Request(url, headers={"Metadata-Flavor": "Google"})
    try:
        with opener.open(req, timeout=timeout) as resp:
            return resp.status == 200 and resp.headers.get("Metadata-Flavor") == "Google"
    except Exception:  # noqa: BLE001 - refused, unreachable, 403/404, a timeout: no answer
        return False


def runtime_env(environ, chips: int, metadata_ok) -> dict:
    """The variables to add so that libtpu need not wait for a metadata server that will not answer.

    Nothing without a chip (the runtime does not start), nothing when the operator set
    TPU_SKIP_MDS_QUERY (GKE sets it with the topology), nothing when the server has tpu-env
    (metadata_ok, called only when the answer matters). Otherwise one host: TPU_SKIP_MDS_QUERY=1,
    worker 0 named localhost, keeping any of these the environment already has."""
    if chips <= 0 or "TPU_SKIP_MDS_QUERY" in environ or metadata_ok():
        return {}
    want = {"TPU_SKIP_MDS_QUERY": "1", "TPU_WORKER_ID": "0", "TPU_WORKER_HOSTNAMES": "localhost"}
    return {k: v for k, v in want.items() if k not in environ}


# Lines of libtpu's and abseil's output that say nothing about the failure: stack traces and the
# crash handler's own log, source locations, banners, informational log lines.
_NOISE = re.compile(
    r"""^(
        \s*@\s|\s*PC:\s*@|\*\*\*.*\*\*\*|===.*===|https?://\S*symbolize|
        [\w./-]+\.(cc|h|cpp|c|py):\d+$|
        WARNING:\ (All\ log\ messages|Logging\ before)|
        [IW]\d{4}\ [\d:.]+\s+\d+\s+\S+:\d+\]|
        [EF]\d{4}\ [\d:.]+\s+\d+\s+\S+:\d+\]\s+RAW:|
        \[tpu\ check\]|
        Fatal\ Python\ error|Current\ thread|Thread\ 0x|\s+File\ "|Extension\ modules:
    )""",
    re.VERBOSE,
)
_GLOG = re.compile(r"^([EF])\d{4} [\d:.]+\s+\d+\s+(\S+:\d+\].*)$")


def libtpu_last_line(text: str) -> str:
    """libtpu's last meaningful line in a dead or stuck runtime's stderr: its last fatal (F) log
    line, else its last error (E) line, else the last line that is not noise, without the log
    prefix's date, time and thread ("compilation.cc:81] Check failed: ...")."""
    lines = [l.rstrip() for l in text.splitlines() if l.strip()]
    for level in ("F", "E"):
        for line in reversed(lines):
            m = _GLOG.match(line)
            if m and m.group(1) == level and not _NOISE.match(line):
                return m.group(2)
    for line in reversed(lines):
        if not _NOISE.match(line):
            return line.strip()
    return ""


def signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _steps(errpath: str) -> list:
    """The child's progress lines so far ("[tpu check] STEP")."""
    try:
        with open(errpath, "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return []
    return re.findall(r"^\[tpu check\] (.+)$", text, re.M)


def run_check(python: str, timeout: float = CHECK_TIMEOUT_S, env=None,
              import_timeout: float = IMPORT_TIMEOUT_S) -> dict:
    """Run this file as the child with python; its answer, or how it ended without one.

    The child gets import_timeout s to import torch, then timeout s from loading torch_tpu to the end
    of its first op. The answer is the child's JSON (see child_main), plus "stderr" (its tail) and,
    when it wrote nothing, "died" (the signal's name or "exit status N") or "timed_out" (the limit it
    ran past when it was killed), each with "step" (what it was doing, from its progress lines)."""
    with tempfile.TemporaryDirectory(prefix="tpu-check-") as tmp:
        result = os.path.join(tmp, "result.json")
        errpath = os.path.join(tmp, "stderr")
        timed_out = 0.0
        with open(errpath, "wb") as err:
            p = subprocess.Popen([python, "-I", "-u", "-B", os.path.abspath(__file__), result],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                 env=env, cwd=tmp)
            start, phase_start, importing = time.monotonic(), None, True
            while p.poll() is None:
                now = time.monotonic()
                if importing and (_steps(errpath) or [STEP_IMPORT])[-1] != STEP_IMPORT:
                    importing, phase_start = False, now
                if importing and now - start > import_timeout:
                    timed_out = import_timeout
                elif not importing and now - phase_start > timeout:
                    timed_out = timeout
                if timed_out:
                    p.kill()
                    p.wait()
                    break
                time.sleep(0.1)
        with open(errpath, "rb") as fh:
            fh.seek(max(0, os.path.getsize(errpath) - STDERR_TAIL))
            stderr = fh.read().decode("utf-8", "replace")
        out = {}
        if not timed_out and os.path.exists(result):
            with open(result, encoding="utf-8") as fh:
                out = json.load(fh)
        steps = _steps(errpath)
    out["stderr"] = stderr
    out.setdefault("step", steps[-1] if steps else "starting")
    if timed_out:
        out["timed_out"] = timed_out
    elif "registered" not in out:
        out["died"] = signal_name(p.returncode) if p.returncode < 0 else f"exit status {p.returncode}"
    return out


def describe(res: dict, timeout: float = CHECK_TIMEOUT_S) -> str:
    """Why run_check's answer is no usable TPU (res["available"] false), in one line."""
    last = libtpu_last_line(res.get("stderr", ""))
    if res.get("timed_out") and res["step"] in (STEP_IMPORT, "starting"):
        return (f"the TPU check did not import torch within {res['timed_out']:g} s: the host is too busy "
                "to tell whether a TPU is usable")
    if res.get("timed_out"):
        return (f"the TPU check did not finish within {res['timed_out']:g} s ({res['step']}): libtpu waits for "
                f"the GCE metadata server ({METADATA_SERVER}) on a host without one; set TPU_SKIP_MDS_QUERY=1 "
                "and the TPU_* topology variables for this host" + (f"; its last line: {last}" if last else ""))
    if res.get("died"):
        return f"the TPU runtime died of {res['died']} ({res['step']})" + (f": {last}" if last else "")
    return res.get("message") or "the TPU check gave no reason"


# --- helpers both processes use ----------------------------------------------------------------------

def torch_tpu_loader():
    """The function torch itself would call to load torch_tpu: its "torch.backends" entry point
    (``torch_tpu = torch_tpu._loader:load``; torch calls it in torch/__init__.py _import_device_backends),
    else torch_tpu._loader.load. Resolving it imports torch_tpu and its compiled glue: an ABI mismatch
    between the pinned torch and the torch_tpu build raises here (torch_tpu/_versioned_so_loader.py)."""
    from importlib import metadata

    try:
        eps = list(metadata.entry_points(group="torch.backends"))
    except Exception:  # noqa: BLE001 - broken metadata elsewhere must not hide torch_tpu
        eps = []
    for ep in eps:
        if ep.name == "torch_tpu" or ep.value.split(":")[0] == "torch_tpu._loader":
            return ep.load()
    from torch_tpu import _loader  # type: ignore

    return _loader.load


def registered(torch) -> bool:
    """Whether torch knows the "tpu" device: torch_tpu's loader registers it only when its PCI scan
    counts a chip (torch_tpu/_loader.py load)."""
    try:
        torch.device("tpu")
    except RuntimeError:
        return False
    return True


def first_op(torch) -> None:
    """Prove the TPU runtime usable: one tiny op, materialised on the host, then is_initialized().

    torch_tpu's device is lazy: loading it does not start the PjRt runtime (torch_tpu/_loader.py
    _init_device_impl), and an error at that start is logged, not raised, to resurface at
    model.to("tpu"); work is deferred until materialised, hence the .cpu()."""
    out = torch.ones(1, device="tpu").add(1).cpu()
    if float(out.reshape(-1)[0]) != 2.0:
        raise RuntimeError(f"the TPU computed 1 + 1 = {float(out.reshape(-1)[0])}")
    if not torch.tpu.is_initialized():
        raise RuntimeError("torch.tpu.is_initialized() is False after an op ran on the TPU")


def _short(e: BaseException) -> str:
    msg = " ".join(str(e).split()) or type(e).__name__
    return f"{type(e).__name__}: {msg}"[:500]


# --- the child ------------------------------------------------------------------------------------------

def child_main(result_path: str) -> int:
    """Load torch_tpu and run the first op; write {"registered", "available", "message", "device",
    "count"}. Progress lines on stderr ("[tpu check] STEP") say how far a child that died got."""
    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # load torch_tpu below, not inside `import torch`

    def step(s):
        print(f"[tpu check] {s}", file=sys.stderr, flush=True)

    def done(out):
        with open(result_path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(out, fh)
        os.replace(result_path + ".tmp", result_path)
        return 0

    step(STEP_IMPORT)
    import torch

    step("loading torch_tpu")
    try:
        torch_tpu_loader()()
    except Exception as e:  # noqa: BLE001 - whatever the loader raises is the reason
        return done({"registered": False, "available": False, "message": f"torch_tpu failed to load: {_short(e)}"})
    if not registered(torch):
        return done({"registered": False, "available": False, "message": ""})
    step("running the first op on the TPU")
    try:
        first_op(torch)
    except Exception as e:  # noqa: BLE001
        return done({"registered": True, "available": False,
                     "message": "the TPU runtime failed its first op (torch.ones(1, device='tpu').add(1).cpu()): "
                                + _short(e)})
    out = {"registered": True, "available": True, "message": "", "device": "", "count": None}
    try:
        out["device"] = str(torch.tpu.get_device_name())
        out["count"] = int(torch.accelerator.device_count())
    except Exception as e:  # noqa: BLE001 - the op ran: names are extras
        out["message"] = f"device name or count unknown: {_short(e)}"
    return done(out)


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1]))
