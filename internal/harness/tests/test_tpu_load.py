"""Loading torch_tpu and proving a TPU usable, on a host without a chip (issues 15 and 22).

Every environment has Google's real torch_tpu 0.2.0 (requirements.txt). On this host it shows what
it shows without a chip: the PCI scan counts none, so tpu is "no TPU chip found" and auto runs on
cpu, without this process ever importing torch_tpu (importing it makes the next backward start
libtpu, which waits minutes for a metadata server; harness_tpu.py's docstring).

What the real package cannot show here (a loader that raises, a runtime that fails, aborts or hangs
on a chip the scan found) comes from the fake distribution in
internal/harness/testdata/fake_torch_tpu/site: a real one (a dist-info with a "torch.backends" entry
point, torch_tpu = torch_tpu._loader:load, as Google's), put before the real one on sys.path by an
interpreter its mkpython.py makes, its behaviour picked by TORCH_TPU_FAKE, and asked only because
--host-root gives the harness a fake PCI tree with a chip. These run the harness as the Go runner
does (``python -I``).
"""

import http.server
import json
import os
import subprocess
import sys
import threading
import time

import pytest

import harness
import harness_tpu
from conftest import HARNESS, build_model_dir, harness_args, require

FAKE_DIR = os.path.join(os.path.dirname(harness.__file__), "testdata", "fake_torch_tpu")

# The fake's messages, written here independently of its source.
LOADER_TEXT = "libtpu.so: undefined symbol: _ZN3c1019fake_abi_mismatchEv"
FIRST_OP_TEXT = "The TPU is already in use by process with pid 4242"
ABORT_TEXT = ("compilation.cc:81] Check failed: status.ok() Failed to create default compilation context: "
              "ABORTED: The TPU is already in use by process with pid 4242")


def fake_host(root, devices):
    """A fake / for the PCI scan: devices are (vendor, device id, exposed through /dev/vfio)."""
    for i, (vendor, device, exposed) in enumerate(devices):
        d = root / "sys" / "bus" / "pci" / "devices" / f"0000:00:{i + 4:02x}.0"
        d.mkdir(parents=True)
        (d / "vendor").write_text(vendor + "\n")
        (d / "device").write_text(device + "\n")
        group = root / "sys" / "kernel" / "iommu_groups" / str(i + 10)
        group.mkdir(parents=True)
        (d / "iommu_group").symlink_to(group)
        if exposed:
            (root / "dev" / "vfio").mkdir(parents=True, exist_ok=True)
            (root / "dev" / "vfio" / str(i + 10)).write_text("")
    return str(root)


def one_chip(tmp_path):
    root = tmp_path / "host"
    return str(root) if root.exists() else fake_host(root, [("0x1ae0", "0x006f", True)])


def env_only(tmp_path, target, *extra):
    out = tmp_path / f"env-{target}.json"
    assert harness.main(["--env-only", "--target", target, "--result-file", str(out), *extra]) == 0
    return json.loads(out.read_text())


def env_note(res):
    return next(s for s in res["stages"] if s["stage"] == "env").get("note", "")


def torch_tpu_modules():
    return [m for m in sys.modules if m == "torch_tpu" or m.startswith("torch_tpu.")]


def test_the_harness_turns_torch_autoload_off():
    assert os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] == "0"  # set at harness import (and by conftest)


# --- the real torch_tpu 0.2.0, on a host without a chip ------------------------------------------------

