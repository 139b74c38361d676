"""The harness uses only what torch_tpu 0.2.0 exports as ``torch.tpu`` and does not keep internal.

The installed package is read, not a copy: its public API registry (torch_tpu/_internal/public_api.py
_PUBLIC_MODULES["torch.tpu"]: the exports, and the private fallback that serves single-underscore
names) and each export's lifecycle stage (torch_tpu/_internal/utils/annotations.py: the
``__tt_api_stage__`` its decorators attach, or the module's ``__tt_api_stages__`` map). An export that
is ``internal_or_experimental(internal_when=torch >= 2.11, strict=True)`` is Internal with this torch
and raises when user code calls it ("Use torch.accelerator.synchronize instead").

What the harness uses is found twice: in its source (every ``torch.tpu.X`` and ``self.tpu.X``, and
getattr/hasattr of those) and in a simulated tpu run (every name looked up on the stand-in torch.tpu).
One private name is allowed, by name, with its reason: ``_get_cache_misses``.
"""

import ast
import json
import os
import subprocess
import sys

import pytest

import harness
from conftest import build_model_dir
from harness_testing import SimulatedTpu

HARNESS_DIR = os.path.dirname(os.path.abspath(harness.__file__))

# Private names the harness may read from torch.tpu, each with why: none is exported, all come through
# the registry's private_fallback, and the harness treats an error from one as "not measured".
ALLOWED_PRIVATE = {
    # TorchTPU's executable-cache misses: its own benchmarks warm up until this stops moving
    # (examples/benchmarks/e2e/harness/torch_device_ops.py compile_count); no public equivalent.
    "_get_cache_misses",
}

