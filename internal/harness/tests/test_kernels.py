"""The kernel table of a runtime (harness_kernels.py), read from the real torch_tpu 0.2.0 in a child process.

The classification rule is tested on made-up dispatcher answers; the table itself on the installed package,
which every environment `make` builds has (requirements.txt pins it). This process never imports torch_tpu.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import harness_kernels as hk

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PU1 = "PrivateUse1: registered at {src} [{kind}]"


def fake(native: set, lines: dict):
    return (lambda op: op in native), (lambda op: lines.get(op, ""))


def test_classify_rules():
    native = {"aten::addmm.out", "aten::linear", "aten::add.out"}
    lines = {
        "aten::addmm": PU1.format(
            src="RegisterCompositeExplicitAutogradNonFunctional_0.cpp:1", kind="default backend kernel"
        ),
        "aten::sub.Tensor": PU1.format(
            src="RegisterCompositeExplicitAutogradNonFunctional_0.cpp:2", kind="default backend kernel"
        ),
        "aten::add.Tensor": PU1.format(
            src="RegisterCompositeExplicitAutogradNonFunctional_0.cpp:3", kind="default backend kernel"
        ),
        "aten::index_put": PU1.format(src="RegisterCompositeExplicitAutograd_0.cpp:4", kind="default backend kernel"),
        "aten::layer_norm": PU1.format(src="RegisterCompositeImplicitAutograd_0.cpp:5", kind="math kernel"),
        "aten::median": PU1.format(src="csrc/eager/tpu_aten_kernels.cc:1149", kind="backend fallback"),
    }
    has, dump = fake(native, lines)
    got = {
        op: hk.classify(op, has, dump)
        for op in [
            "aten::linear",
            "aten::addmm",
            "aten::add.Tensor",
            "aten::sub.Tensor",
            "aten::index_put",
            "aten::layer_norm",
            "aten::median",
            "aten::no_line",
        ]
    }
    assert got == {"aten::linear": "native", "aten::addmm": "native", "aten::add.Tensor": "native",
                   "aten::sub.Tensor": "default",  # its out= overload is not native: torch's wrapper decomposes
                   "aten::index_put": "default", "aten::layer_norm": "default", "aten::median": "fallback",
                   "aten::no_line": "fallback"}


def test_out_overloads():
    assert hk.out_overloads("aten::add.Tensor") == ["aten::add.Tensor_out", "aten::add.out"]
    assert hk.out_overloads("aten::addmm") == ["aten::addmm.out"]


@pytest.fixture(scope="module")
def table():
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", TPU_SKIP_MDS_QUERY="1")
    p = subprocess.run([sys.executable, "-I", os.path.join(HERE, "harness_kernels.py")], env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout)


def test_real_table(table):
    """torch_tpu 0.2.0 on torch 2.15 (the facts of issue 36): 732 ops with a PrivateUse1 kernel of their own,
    more with the structured wrappers of a native out= kernel; median falls back; SDPA's overrideable kernel and
    the ops the CPU decomposes but the TPU implements are native."""
    assert table["torch_tpu"] == "0.2.0" and table["torch"].startswith("2.15")
    ops = table["ops"]
    assert len(ops) > 3000
    assert table["counts"]["native"] >= 700
    assert sum(table["counts"].values()) == len(ops)
    for op in ("aten::addmm", "aten::addmm.out", "aten::mm", "aten::linear", "aten::rms_norm", "aten::embedding",
               "aten::_scaled_dot_product_fused_attention_overrideable",
               "aten::_scaled_dot_product_fused_attention_overrideable_backward"):
        assert ops[op] == "native", op
    for op in ("aten::median", "aten::_aminmax", "aten::_batch_norm_with_update",
               "aten::_amp_foreach_non_finite_check_and_unscale_", "aten::_scaled_dot_product_flash_attention_for_cpu"):
        assert ops[op] == "fallback", op


def test_this_process_never_imported_torch_tpu(table):
    assert not [m for m in sys.modules if m == "torch_tpu" or m.startswith("torch_tpu.")]


def test_versions_are_the_tables_key_without_an_import(table):
    """--versions names the versions the full read keeps the table under (torch.__version__ with its local
    tag, torch_tpu's metadata), from the files alone: it imports neither torch nor torch_tpu, in a fraction of
    the table's time."""
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", TPU_SKIP_MDS_QUERY="1")
    code = ("import runpy, sys; sys.argv = ['harness_kernels.py', '--versions']; "
            "rc = 0\ntry:\n    runpy.run_path({!r}, run_name='__main__')\nexcept SystemExit as e:\n    rc = e.code\n"
            "print('IMPORTED' if 'torch' in sys.modules or 'torch_tpu' in sys.modules else 'CLEAN', file=sys.stderr)\n"
            "sys.exit(rc)").format(os.path.join(HERE, "harness_kernels.py"))
    p = subprocess.run([sys.executable, "-I", "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout) == {"torch": table["torch"], "torch_tpu": table["torch_tpu"]}
    assert p.stderr.strip().endswith("CLEAN"), p.stderr[-500:]


def test_the_optimizer_steps_ops_are_the_tpus(table):
    """The ops of AdamW's step as the trace names them (harness_ops.optimizer_as_on_tpu: the multi-tensor path
    torch takes on the TPU) are torch_tpu's own kernels in the real table, and so are the fused AdamW's; the CPU
    loop's ops would be judged against ops the TPU never dispatches for it."""
    from test_ops import adamw_step_ops

    ops, _ = adamw_step_ops()
    foreach = [o for o in ops if o.startswith("aten::_foreach_")]
    assert len(foreach) >= 5, ops
    assert {o: table["ops"].get(o) for o in foreach} == {o: "native" for o in foreach}
    assert [o for o in ops if table["ops"].get(o) == "fallback"] == []
    assert table["ops"]["aten::_fused_adamw_"] == "native" and table["ops"]["aten::_fused_adam_"] == "native"
