"""Sharded probes (harness_shard.py): the rules as pure functions, and two ranks of the real harness on cpu
(gloo) for what the Go runner cannot inject: a rank that hangs in a collective, a failure on every rank.
A tensor-parallel and an FSDP2 probe run end to end from the scanner's plan in cmd/scanner (TestShardedScan).
"""

import importlib.util
import json
import os
import socket
import subprocess
import sys
from types import SimpleNamespace

import pytest

import harness_efficiency
import harness_shard
from conftest import HARNESS, HARNESS_DIR, build_model_dir, harness_args


def test_devices_table_topologies_are_torch_tpus():
    """devices.json's slice topologies are the installed torch_tpu's (hardware.py, read without importing
    torch_tpu's package, which would load its runtime)."""
    spec = importlib.util.find_spec("torch_tpu")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch_tpu is not installed")
    path = os.path.join(list(spec.submodule_search_locations)[0], "_internal", "utils", "hardware.py")
    mod_spec = importlib.util.spec_from_file_location("tt_hardware", path)
    hw = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(hw)
    theirs = {"tpu-v5e": hw._V5E_TOPOLOGY, "tpu-v5p": hw._V5P_TOPOLOGY, "tpu-v6e": hw._V6E_TOPOLOGY,
              "tpu-v7x": hw._V7_TOPOLOGY}
    with open(os.path.join(HARNESS_DIR, "devices.json")) as fh:
        ours = {d["key"]: d.get("topologies") for d in json.load(fh)["devices"] if d["target"] == "tpu"}
    assert set(ours) == set(theirs)
    for key, table in theirs.items():
        assert ours[key] == {str(n): t for n, t in table.items()}, key


def test_rank_result_path_matches_go():
    # internal/probe/shard.go rankResultFile: the extension stays last
    assert harness_shard.rank_result_path("/run/x/result.json", 1) == "/run/x/result.rank1.json"
    assert harness_shard.rank_result_path("/run/x/result", 3) == "/run/x/result.rank3"


