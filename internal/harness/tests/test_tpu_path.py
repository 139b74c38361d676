"""The tpu code path, simulated on CPU (there is no TPU here).

HARNESS_TEST_INJECT=tpu:simulate (harness_testing.SimulatedTpu) stands in for Google's torch_tpu
0.2.0 on a chip, which this host lacks: a ``torch.tpu`` device module with its public surface
(get_device_name, get_device_properties, is_initialized, precision/Precision, the private
_get_cache_misses; device_count and synchronize raise, as the real ones, internal with this torch,
do), a ``torch.accelerator`` whose accelerator is "tpu" (device_count, synchronize; no memory
statistics) and a dynamo backend registered as "tpu" (aot_eager underneath), while tensors stay on
the CPU. This exercises the target resolution, runtime block, memory table, bfloat16 policy, float32
at HIGHEST precision, synchronisation, peak memory scope, backend choice and TorchTPU's recompile
detection and warm-up ceiling. Finding and loading torch_tpu (the PCI scan, the entry point, the
first op) is tested with the real package and a fake distribution in test_tpu_load.py; that the
harness uses only what 0.2.0 exports, in test_tpu_api.py.
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
    assert "sync=torch.accelerator.synchronize" in notes["env"]  # the only one on tpu (Device.sync_candidates)
    assert "dtype=bfloat16" in notes["config"]
    assert "bfloat16 vs float32" in notes["numerics"]
    assert "backend=tpu" in notes["compile"]
    assert SimulatedTpu.compiled_graphs, "torch.compile did not go through the 'tpu' backend"
    assert SimulatedTpu.synced > 0
    assert not hasattr(torch, "tpu"), "the simulated torch.tpu outlived the run"
    assert res["target"] == "tpu" and res["mode"] == "full" and res["repro"] == ""


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


class CountingTpu(SimulatedTpu):
    """A TPU whose executable cache misses on the next `compiling` calls, then settles."""

    compiling = 0

    @classmethod
    def call(cls):
        if cls.compiling:
            cls.misses += 1
            cls.compiling -= 1


@pytest.mark.parametrize("compiling,want", [(0, (0, True)), (12, (12, True)), (19, (19, True)), (20, (20, False))])
def test_tpu_warm_up_allows_twenty_extra_calls(monkeypatch, compiling, want):
    # TorchTPU's own benchmark harness warms up for at most 20 steps (measure.py max_warmup_steps)
    assert harness.WARMUP_MAX_EXTRA == 20
    monkeypatch.setattr(torch, "tpu", CountingTpu, raising=False)
    CountingTpu.reset()
    dev = harness_testing.with_faults(harness.Probe, "tpu:simulate").device_cls(torch, "tpu")
    CountingTpu.compiling = compiling
    calls = []
    assert dev.warm(lambda: (calls.append(1), CountingTpu.call()), harness.WARMUP_MAX_EXTRA) == want
    assert len(calls) == min(compiling + 1, 20)


@pytest.mark.parametrize("target,dtype,has_precision,want", [
    ("tpu", "float32", True, ("float32", True)),     # HIGHEST: held to float32
    ("tpu", "float32", False, ("bfloat16", False)),  # float32 matmuls are bfloat16 underneath
    ("tpu", "bfloat16", True, ("bfloat16", False)),
    ("tpu", "float16", True, ("float16", False)),
    ("cpu", "float32", False, ("float32", False)),
    ("cuda", "float32", True, ("float32", False)),
])
def test_precision_rule(target, dtype, has_precision, want):
    assert harness.precision_rule(target, dtype, has_precision) == want


@pytest.mark.parametrize("requested,tpu,want_target,want_in_note", [
    ("cpu", None, "cpu", ""),
    ("cuda", None, "cuda", ""),
    ("tpu", {"available": False, "note": "torch_tpu failed to load: X"}, "tpu", ""),
    ("auto", {"available": True, "note": ""}, "tpu", "auto -> tpu"),
    ("auto", {"available": False, "note": "the TPU runtime failed its first op: busy"}, "cpu", "first op: busy"),
    ("auto", {"available": False, "note": ""}, "cpu", "auto -> cpu"),
])
def test_resolve_target(requested, tpu, want_target, want_in_note):
    target, note = harness.resolve_target(requested, tpu)
    assert target == want_target
    assert want_in_note in note and (note == "") == (want_in_note == "")


def test_float32_on_tpu_runs_at_highest_precision(tmp_path, run_inproc, fake_tpu):
    d = build_model_dir(tmp_path, "llama")
    code, res = run_inproc(d, target="tpu", task="text-generation", extra=["--dtype", "float32", "--no-generate"])
    assert res["status"] == "pass", res["message"]
    assert SimulatedTpu.synced_at.get("HIGHEST", 0) > 0, SimulatedTpu.synced_at
    assert set(SimulatedTpu.synced_at) <= {"HIGHEST", "DEFAULT"} and SimulatedTpu.modes == []
    env = next(s for s in res["stages"] if s["stage"] == "env")["note"]
    assert "Precision.HIGHEST" in env
    assert res["metrics"]["tolerance"] < 5e-2  # the float32 row (bfloat16's starts at 5e-2)


def test_float32_on_tpu_without_precision_gets_bfloat16_bounds(tmp_path, run_inproc, fake_tpu, monkeypatch):
    monkeypatch.delattr(SimulatedTpu, "precision")
    d = build_model_dir(tmp_path, "llama")
    code, res = run_inproc(d, target="tpu", task="text-generation", extra=["--dtype", "float32", "--no-compile",
                                                                          "--no-generate"])
    assert res["status"] == "pass", res["message"]
    assert "HIGHEST" not in SimulatedTpu.synced_at
    env = next(s for s in res["stages"] if s["stage"] == "env")["note"]
    assert "held to the bfloat16 tolerance" in env
    assert res["metrics"]["tolerance"] >= 5e-2


class FakeAccelerator:
    """torch.accelerator's sync and memory calls, counted, for an accelerator of type kind."""

    def __init__(self, kind):
        self.syncs = self.resets = 0
        self.kind = kind

    def current_accelerator(self):
        return torch.device(self.kind) if self.kind != "tpu" else type("Tpu", (), {"type": "tpu"})()

    def device_count(self):
        return 8

    def synchronize(self):
        self.syncs += 1

    def max_memory_allocated(self):
        return 1234

    def reset_peak_memory_stats(self):
        self.resets += 1


