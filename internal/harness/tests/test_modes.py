"""The verdict matrix (result.modes, harness_modes.py): the train step (harness_train.py), the eager
modes and precision on a simulated TPU, graph breaks of the compile stage.

Expectations are written from the issue (issue 25), not from the code: three losses, each within the
train-loss bound of numerics.json of the float32 CPU reference's, weights changed, a step time and a
peak memory; a backward that fails is the train verdict's failure while the inference passes.
"""

import json
import math
import os

import pytest

import harness_train
from conftest import build_model_dir
from harness_testing import SimulatedTpu

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(HERE, "numerics.json"), encoding="utf-8") as fh:
    NUMERICS = json.load(fh)


def assert_train_passes(res: dict, dtype: str = "float32") -> dict:
    assert res["status"] == "pass", res["message"]
    tr = res["modes"]["train"]
    assert tr["status"] == "pass", tr
    m = tr["metrics"]
    assert len(m["losses"]) == 3 and len(m["reference_losses"]) == 3, m
    row = NUMERICS["dtypes"][dtype]
    for d, r in zip(m["losses"], m["reference_losses"]):
        assert math.isfinite(d) and math.isfinite(r)
        assert abs(d - r) <= row["train_loss_atol"] + row["train_loss_rtol"] * abs(r), (d, r)
    assert m["losses"][2] < m["losses"][0], m["losses"]  # three AdamW steps on one batch lower its loss
    assert m["step_ms"] > 0 and m["peak_mem_bytes"] > 0, m
    assert 0 < m["params_changed"] <= 1
    return m


@pytest.mark.parametrize("kind,task,tokens,compile_", [
    ("llama", "text-generation", True, True),  # one family through compile: its graph breaks (none)
    ("bert", "fill-mask", True, False),
    ("t5", "text2text-generation", True, False),
    ("vit", "image-classification", False, False),
])
def test_the_train_step_passes_on_cpu_close_to_the_reference(tmp_path, run_inproc, kind, task, tokens, compile_):
    d = build_model_dir(tmp_path, kind)
    extra = ["--dtype", "float32", "--no-generate"] + ([] if compile_ else ["--no-compile"])
    code, res = run_inproc(d, target="cpu", task=task, extra=extra)
    m = assert_train_passes(res)
    assert (m["tokens_per_s"] is not None) == tokens, m
    assert m["samples_per_s"] > 0
    assert res["modes"]["eager"]["status"] == "pass"
    assert "one eager mode" in res["modes"]["eager"]["note"]
    if compile_:
        assert res["modes"]["compiled"]["status"] == "pass"
        assert res["metrics"]["graph_breaks"] == 0 and res["metrics"]["graph_break_reasons"] == []
    else:
        assert "compiled" not in res["modes"]
    assert res["metrics"]["precision"] is None and "precision_sensitive" not in res