def test_import_torch_tpu_works():
    """The environment's torch_tpu is Google's 0.2.0, and importing it attaches torch.tpu."""
    code = ("import torch_tpu, torch, importlib.metadata as m; "
            "print(m.version('torch_tpu'), m.version('libtpu'), type(torch.tpu).__name__, "
            "'get_device_name' in dir(torch.tpu))")
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", TPU_SKIP_MDS_QUERY="1")
    p = subprocess.run([sys.executable, "-I", "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == ["0.2.0", "0.0.52", "_torch_tpu_Module", "True"], p.stdout


def test_cpu_passes_and_never_loads_torch_tpu(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "bert")
    code, res = run_inproc(d, target="cpu", task="fill-mask", extra=["--no-compile"])
    assert (code, res["status"], res["target"]) == (0, "pass", "cpu"), res["message"]
    assert res["runtime"]["torch_tpu"] == ""
    assert not torch_tpu_modules(), "a cpu run imported torch_tpu"
    env = env_only(tmp_path, "cpu")
    assert (env["status"], env["google_torch_tpu"], env["tpu_chips"]) == ("pass", False, None)  # not looked for
    assert not torch_tpu_modules(), "--env-only --target cpu imported torch_tpu"


def test_tpu_without_a_chip_says_so_with_the_scans_count(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "bert")
    t0 = time.monotonic()
    code, res = run_inproc(d, target="tpu", task="fill-mask")
    assert time.monotonic() - t0 < 60
    assert (res["status"], res["stage"], res["failure_class"], res["target"]) == \
        ("error", "env", "device_unavailable", "tpu"), res["message"]
    assert "no TPU chip found on this host" in res["message"], res["message"]
    assert "the PCI scan counted 0 TPU chips" in res["message"], res["message"]
    assert "Expected one of" not in res["message"]
    assert (res["runtime"]["torch_tpu"], res["runtime"]["libtpu"]) == ("0.2.0", "0.0.52")
    assert not torch_tpu_modules(), "the harness imported torch_tpu on a host whose PCI scan found no chip"
    env = env_only(tmp_path, "tpu")
    assert (env["status"], env["failure_class"], env["tpu_chips"]) == ("error", "device_unavailable", 0)
    assert "no TPU chip found on this host" in env["message"]


def test_auto_without_a_chip_runs_on_cpu_saying_why(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "bert")
    code, res = run_inproc(d, target="auto", task="fill-mask", extra=["--no-compile"])
    assert (res["status"], res["target"]) == ("pass", "cpu"), res["message"]
    note = env_note(res)
    assert "auto -> cpu" in note and "no TPU chip found on this host" in note, note
    assert res["runtime"]["torch_tpu"] == "" and res["target"] == "cpu" and res["mode"] == "full" and res["repro"] == ""
    env = env_only(tmp_path, "auto")
    assert (env["status"], env["target"], env["google_torch_tpu"], env["tpu_chips"]) == ("pass", "cpu", True, 0)
    assert "no TPU chip found" in env["note"], env["note"]
    assert not torch_tpu_modules()


def test_the_real_loader_registers_nothing_where_its_scan_finds_no_chip(tmp_path, monkeypatch):
    """With a fake PCI tree that shows a chip, the harness asks the real torch_tpu in its child
    process: its own scan (of the real bus) counts none, so it registers no "tpu" device."""
    monkeypatch.setenv("TPU_SKIP_MDS_QUERY", "1")  # no metadata server question in a test
    # a generous bound: loading the real torch_tpu takes seconds, a minute on a busy test host
    env = env_only(tmp_path, "tpu", "--host-root", one_chip(tmp_path), "--tpu-check-timeout", "300")
    assert (env["status"], env["failure_class"], env["tpu_chips"]) == ("error", "device_unavailable", 1)
    assert "torch_tpu 0.2.0 registered no tpu device, while the PCI scan counted 1 TPU chip" in env["message"], \
        env["message"]
    assert not torch_tpu_modules(), "the harness imported torch_tpu itself before the child's first op ran"


# --- the PCI scan, the metadata server, libtpu's last words ----------------------------------------------

@pytest.mark.parametrize("devices,want", [
    ([], (0, 0, 0, "")),
    ([("0x1ae0", "0x006f", True)], (1, 0, 0, "TPU v6e")),
    ([("0x1ae0", "0x0076", True), ("0x1ae0", "0x0076", True)], (2, 0, 0, "TPU v7")),
    ([("0x1ae0", "0x0063", False)], (0, 1, 0, "")),        # a TPU the host's VFIO does not expose
    ([("0x1ae0", "0x0042", False)], (0, 0, 0, "")),        # gVNIC, Google's network card
    ([("0x1ae0", "0x00ff", True)], (0, 0, 1, "")),         # a Google device torch_tpu may know
    ([("0x10de", "0x006f", True)], (0, 0, 0, "")),         # another vendor's device
])
def test_scan_pci(tmp_path, devices, want):
    s = harness_tpu.scan_pci(fake_host(tmp_path, devices))
    assert (s.chips, s.unexposed, s.unknown, s.name) == want
    assert s.none() == (want[0] == 0 and want[2] == 0)


def test_scan_pci_of_this_host_agrees_with_torch_tpus_own():
    """The harness's scan counts what torch_tpu's counts (here, in a child: importing it is avoided)."""
    code = ("from torch_tpu._internal.utils import hardware; print(hardware.get_tpu_device_count())")
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", TPU_SKIP_MDS_QUERY="1")
    p = subprocess.run([sys.executable, "-I", "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert int(p.stdout.split()[-1]) == harness_tpu.scan_pci("/").chips


@pytest.mark.parametrize("text,want", [
    ("\n".join([
        "I0000 00:00:1796140000.000000    4711 pjrt_api.cc:119] GetPjrtApi was found",
        "E0000 00:00:1796140000.1    4711 tpu_hooks.cc:233] PjRt backend unavailable",
        "F0000 00:00:1796140000.2    4711 compilation.cc:81] Check failed: held by pid 9",
        "*** Check failure stack trace: ***", "    @     0x7f2a1c0b1234  (unknown)",
        "E0000 00:00:1796140000.3    4711 process_state.cc:805] RAW: Raising signal 6 with default behavior"]),
     "compilation.cc:81] Check failed: held by pid 9"),
    ("\n".join([
        "WARNING: Logging before InitGoogle() is written to STDERR",
        "E0000 00:00:1796143755.750424   14978 env_var_utils.cc:96] Failed to convert value for key "
        "'CHIPS_PER_HOST_BOUNDS' in 'tpu-env' to string",
        "=== Source Location Trace: ===", "learning/45eac/tfrc/runtime/gcp_metadata_utils.cc:137", ""]),
     "env_var_utils.cc:96] Failed to convert value for key 'CHIPS_PER_HOST_BOUNDS' in 'tpu-env' to string"),
    ("[tpu check] importing torch\nSegmentation fault in the driver\n", "Segmentation fault in the driver"),
    ("[tpu check] importing torch\n\n", ""),
    ("", ""),
])
def test_libtpu_last_line(text, want):
    assert harness_tpu.libtpu_last_line(text) == want


def test_runtime_env_bounds_libtpu_only_where_the_metadata_server_cannot_answer():
    asked = []

    def mds(answer):
        def ok():
            asked.append(answer)
            return answer
        return ok

    one_host = {"TPU_SKIP_MDS_QUERY": "1", "TPU_WORKER_ID": "0", "TPU_WORKER_HOSTNAMES": "localhost"}
    assert harness_tpu.runtime_env({}, 0, mds(False)) == {} and asked == []  # no chip: no runtime to start
    assert harness_tpu.runtime_env({"TPU_SKIP_MDS_QUERY": "true"}, 4, mds(False)) == {} and asked == []  # GKE's
    assert harness_tpu.runtime_env({}, 4, mds(True)) == {} and asked == [True]
    assert harness_tpu.runtime_env({}, 4, mds(False)) == one_host
    assert harness_tpu.runtime_env({"TPU_WORKER_ID": "3"}, 1, mds(False)) == \
        {"TPU_SKIP_MDS_QUERY": "1", "TPU_WORKER_HOSTNAMES": "localhost"}


class _MetadataServer(http.server.BaseHTTPRequestHandler):
    status, flavor = 200, "Google"

    def do_GET(self):
        ok = self.headers.get("Metadata-Flavor") == "Google" and self.path.endswith("/attributes/tpu-env")
        self.send_response(self.status if ok else 403)
        if self.flavor:
            self.send_header("Metadata-Flavor", self.flavor)
        self.end_headers()
        self.wfile.write(b"ACCELERATOR_TYPE: 'v6e-8'\n")

    def log_message(self, *a):
        pass


@pytest.mark.parametrize("status,flavor,want", [(200, "Google", True), (200, "", False), (404, "Google", False)])
def test_metadata_has_tpu_env(status, flavor, want):
    handler = type("H", (_MetadataServer,), {"status": status, "flavor": flavor})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/computeMetadata/v1/instance/attributes/tpu-env"
        assert harness_tpu.metadata_has_tpu_env(url, timeout=5) is want
    finally:
        srv.shutdown()


def test_metadata_server_that_never_answers_is_no_answer_in_time():
    import socket

    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(1)  # accepts the connection, never answers
    try:
        t0 = time.monotonic()
        assert harness_tpu.metadata_has_tpu_env(f"http://127.0.0.1:{lst.getsockname()[1]}/x", timeout=1) is False
        assert time.monotonic() - t0 < 5
    finally:
        lst.close()


# --- what only the fake can show: a chip whose runtime fails -------------------------------------------

@pytest.fixture(scope="module")
def fake_python(tmp_path_factory):
    dest = tmp_path_factory.mktemp("fakepy")
    out = subprocess.run([sys.executable, os.path.join(FAKE_DIR, "mkpython.py"), str(dest)], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def run_isolated(python, args, mode, **env_extra):
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_TEST_INJECT", "TORCH_DEVICE_BACKEND_AUTOLOAD")}
    env.update(TORCH_TPU_FAKE=mode, TPU_SKIP_MDS_QUERY="1", **env_extra)
    t0 = time.monotonic()
    p = subprocess.run([python, "-I", "-u", "-B", HARNESS, *args], env=env, capture_output=True, text=True,
                       timeout=600)
    p.wall = time.monotonic() - t0
    return p


def isolated_env_only(python, tmp_path, target, mode, *extra, **env):
    out = tmp_path / f"env-{target}-{mode}.json"
    p = run_isolated(python, ["--env-only", "--target", target, "--result-file", str(out),
                              "--host-root", one_chip(tmp_path), *extra], mode, **env)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(out.read_text()), p


def test_the_fake_is_a_real_torch_backend(fake_python):
    """Control: with torch's autoload on, the fake's entry point (found before the real one) breaks
    `import torch` itself, the failure the harness avoids (if this passed without the fake being
    found, the tests below would prove nothing)."""
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    env["TORCH_TPU_FAKE"] = "loader-raises"
    p = subprocess.run([fake_python, "-I", "-c", "import torch"], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode != 0 and "Failed to load the backend extension: torch_tpu" in p.stderr, p.stderr[-2000:]


@pytest.mark.parametrize("mode,texts", [
    ("loader-raises", ["torch_tpu failed to load", LOADER_TEXT]),
    ("first-op-fails", ["the TPU runtime failed its first op", FIRST_OP_TEXT]),
    ("first-op-aborts", ["the TPU runtime died of SIGABRT (running the first op on the TPU)", ABORT_TEXT]),
])
def test_a_chip_whose_runtime_fails_is_device_unavailable_with_its_words(fake_python, tmp_path, mode, texts):
    env, p = isolated_env_only(fake_python, tmp_path, "tpu", mode)
    assert (env["status"], env["failure_class"], env["target"], env["tpu_chips"]) == \
        ("error", "device_unavailable", "tpu", 1), env["message"]
    for t in texts:
        assert t in env["message"], env["message"]
    auto, _ = isolated_env_only(fake_python, tmp_path, "auto", mode)
    assert (auto["status"], auto["target"], auto["google_torch_tpu"]) == ("pass", "cpu", True)
    assert texts[-1] in auto["note"], auto["note"]


def test_a_runtime_that_aborts_leaves_the_run_to_cpu(fake_python, tmp_path):
    """SIGABRT on the first op is the env stage's answer: tpu is the environment's error, and auto runs
    the model on cpu (arch mode seeds with torch.manual_seed, which would reach the fake's failing
    runtime had the harness itself loaded it)."""
    d = build_model_dir(tmp_path, "llama", full=False)
    host = one_chip(tmp_path)
    out = tmp_path / "tpu.json"
    p = run_isolated(fake_python, harness_args(d, out, target="tpu", mode="arch", task="text-generation",
                                               extra=["--host-root", host]), "first-op-aborts")
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(out.read_text())
    assert (res["status"], res["stage"], res["failure_class"], res["target"]) == \
        ("error", "env", "device_unavailable", "tpu"), res["message"]
    assert "SIGABRT" in res["message"] and ABORT_TEXT in res["message"], res["message"]
    assert res["runtime"]["torch_tpu"] == "0.0.1+fake"

    out = tmp_path / "auto.json"
    p = run_isolated(fake_python, harness_args(d, out, target="auto", mode="arch", task="text-generation",
                                               extra=["--no-compile", "--no-generate", "--host-root", host]),
                     "first-op-aborts")
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(out.read_text())
    assert (res["status"], res["target"], res["mode"]) == ("pass", "cpu", "arch"), (res["message"], p.stderr[-3000:])
    note = env_note(res)
    assert "auto -> cpu" in note and ABORT_TEXT in note, note


def test_a_runtime_waiting_for_the_metadata_server_ends_the_env_stage_in_time(fake_python, tmp_path):
    # the bound counts from loading torch_tpu (importing torch has its own, IMPORT_TIMEOUT_S)
    env, p = isolated_env_only(fake_python, tmp_path, "tpu", "first-op-hangs", "--tpu-check-timeout", "20")
    assert (env["status"], env["failure_class"]) == ("error", "device_unavailable"), env["message"]
    msg = env["message"]
    assert "did not finish within 20 s (running the first op on the TPU)" in msg, msg
    assert "GCE metadata server (169.254.169.254)" in msg and "TPU_SKIP_MDS_QUERY=1" in msg, msg
    assert "Failed to convert value for key 'CHIPS_PER_HOST_BOUNDS' in 'tpu-env'" in msg, msg
    assert p.wall < 20 + 90, p.wall  # the check's bound, and the imports of torch
    assert harness_tpu.CHECK_TIMEOUT_S <= 50 and harness.TPU_CHECK_TIMEOUT_S == harness_tpu.CHECK_TIMEOUT_S


def test_a_host_too_busy_to_import_torch_is_not_blamed_on_the_metadata_server(tmp_path):
    """The import allowance runs out first (a child that never gets past importing torch): the reason
    says so, and names no metadata server."""
    slow = tmp_path / "python"
    slow.write_text("#!/bin/sh\necho '[tpu check] importing torch' >&2\nexec sleep 60\n")
    slow.chmod(0o755)
    t0 = time.monotonic()
    res = harness_tpu.run_check(str(slow), timeout=1, import_timeout=2)
    assert time.monotonic() - t0 < 20
    assert (res["timed_out"], res["step"]) == (2, "importing torch"), res
    why = harness_tpu.describe(res)
    assert "did not import torch within 2 s" in why and "metadata" not in why, why


def test_the_runtime_records_whether_tcmalloc_was_preloaded(tmp_path):
    import ctypes.util

    tcmalloc = ctypes.util.find_library("tcmalloc_minimal")  # a soname LD_PRELOAD finds, as the runner's path
    if not tcmalloc:
        require("tcmalloc (Debian's and Ubuntu's libtcmalloc-minimal4)")
    got = {}
    for preload in ("", tcmalloc):
        out = tmp_path / f"env-{bool(preload)}.json"
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        if preload:
            env["LD_PRELOAD"] = preload
        p = subprocess.run([sys.executable, "-I", "-u", "-B", HARNESS, "--env-only", "--target", "cpu",
                            "--result-file", str(out)], env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        got[bool(preload)] = json.loads(out.read_text())["runtime"]["tcmalloc"]
    assert got == {False: False, True: True}
