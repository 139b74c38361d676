"""The ops a probe traces for the TorchTPU prediction (harness_ops.py), on tiny real models on CPU.

After the renaming of tpu_ops.json no traced name may be one the TPU never dispatches: the CPU's own
variants (written out here, not read from the table, so that a table that forgot one fails).
"""

from __future__ import annotations

import pytest

import harness_ops as hops
from conftest import build_model_dir
from tiny_families import TINY, clip

CPU_ONLY = ("_for_cpu", "mkldnn", "_cpu")


def cpu_only_names(names):
    return [n for n in names if any(m in n for m in CPU_ONLY)]


def test_renaming():
    assert hops.to_tpu("aten::_scaled_dot_product_flash_attention_for_cpu") == \
        "aten::_scaled_dot_product_fused_attention_overrideable"
    assert hops.to_tpu("aten::_scaled_dot_product_flash_attention_for_cpu_backward") == \
        "aten::_scaled_dot_product_fused_attention_overrideable_backward"
    assert hops.to_tpu("aten::_fused_sdp_choice") is None
    assert hops.to_tpu("profiler::_record_function_enter_new") is None
    assert hops.to_tpu("aten::addmm") == "aten::addmm"
    for name in hops.TABLE["map"]:  # every CPU-only name the table knows is renamed away
        to = hops.to_tpu(name)
        assert to is None or not cpu_only_names([to]), (name, to)


def test_op_names():
    import torch

    assert hops.op_name(torch.ops.aten.addmm.default) == "aten::addmm"
    assert hops.op_name(torch.ops.aten.add.Tensor) == "aten::add.Tensor"

    class Hop:  # no schema, as a higher-order operator
        __name__ = "flex_attention"

    assert hops.op_name(Hop()) == "higher_order::flex_attention"


def test_a_failed_trace_never_reaches_the_probe():
    t = hops.Tracer()
    t.enabled = True
    t.call("forward", lambda: None)

    def boom():
        raise RuntimeError("no")

    t.call("generate", boom)
    res = t.result()
    assert "generate" not in res and res["forward"] == [] and "generate not traced" in res["notes"][0]


def adamw_step_ops(**opt_kw):
    """The train trace of one forward, backward and AdamW step of a tiny linear model, and its optimizer."""
    import torch

    m, x = torch.nn.Linear(8, 8), torch.randn(2, 8)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, **opt_kw)
    t = hops.Tracer()
    t.enabled = True

    def step():
        m(x).sum().backward()
        opt.step()

    t.call("train", step)
    assert not t.notes, t.notes
    return hops.renamed(t.seen["train"]), opt


def test_the_optimizer_step_is_traced_as_the_tpu_dispatches_it():
    """On a PrivateUse1 device torch's optimizers take the multi-tensor path (the TPU's backend is among the
    foreach devices of the real torch); the traced step names its aten::_foreach_* ops, not the CPU's loop, and
    the optimizer is left as it was. An optimizer that chose the loop (foreach=False) is traced as it is."""
    import torch
    from torch.utils._foreach_utils import _get_foreach_kernels_supported_devices

    assert torch._C._get_privateuse1_backend_name() in _get_foreach_kernels_supported_devices()
    ops, opt = adamw_step_ops()
    for op in ("aten::_foreach_lerp_.Scalar", "aten::_foreach_addcdiv_.ScalarList", "aten::_foreach_sqrt",
               "aten::_foreach_mul_.Scalar"):
        assert op in ops, ops
    assert not {"aten::lerp_.Scalar", "aten::addcdiv_", "aten::addcmul_"} & set(ops), ops
    assert all(g["foreach"] is None for g in opt.param_groups)
    loop, opt = adamw_step_ops(foreach=False)
    assert "aten::lerp_.Scalar" in loop and not [o for o in loop if "_foreach_" in o], loop
    assert all(g["foreach"] is False for g in opt.param_groups)


def test_off_traces_nothing():
    t = hops.Tracer()
    t.call("forward", lambda: None)
    assert t.result() is None


KINDS = {"llama": ("text-generation", True, True), "bert": ("fill-mask", False, True),
         "t5": ("text2text-generation", True, True), "vit": ("image-classification", False, True),
         "whisper": ("automatic-speech-recognition", True, True)}


@pytest.mark.parametrize("kind", sorted(KINDS) + ["clip"])
def test_traces_name_no_cpu_only_op(kind, tmp_path, run_inproc):
    if kind == "clip":
        from conftest import snapshot_layout

        staging = tmp_path / "stage-clip"
        clip().save_pretrained(str(staging))
        d, task, generates, trains = snapshot_layout(str(staging), str(tmp_path / "models--t--clip")), \
            TINY["clip"][0], False, False
    else:
        task, generates, trains = KINDS[kind]
        d = build_model_dir(tmp_path, kind, full=False)
    code, res = run_inproc(d, task=task, mode="arch", extra=["--no-compile"])
    assert (code, res["status"]) == (0, "pass"), res["message"]
    tr = res["ops_traced"]
    assert len(tr["forward"]) >= 8, tr
    assert ("generate" in tr) == generates, tr.keys()
    if trains:
        assert len(tr["train"]) > len(tr["forward"]), tr  # backward and the optimizer add ops
    for k in hops.KINDS:
        assert cpu_only_names(tr.get(k, [])) == [], (k, tr[k])
        assert tr.get(k, []) == sorted(set(tr.get(k, [])))
    if kind == "llama":  # SDPA as the TPU reaches it, forward and backward
        assert "aten::_scaled_dot_product_fused_attention_overrideable" in tr["forward"]
        assert "aten::_scaled_dot_product_fused_attention_overrideable_backward" in tr["train"]
        assert "aten::embedding_dense_backward" in tr["train"]
        # AdamW's step as the TPU dispatches it: the multi-tensor ops, not the CPU's per-tensor loop
        assert "aten::_foreach_lerp_.Scalar" in tr["train"] and "aten::lerp_.Scalar" not in tr["train"]


def test_ops_trace_off(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "bert", full=False)
    code, res = run_inproc(d, task="fill-mask", mode="arch", extra=["--no-compile", "--no-ops-trace"])
    assert (code, res["status"]) == (0, "pass") and "ops_traced" not in res