def test_rank_of(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    assert harness_shard.rank_of(1) == 0
    with pytest.raises(RuntimeError, match="WORLD_SIZE=2"):
        harness_shard.rank_of(2)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(RuntimeError):
        harness_shard.rank_of(2)  # the runner said 4 ranks, the harness was told 2
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert harness_shard.rank_of(2) == 1


class WithPlan:
    _tp_plan = {"lm_head": "colwise_gather_output"}


class WithoutPlan:
    _tp_plan = None


def cfg(heads, kv=None, base_plan=None):
    return SimpleNamespace(num_attention_heads=heads, num_key_value_heads=kv or heads, base_model_tp_plan=base_plan)


@pytest.mark.parametrize("asked,cls,config,world,want", [
    ("auto", WithPlan, cfg(4, 2), 2, "tp"),
    ("auto", WithoutPlan, cfg(4, 2, base_plan={"layers.*.self_attn.q_proj": "colwise"}), 2, "tp"),
    ("auto", WithoutPlan, cfg(4, 2), 2, "fsdp"),     # no plan anywhere
    ("auto", WithPlan, cfg(6, 6), 4, "fsdp"),        # 4 does not divide 6 heads
    ("auto", WithPlan, cfg(8, 2), 4, "fsdp"),        # nor 2 key/value heads
    ("fsdp", WithPlan, cfg(4, 2), 2, "fsdp"),
    ("tp", WithoutPlan, cfg(4, 2), 2, "tp"),
])
def test_choose(asked, cls, config, world, want):
    got, why = harness_shard.choose(asked, cls, config, world)
    assert got == want and why


def test_collective_timeouts():
    gloo = RuntimeError(
        "[gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 5000ms for recv operation to complete"
    )
    peer = RuntimeError("[gloo/transport/tcp/pair.cc:561] Connection closed by peer [127.0.0.1]:16098")
    store = type("DistStoreError", (RuntimeError,), {})("Socket Timeout")
    wrapped = ValueError("forward failed")
    wrapped.__cause__ = gloo
    assert (
        harness_shard.is_collective_timeout(gloo)
        and harness_shard.is_collective_timeout(store)
        and harness_shard.is_collective_timeout(wrapped)
    )
    assert not harness_shard.is_collective_timeout(peer) and not harness_shard.is_collective_timeout(
        RuntimeError("timeout of the model")
    )
    c = harness_shard.timeout_class(gloo, "forward", 0, 2, 5)
    assert c["status"] == "timeout" and c["failure_class"] == "timeout" and c["signature"] == "timeout:forward"
    assert c["message"].startswith("rank 0 of 2: a collective of stage forward timed out after 5s")


def test_efficiency_against_the_group_peaks():
    # 2·(2.5e8/32)·32 = 5e8 FLOPs, plus the attention term 2·1·1·2·32² = 4096, in 1 ms: on one device of
    # 1e12 FLOP/s 0.500004, on two 0.250002. 1e6 weight bytes at 100 tokens/s against 1e9 B/s: 0.1; two: 0.05.
    dev = {"key": "x", "bf16_flops": 1e12, "hbm_bytes_per_s": 1e9}
    stats = {"matmul_params": 2.5e8 / 32, "weight_bytes": 1e6}
    shape = (1, 1, 1, 1)
    mfu1, mbu1, info1 = harness_efficiency.compute(dev, stats, shape, 32, 1.0, 100.0)
    mfu2, mbu2, info2 = harness_efficiency.compute(dev, stats, shape, 32, 1.0, 100.0, devices=2)
    assert mfu1 == pytest.approx(0.500004, abs=1e-6) and mbu1 == pytest.approx(0.1)
    assert mfu2 == pytest.approx(0.250002, abs=1e-6) and mbu2 == pytest.approx(0.05)
    assert "devices" not in info1 and info2["devices"] == 2 and info2["peak_bf16_flops"] == 2e12


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_ranks(model_dir, out, inject, extra):
    """Two ranks of the harness as the Go runner starts them (its RankEnv's variables on cpu)."""
    port = free_port()
    procs = []
    for rank in (0, 1):
        env = {k: v for k, v in os.environ.items() if k != "HARNESS_TEST_INJECT"}
        env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1", TORCH_DEVICE_BACKEND_AUTOLOAD="0",
                   HARNESS_TEST_INJECT=inject)
        args = harness_args(model_dir, out, mode="arch", task="text-generation",
                            extra=["--devices", "2", "--no-compile", *extra])
        procs.append(subprocess.Popen([sys.executable, "-I", "-u", "-B", HARNESS, *args], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    return procs


@pytest.mark.parametrize("kind,sharding", [("llama", "tp"), ("gpt2", "fsdp")])
def test_sharded_float32_logits_match_the_unsharded_reference(tmp_path, kind, sharding):
    """In float32 (the cpu default is bfloat16, whose rounding hides a wrong shard), two gloo ranks' gathered
    logits equal the unsharded float32 reference's to 1e-5: tensor parallel for Llama (transformers' plan), FSDP2
    for GPT-2 (none). The lead measured 3e-8 for both in the pinned torch."""
    model = build_model_dir(tmp_path, kind, full=False)
    out = tmp_path / "result.json"
    procs = launch_ranks(model, out, "", ["--dtype", "float32"])
    errs = wait_ranks(procs)
    assert [p.returncode for p in procs] == [0, 0], [e[-1500:] for e in errs]
    res = json.loads(out.read_text())
    assert res["status"] == "pass" and res["devices_used"] == 2 and res["sharding"] == sharding, res
    diff = res["metrics"]["max_abs_diff"]
    assert diff is not None and diff < 1e-5, diff


def wait_ranks(procs) -> list:
    """Each rank's stderr once it exits (300 s at most); no rank outlives the test."""
    try:
        return [p.communicate(timeout=300)[1] for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_rank_that_hangs_is_a_collective_timeout(tmp_path):
    """Rank 1 hangs as forward starts: rank 0's first collective times out, and rank 0 reports status timeout
    naming itself, the stage and the timeout (the runner's keeper then ends rank 1)."""
    model = build_model_dir(tmp_path, "llama", full=False)
    out = tmp_path / "result.json"
    procs = launch_ranks(model, out, "rank1:hang:forward", ["--collective-timeout-s", "5"])
    try:
        _, err = procs[0].communicate(timeout=300)
        assert procs[0].returncode == 0, err[-2000:]
        assert procs[1].poll() is None, "rank 1 was told to hang"
    finally:
        for p in procs:
            p.kill()
            p.wait()
    res = json.loads(out.read_text())
    assert res["status"] == "timeout" and res["failure_class"] == "timeout" and res["stage"] == "forward", res
    assert res["message"].startswith("rank 0 of 2: a collective of stage forward timed out after 5s"), res["message"]
    assert res["devices_used"] == 2 and res["sharding"] == "tp"
    assert not (tmp_path / "result.rank1.json").exists()


def test_every_rank_reports_its_own_failure(tmp_path):
    """Both ranks fail at load: rank 0 writes the probe's result and exits 0; rank 1 writes result.rank1.json
    and exits 3, which is how the keeper knows a rank other than 0 failed."""
    model = build_model_dir(tmp_path, "llama", full=False)
    out = tmp_path / "result.json"
    procs = launch_ranks(model, out, "load:NotImplementedError:Could not run 'aten::standin' with arguments from the "
                                     "'CPU' backend", [])
    errs = wait_ranks(procs)
    assert [p.returncode for p in procs] == [0, harness_shard.RANK_FAILED], [e[-1500:] for e in errs]
    for path in (out, tmp_path / "result.rank1.json"):
        res = json.loads(path.read_text())
        assert res["status"] == "fail" and res["stage"] == "load" and res["devices_used"] == 2, (path, res)
        assert res["failure_class"] == "unsupported_op" and res["op"] == "aten::standin"