def test_a_backward_that_fails_is_a_train_failure_while_inference_passes(tmp_path, run_inproc, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_INJECT", "train:no-backward")
    d = build_model_dir(tmp_path, "gpt2")
    code, res = run_inproc(d, target="cpu", task="text-generation", extra=["--dtype", "float32", "--no-generate"])
    assert res["status"] == "pass", res["message"]
    tr = res["modes"]["train"]
    assert (tr["status"], tr["stage"]) == ("fail", "backward"), tr
    assert tr["signature"] and "no_backward" in tr["message"], tr
    assert tr["metrics"]["reference_losses"] and len(tr["metrics"]["reference_losses"]) == 3


def test_a_forced_graph_break_is_counted_with_its_reason(tmp_path, run_inproc, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_INJECT", "compile:graph-break")
    d = build_model_dir(tmp_path, "gpt2")
    code, res = run_inproc(d, target="cpu", task="text-generation", extra=["--no-generate", "--no-modes"])
    assert res["status"] == "pass", res["message"]
    m = res["metrics"]
    assert m["graph_breaks"] >= 1, m
    assert 1 <= len(m["graph_break_reasons"]) <= 3
    assert any("graph_break" in r for r in m["graph_break_reasons"]), m["graph_break_reasons"]
    c = res["modes"]["compiled"]["metrics"]
    assert c["graph_breaks"] == m["graph_breaks"] and c["graphs"] >= 2, c
    assert "train" not in res["modes"]  # --no-modes: no train step


def test_a_family_without_a_loss_skips_the_train_step_with_the_reason(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "bert-base")
    code, res = run_inproc(d, target="cpu", task="feature-extraction", extra=["--no-compile"])
    assert res["status"] == "pass", res["message"]
    tr = res["modes"]["train"]
    assert (tr["status"], tr["reason"]) == ("skipped", "no_loss"), tr
    assert "no labels" in tr["message"]


def test_the_plan_skips_a_train_step_that_does_not_fit(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "gpt2")
    code, res = run_inproc(d, target="cpu", task="text-generation",
                           extra=["--no-compile", "--no-generate", "--no-train", "weights x4 exceed the memory"])
    tr = res["modes"]["train"]
    assert (tr["status"], tr["reason"]) == ("skipped", "too_large")
    assert "weights x4" in tr["message"]


@pytest.fixture
def fake_tpu(monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_INJECT", "tpu:simulate")


def test_tpu_times_both_eager_modes_through_set_eager_mode(tmp_path, run_inproc, fake_tpu):
    d = build_model_dir(tmp_path, "llama")
    code, res = run_inproc(d, target="tpu", task="text-generation", extra=["--no-generate"])
    assert res["status"] == "pass", res["message"]
    modes = res["modes"]
    assert "eager" not in modes
    for key, member in (("eager_defer_and_fuse", "DEFER_AND_FUSE"), ("eager_defer_never", "DEFER_NEVER")):
        v = modes[key]
        assert v["status"] == "pass", v
        assert v["metrics"]["forward_ms"] > 0 and v["metrics"]["precision"] == "default"
        assert SimulatedTpu.synced_eager.get(member, 0) > 0, SimulatedTpu.synced_eager
    assert modes["train"]["metrics"]["precision"] == "default"
    assert res["metrics"]["precision"] == "default"  # bfloat16 on tpu runs at the default precision
    checks = res["metrics"]["precision_checks"]
    assert set(checks) == {"default", "highest"} and checks["default"]["ok"] and checks["highest"]["ok"]
    assert "precision_sensitive" not in res


def test_tpu_a_model_that_passes_only_at_highest_is_precision_sensitive(tmp_path, run_inproc, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_INJECT", "tpu:simulate;tpu:precision-sensitive")
    d = build_model_dir(tmp_path, "llama")
    code, res = run_inproc(d, target="tpu", task="text-generation",
                           extra=["--no-generate", "--no-compile", "--dtype", "bfloat16"])
    assert res["status"] == "pass", res["message"]
    assert res.get("precision_sensitive") is True
    checks = res["metrics"]["precision_checks"]
    assert checks["default"]["ok"] is False and checks["highest"]["ok"] is True, checks
    assert res["metrics"]["numerics_precision"] == "highest"
    notes = {s["stage"]: s.get("note", "") for s in res["stages"]}
    assert "Precision.HIGHEST" in notes["numerics"]


def test_without_the_matrix_there_is_no_second_precision(tmp_path, run_inproc, fake_tpu):
    d = build_model_dir(tmp_path, "llama")
    code, res = run_inproc(d, target="tpu", task="text-generation", extra=["--no-generate", "--no-modes"])
    assert res["status"] == "pass", res["message"]
    assert "precision_checks" not in res["metrics"] and "train" not in res["modes"]
    assert "eager_defer_never" not in res["modes"]


def test_labels_follow_the_family():
    import torch
    import transformers as tf

    from conftest import tiny_config

    ids = torch.tensor([[5, 6, 7]])
    m = tf.BertModel(tiny_config("bert-base"))
    with pytest.raises(harness_train.NoLoss):
        harness_train.labels_for(torch, m, {"input_ids": ids})
    m = tf.BertForMaskedLM(tiny_config("bert"))
    out, note = harness_train.labels_for(torch, m, {"input_ids": ids})
    assert torch.equal(out["labels"], ids) and "input ids" in note
    m = tf.T5ForConditionalGeneration(tiny_config("t5"))
    out, _ = harness_train.labels_for(torch, m, {"input_ids": ids, "decoder_input_ids": torch.tensor([[0, 3]])})
    assert torch.equal(out["labels"], torch.tensor([[0, 3]])) and "decoder_input_ids" not in out


def test_the_loss_bound_is_numerics_json_per_dtype():
    row = NUMERICS["dtypes"]["bfloat16"]
    assert harness_train.loss_bound(row, 2.0) == pytest.approx(row["train_loss_atol"] + 2.0 * row["train_loss_rtol"])
    dev = {"losses": [1.0, 0.9, 0.8], "grad_norms": [1.0] * 3, "changed": 1}
    ok, *_ = harness_train.judge_losses(dev, {"losses": [1.0, 0.9, 0.8]}, row)
    assert ok
    ok, why, detail, *_ = harness_train.judge_losses(
        dict(dev, losses=[1.0, 0.9, 1.5]), {"losses": [1.0, 0.9, 0.8]}, row
    )
    assert not ok and "step 3" in why and detail == "train loss differs from the reference"
    ok, why, detail, *_ = harness_train.judge_losses(dict(dev, changed=0), {"losses": [1.0, 0.9, 0.8]}, row)
    assert not ok and detail == "train weights unchanged"
    ok, why, detail, *_ = harness_train.judge_losses(
        dict(dev, grad_norms=[1.0, float("nan"), 1.0]), {"losses": [1.0, 0.9, 0.8]}, row
    )
    assert not ok and detail == "train gradients not finite"
