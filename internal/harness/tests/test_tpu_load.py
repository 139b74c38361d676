"""torch_tpu that cannot load, or whose runtime fails its first op, on CPU (issue 15).

The fake distribution in internal/harness/testdata/fake_torch_tpu/site is a real one: a dist-info with
a "torch.backends" entry point (torch_tpu = torch_tpu._loader:load, as Google's), found by
importlib.metadata exactly as torch's autoload and the harness find it. TORCH_TPU_FAKE picks its
behaviour (see its _loader.py): ``loader-raises`` makes load() raise; ``first-op-fails`` registers a
"tpu" device whose first op raises. The first kind runs in this process (nothing is registered);
the second renames torch's privateuse1 backend, which cannot be undone, so it runs the harness as the
Go runner does (``python -I``) with an interpreter made by the fake's mkpython.py.
"""

import json
import os
import subprocess
import sys

import pytest
import torch

import harness
from conftest import HARNESS, build_model_dir, harness_args

FAKE_DIR = os.path.join(os.path.dirname(harness.__file__), "testdata", "fake_torch_tpu")
FAKE_SITE = os.path.abspath(os.path.join(FAKE_DIR, "site"))

# The fake's messages, written here independently of its source.
LOADER_TEXT = "libtpu.so: undefined symbol: _ZN3c1019fake_abi_mismatchEv"
FIRST_OP_TEXT = "The TPU is already in use by process with pid 4242"


@pytest.fixture
def fake_tpu_site(monkeypatch):
    """The fake torch_tpu on sys.path, its loader set to raise; gone (modules too) afterwards."""
    monkeypatch.syspath_prepend(FAKE_SITE)
    monkeypatch.setenv("TORCH_TPU_FAKE", "loader-raises")
    yield
    for name in [m for m in sys.modules if m == "torch_tpu" or m.startswith("torch_tpu.")]:
        del sys.modules[name]


def env_only(tmp_path, target):
    out = tmp_path / f"env-{target}.json"
    assert harness.main(["--env-only", "--target", target, "--result-file", str(out)]) == 0
    return json.loads(out.read_text())


def env_note(res):
    return next(s for s in res["stages"] if s["stage"] == "env").get("note", "")


def test_the_harness_turns_torch_autoload_off():
    assert os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] == "0"  # set at harness import


def test_cpu_passes_and_never_loads_torch_tpu(tmp_path, run_inproc, fake_tpu_site):
    d = build_model_dir(tmp_path, "bert")
    code, res = run_inproc(d, target="cpu", task="fill-mask", extra=["--no-compile"])
    assert (code, res["status"], res["target"]) == (0, "pass", "cpu"), res["message"]
    assert res["runtime"]["torch_tpu"] == ""
    assert not [m for m in sys.modules if m.startswith("torch_tpu")], "a cpu run imported torch_tpu"
    env = env_only(tmp_path, "cpu")
    assert (env["status"], env["google_torch_tpu"]) == ("pass", False)  # not looked for on cpu
    assert not [m for m in sys.modules if m.startswith("torch_tpu")], "--env-only --target cpu imported torch_tpu"


def test_tpu_is_device_unavailable_with_the_loaders_message(tmp_path, run_inproc, fake_tpu_site):
    d = build_model_dir(tmp_path, "bert")
    code, res = run_inproc(d, target="tpu", task="fill-mask")
    assert (res["status"], res["stage"], res["failure_class"], res["target"]) == \
        ("error", "env", "device_unavailable", "tpu"), res["message"]
    assert LOADER_TEXT in res["message"] and "torch_tpu failed to load" in res["message"]
    assert "torch_tpu._loader" in sys.modules, "the loader was not reached through the entry point"
    env = env_only(tmp_path, "tpu")
    assert (env["status"], env["failure_class"]) == ("error", "device_unavailable")
    assert LOADER_TEXT in env["message"]


def test_auto_runs_on_cpu_saying_why(tmp_path, run_inproc, fake_tpu_site):
    d = build_model_dir(tmp_path, "bert")
    code, res = run_inproc(d, target="auto", task="fill-mask", extra=["--no-compile"])
    assert (res["status"], res["target"]) == ("pass", "cpu"), res["message"]
    note = env_note(res)
    assert "auto -> cpu" in note and LOADER_TEXT in note, note
    assert res["runtime"]["torch_tpu"] == ""
    env = env_only(tmp_path, "auto")
    assert (env["status"], env["target"]) == ("pass", "cpu")
    assert LOADER_TEXT in env["note"], env["note"]
    assert env["google_torch_tpu"] is True  # installed though unusable: the runner asks once without Landlock


# --- the runtime fails its first op: in a fresh interpreter, as the Go runner starts it ---------------

@pytest.fixture(scope="module")
def fake_python(tmp_path_factory):
    dest = tmp_path_factory.mktemp("fakepy")
    out = subprocess.run([sys.executable, os.path.join(FAKE_DIR, "mkpython.py"), str(dest)], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def run_isolated(python, args, mode):
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_TEST_INJECT", "TORCH_DEVICE_BACKEND_AUTOLOAD")}
    env["TORCH_TPU_FAKE"] = mode
    return subprocess.run([python, "-I", "-u", "-B", HARNESS, *args], env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_fake_is_a_real_torch_backend(fake_python):
    """Control: with torch's autoload on, the fake's entry point breaks `import torch` itself, the
    failure the harness avoids (if this passed without the fake being found, the tests above prove
    nothing)."""
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    env["TORCH_TPU_FAKE"] = "loader-raises"
    p = subprocess.run([fake_python, "-I", "-c", "import torch"], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode != 0 and "Failed to load the backend extension: torch_tpu" in p.stderr, p.stderr[-2000:]


def test_first_op_failure_is_the_environments_not_the_models(tmp_path, fake_python):
    d = build_model_dir(tmp_path, "llama", full=False)
    out = tmp_path / "tpu.json"
    p = run_isolated(fake_python, harness_args(d, out, target="tpu", mode="arch", task="text-generation"),
                     "first-op-fails")
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(out.read_text())
    assert (res["status"], res["stage"], res["failure_class"], res["target"]) == \
        ("error", "env", "device_unavailable", "tpu"), res["message"]
    assert FIRST_OP_TEXT in res["message"] and "first op" in res["message"], res["message"]

    out = tmp_path / "auto.json"
    p = run_isolated(fake_python, harness_args(d, out, target="auto", mode="arch", task="text-generation",
                                               extra=["--no-compile", "--no-generate"]), "first-op-fails")
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(out.read_text())
    # arch mode seeds with torch.manual_seed, which would call the fake's failing manual_seed_all
    # had the harness left torch.tpu registered after falling back
    assert (res["status"], res["target"], res["mode"]) == ("pass", "cpu", "arch"), (res["message"], p.stderr[-3000:])
    note = env_note(res)
    assert "auto -> cpu" in note and FIRST_OP_TEXT in note, note
