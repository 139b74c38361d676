"""The tpu code path, simulated on CPU (there is no TPU here).

HARNESS_TEST_INJECT=tpu:simulate (harness_testing.SimulatedTpu) stands in for Google's torch_tpu:
a ``torch.tpu`` device module with the TorchTPU API surface the harness uses (device_count,
get_device_name, get_device_properties, synchronize, _get_cache_misses; no memory statistics)
and a dynamo backend registered as "tpu" (aot_eager underneath), while tensors stay on the CPU.
This exercises the target resolution, runtime block, memory table, bfloat16 policy,
synchronisation fallback, backend choice and TorchTPU's recompile detection.
"""

import pytest
import torch

import harness
import harness_testing
from conftest import build_model_dir
from harness_testing import SimulatedTpu


@pytest.fixture
def fake_tpu(monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_INJECT", "tpu:simulate")


def test_auto_resolves_to_tpu_and_uses_the_tpu_path(tmp_path, run_inproc, fake_tpu):
    d = build_model_dir(tmp_path, "llama")
    code, res = run_inproc(d, target="auto", task="text-generation")
    assert res["status"] == "pass", res["message"]
    assert res["target"] == "tpu"
    rt = res["runtime"]
    assert (rt["device"], rt["device_count"], rt["torch_tpu"]) == ("TPU v6e", 4, "0.1.0.dev-simulated")
    assert rt["device_memory_gib"] == 32.0  # from the table: get_device_properties raised
    m = res["metrics"]
    assert m["peak_mem_bytes"] is None  # the fake runtime reports no memory statistics: null, not 0
    assert m["tokens_per_s"] > 0 and m["compile_s"] is not None
    notes = {s["stage"]: s.get("note", "") for s in res["stages"]}
    assert "sync=torch.tpu.synchronize" in notes["env"]  # torch.accelerator has no device here: fallback
    assert "dtype=bfloat16" in notes["config"]
    assert "bfloat16 vs float32" in notes["numerics"]
    assert "backend=tpu" in notes["compile"]
    assert SimulatedTpu.compiled_graphs, "torch.compile did not go through the 'tpu' backend"
    assert SimulatedTpu.synced > 0
    assert not hasattr(torch, "tpu"), "the simulated torch.tpu outlived the run"
    assert res["repro"].endswith("--target tpu --mode full")


def test_tpu_executables_that_keep_compiling_are_a_recompile(tmp_path, run_inproc, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_INJECT", "tpu:simulate-recompiling")
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


def test_warm_settles(monkeypatch):
    monkeypatch.setattr(torch, "tpu", SimulatedTpu, raising=False)
    SimulatedTpu.reset()
    dev = harness_testing.with_faults(harness.Probe, "tpu:simulate").device_cls(torch, "tpu")
    assert dev.warm(lambda: None, 4) == (0, True)
    SimulatedTpu.keep_compiling = True
    assert dev.warm(lambda: None, 4) == (4, False)