REGISTRY = r"""
import json, torch, torch_tpu
from torch_tpu._internal import public_api
from torch_tpu._internal.utils import annotations as a
spec = public_api._PUBLIC_MODULES["torch.tpu"]
stages = public_api._import_target(spec.stages) if spec.stages else {}
out = {"torch": torch.__version__, "exports": {}, "private": []}
for name, target in spec.exports.items():
    if name in stages:
        stage = stages[name].stage.value
    elif isinstance(target, public_api.Property):
        stage = getattr(public_api._import_target(target.target).fget, a.TT_API_STAGE, a.Stage.STABLE.value)
    else:
        stage = getattr(public_api._import_target(target), a.TT_API_STAGE, a.Stage.STABLE.value)
    out["exports"][name] = stage
# public submodules (torch.tpu.distributed, ...): attached to torch.tpu as attributes, each with its exports
out["modules"] = {key.split(".", 2)[2]: sorted(sub.exports) for key, sub in public_api._PUBLIC_MODULES.items()
                  if key.count(".") == 2 and key.startswith("torch.tpu.")}
fallback = public_api._import_target(spec.private_fallback)
out["private"] = sorted(n for n in dir(fallback) if n.startswith("_") and not n.startswith("__"))
print("REGISTRY " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def registry():
    """torch_tpu 0.2.0's torch.tpu registry and stages, read in a child (importing torch_tpu here would
    bind its glue to the test process)."""
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", TPU_SKIP_MDS_QUERY="1")
    p = subprocess.run([sys.executable, "-I", "-c", REGISTRY], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    line = next(l for l in p.stdout.splitlines() if l.startswith("REGISTRY "))
    return json.loads(line[len("REGISTRY "):])


def verdict(name: str, reg: dict) -> str:
    """"ok", "internal" (exported, but internal with this torch) or "not exported". A dotted name is a
    public submodule's export (``distributed.topology_aware_mesh``), or an export's own attribute
    (``Precision.HIGHEST``: the export decides); a bare submodule name is ok."""
    if "." in name:
        head, _, attr = name.partition(".")
        if head in reg["modules"]:
            return "ok" if attr in reg["modules"][head] else "not exported"
        return verdict(head, reg)
    if name in reg["modules"]:
        return "ok"
    if name in reg["exports"]:
        return "internal" if reg["exports"][name] == "Internal" else "ok"
    if name in ALLOWED_PRIVATE and name in reg["private"]:
        return "ok"
    return "not exported"


def test_the_registry_is_0_2_0s_and_the_rule_has_teeth(registry):
    assert registry["torch"].startswith("2.15."), registry["torch"]
    # with torch 2.15, 0.2.0 keeps these internal (torch.accelerator has them); the harness used them before
    for name in ("synchronize", "device_count", "is_available", "current_device"):
        assert verdict(name, registry) == "internal", name
    for name in ("get_device_name", "get_device_properties", "precision", "Precision", "is_initialized"):
        assert verdict(name, registry) == "ok", (name, registry["exports"].get(name))
    assert verdict("no_such_api", registry) == "not exported"
    assert "_get_cache_hits" in registry["private"] and verdict("_get_cache_hits", registry) == "not exported"
    assert "_get_cache_misses" in registry["private"]
    assert verdict("distributed", registry) == "ok"
    assert verdict("distributed.topology_aware_mesh", registry) == "ok"
    assert verdict("distributed.set_tpu_launch_env", registry) == "ok"
    assert verdict("distributed.no_such_api", registry) == "not exported"


def _tpu_names_in_source() -> dict:
    """name -> [file:line] of every torch.tpu.X / self.tpu.X (and getattr/hasattr of those) in the harness."""

    def is_tpu(node) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "tpu" and isinstance(node.value, ast.Name)
                and node.value.id in ("torch", "self"))

    found: dict = {}
    for fn in sorted(os.listdir(HARNESS_DIR)):
        if not (fn.startswith("harness") and fn.endswith(".py")) or fn == "harness_testing.py":
            continue
        with open(os.path.join(HARNESS_DIR, fn), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            name = None
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                    and is_tpu(node.value.value)):
                name = node.value.attr + "." + node.attr  # torch.tpu.<submodule>.<attr>
            elif isinstance(node, ast.Attribute) and is_tpu(node.value):
                name = node.attr
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2 and is_tpu(node.args[0])
                  and isinstance(node.args[1], ast.Constant)):
                name = node.args[1].value
            if name is not None:
                found.setdefault(name, []).append(f"{fn}:{node.lineno}")
    return found


def test_the_harness_source_uses_only_exported_public_torch_tpu(registry):
    found = _tpu_names_in_source()
    # the scan reaches the harness's real uses (else it proves nothing)
    assert {"get_device_name", "get_device_properties", "precision", "Precision", "is_initialized",
            "distributed.topology_aware_mesh"} <= set(found), found
    bad = {n: (verdict(n, registry), where) for n, where in found.items() if verdict(n, registry) != "ok"}
    assert not bad, bad


def test_a_tpu_run_uses_only_exported_public_torch_tpu(tmp_path, run_inproc, monkeypatch, registry):
    monkeypatch.setenv("HARNESS_TEST_INJECT", "tpu:simulate")
    d = build_model_dir(tmp_path, "llama")
    code, res = run_inproc(d, target="tpu", task="text-generation", extra=["--dtype", "float32"])
    assert res["status"] == "pass" and res["target"] == "tpu", res["message"]
    used = set(SimulatedTpu.used)
    assert {"get_device_name", "precision", "Precision", "_get_cache_misses"} <= used, used
    bad = {n: verdict(n, registry) for n in used if verdict(n, registry) != "ok"}
    assert not bad, bad


def test_the_pins_are_within_torch_tpus_requires_dist():
    """The torch pin rule: torch-tpu's Requires-Dist decides (0.2.0 ships glue for torch 2.11 to 2.15).
    requirements.txt's torch and libtpu pins, and what is installed, satisfy the installed torch-tpu's."""
    from importlib import metadata

    from packaging.requirements import Requirement

    wants = {r.name: r.specifier for r in map(Requirement, metadata.requires("torch-tpu")) if r.marker is None}
    with open(os.path.join(HARNESS_DIR, "requirements.txt"), encoding="utf-8") as fh:
        pins = dict(l.split(";")[0].strip().split("==") for l in fh if "==" in l and not l.startswith("#"))
    for name in ("torch", "libtpu"):
        assert pins[name] in wants[name], (name, pins[name], str(wants[name]))
        assert metadata.version(name) in wants[name], (name, metadata.version(name), str(wants[name]))
    assert str(wants["torch"]) in ("<=2.15.0,>=2.11.0", ">=2.11.0,<=2.15.0"), str(wants["torch"])
