"""The tpu code path, simulated on CPU (there is no TPU here).

A fake ``torch.tpu`` device module (the TorchTPU API surface the harness uses: device_count,
get_device_name, get_device_properties, synchronize, _get_cache_misses; no memory statistics)
and a dynamo backend registered as "tpu" (aot_eager underneath) stand in for Google's torch_tpu,
while tensors stay on the CPU. This exercises the target resolution, runtime block, memory table,
bfloat16 policy, synchronisation fallback, backend choice and TorchTPU's recompile detection.
"""

import pytest
import torch
from torch._dynamo.backends import registry

import harness
from conftest import build_model_dir


class FakeTpu:
    misses = 0
    keep_compiling = False
    synced = 0

    @classmethod
    def is_available(cls):
        return True

    @classmethod
    def device_count(cls):
        return 4

    @classmethod
    def get_device_name(cls, device=None):
        return "TPU v6e"

    @classmethod
    def get_device_properties(cls, device=None):
        raise RuntimeError("unrecognized TPU 'TPU v6e'; cannot determine device memory")

    @classmethod
    def synchronize(cls, device=None):
        cls.synced += 1

    @classmethod
    def _get_cache_misses(cls):
        if cls.keep_compiling:
            cls.misses += 1
        return cls.misses


@pytest.fixture
def fake_tpu(monkeypatch):
    FakeTpu.misses, FakeTpu.keep_compiling, FakeTpu.synced = 3, False, 0
    monkeypatch.setattr(torch, "tpu", FakeTpu, raising=False)
    monkeypatch.setattr(harness, "probe_torch_tpu", lambda t: {
        "installed": True, "google": True, "version": "0.1.0.dev-fake", "available": True, "note": ""})
    monkeypatch.setattr(harness.Device, "torch_device", lambda self: torch.device("cpu"))
    calls = []

    def fake_tpu_backend(gm, example_inputs):
        calls.append(len(gm.graph.nodes))
        return registry.lookup_backend("aot_eager")(gm, example_inputs)

    monkeypatch.setitem(registry._BACKENDS, "tpu", None)
    monkeypatch.setitem(registry._COMPILER_FNS, "tpu", fake_tpu_backend)
    return calls


def test_auto_resolves_to_tpu_and_uses_the_tpu_path(tmp_path, run_inproc, fake_tpu):
    d = build_model_dir(tmp_path, "llama")
    code, res = run_inproc(d, target="auto", task="text-generation")
    assert res["status"] == "pass", res["message"]
    assert res["target"] == "tpu"
    rt = res["runtime"]
    assert (rt["device"], rt["device_count"], rt["torch_tpu"]) == ("TPU v6e", 4, "0.1.0.dev-fake")
    assert rt["device_memory_gib"] == 32.0  # from the table: get_device_properties raised
    m = res["metrics"]
    assert m["peak_mem_bytes"] is None  # the fake runtime reports no memory statistics: null, not 0
    assert m["tokens_per_s"] > 0 and m["compile_s"] is not None
    notes = {s["stage"]: s.get("note", "") for s in res["stages"]}
    assert "sync=torch.tpu.synchronize" in notes["env"]  # torch.accelerator has no device here: fallback
    assert "dtype=bfloat16" in notes["config"]
    assert "bfloat16 vs float32" in notes["numerics"]
    assert "backend=tpu" in notes["compile"]
    assert fake_tpu, "torch.compile did not go through the 'tpu' backend"
    assert FakeTpu.synced > 0
    assert res["repro"].endswith("--target tpu --mode full")


def test_tpu_executables_that_keep_compiling_are_a_recompile(tmp_path, run_inproc, fake_tpu):
    FakeTpu.keep_compiling = True
    d = build_model_dir(tmp_path, "gpt2")
    code, res = run_inproc(d, target="tpu", task="text-generation", extra=["--no-generate"])
    assert (res["status"], res["stage"], res["failure_class"]) == ("fail", "compile", "recompile"), res["message"]
    assert res["signature"] == "recompile:TorchTPU kept compiling on repeated calls"
    forward_note = next(s for s in res["stages"] if s["stage"] == "forward")["note"]
    assert "had not settled" in forward_note  # eager: noted, not held against the model


def test_cpu_target_on_a_tpu_host_leaves_the_tpu_versions_out(tmp_path, run_inproc, fake_tpu):
    d = build_model_dir(tmp_path, "bert")
    code, res = run_inproc(d, target="cpu", task="fill-mask", extra=["--no-compile"])
    assert res["status"] == "pass" and res["target"] == "cpu"
    assert res["runtime"]["torch_tpu"] == ""


def test_warm_settles(fake_tpu):
    dev = harness.Device(torch, "tpu")
    FakeTpu.keep_compiling = False
    assert dev.warm(lambda: None, 4) == (0, True)
    FakeTpu.keep_compiling = True
    assert dev.warm(lambda: None, 4) == (4, False)