def test_tpu_syncs_and_counts_with_torch_accelerator_and_never_resets_the_peak(monkeypatch):
    acc = FakeAccelerator("tpu")
    monkeypatch.setattr(torch, "accelerator", acc)
    monkeypatch.setattr(torch, "tpu", SimulatedTpu, raising=False)
    SimulatedTpu.reset()
    dev = harness_testing.with_faults(harness.Probe, "tpu:simulate").device_cls(torch, "tpu")
    dev.init()
    dev.reset_peak()
    dev.sync()
    assert (dev.sync_name, acc.syncs, dev.count) == ("torch.accelerator.synchronize", 2, 8)
    assert (dev.peak_name, dev.peak_scope, acc.resets, dev.peak_bytes()) == ("torch.accelerator", "process", 0, 1234)
    assert not {"synchronize", "device_count"} & SimulatedTpu.used, SimulatedTpu.used


def test_tpu_without_torch_accelerator_on_it_neither_syncs_nor_counts_with_torch_tpu(monkeypatch):
    """torch.tpu.synchronize and device_count raise with torch >= 2.11: never a fallback on tpu."""
    monkeypatch.setattr(torch, "accelerator", FakeAccelerator("cuda"))
    monkeypatch.setattr(torch, "tpu", SimulatedTpu, raising=False)
    SimulatedTpu.reset()
    dev = type("OnCpu", (harness_testing.CpuTensors, harness.Device), {})(torch, "tpu")  # no simulated accelerator
    dev.init()
    assert (dev.sync_name, dev.count, dev.peak_name) == ("none (cpu)", 1, "")
    assert not {"synchronize", "device_count"} & SimulatedTpu.used, SimulatedTpu.used


def test_other_accelerators_sync_with_torch_accelerator_and_reset_the_peak(monkeypatch):
    acc = FakeAccelerator("cuda")
    monkeypatch.setattr(torch, "accelerator", acc)
    dev = harness.Device(torch, "cuda")
    dev.init()
    dev.reset_peak()
    assert dev.sync_name == "torch.accelerator.synchronize" and acc.syncs == 1 and dev.count == 8
    assert (dev.peak_scope, acc.resets) == ("since load", 2)
