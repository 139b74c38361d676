"""Whose failure it is: the float32 CPU reference runs the stage that failed on the target, with the same inputs.

A failure the reference shares is the scanner's error (status error, a signature naming the scanner's part:
harness_inputs, harness_load, environment:missing_package), never the model's verdict; a failure the reference
does not share is the target's, as before. The rule is harness_failures.arbitrate (a table test here); the runs
use real tiny models on CPU (bfloat16, the cpu target's verdict, against the float32 reference), with stand-ins
for the scanner's mistakes: an input id beyond the embedding (HARNESS_TEST_INJECT inputs:beyond-vocab), a
package transformers asks for made unavailable (its own BACKENDS_MAPPING), a backbone timm does not know.
"""

from __future__ import annotations

import json
import os

import pytest

import harness
import harness_failures
from conftest import assert_contract_shape, build_model_dir, harness_args, snapshot_layout
from tiny_families import detr_timm

FAST = ["--no-compile", "--no-generate"]


def stage_map(res):
    return {s["stage"]: s for s in res["stages"]}


def _exc(e):
    try:
        raise e
    except BaseException as caught:  # noqa: BLE001
        return caught


def _fail(stage, sig="other:RuntimeError: boom", cls="other"):
    return {"status": "fail", "failure_class": cls, "op": None, "signature": sig, "message": "RuntimeError: boom",
            "log_tail": "device traceback"}


# --- the rule ---------------------------------------------------------------------------------------------------

REF_FAIL = {"status": "fail", "failure_class": "other", "op": None,
            "signature": "other:IndexError: index out of range in self",
            "message": "IndexError: index out of range in self", "log_tail": "reference traceback"}
REF_LOAD = dict(REF_FAIL, failure_class="load_error", signature="load_error:RuntimeError: Unknown model <q>",
                message="RuntimeError: Unknown model (not_a_model)")
REF_ENV = dict(REF_FAIL, status="error", failure_class="import_error",
               signature="environment:missing_package:timm", message="ImportError: ... requires the timm library")
REF_OOM = dict(REF_FAIL, status="oom", failure_class="oom", signature="oom:forward", message="MemoryError")


@pytest.mark.parametrize("name,stage,device,reference,ran,want_status,want_sig,note", [
    ("the reference passes: the target's", "forward", _fail("forward"), None, True, "fail",
     "other:RuntimeError: boom", "passes the forward stage"),
    ("the reference fails the forward too", "forward", _fail("forward"), REF_FAIL, True, "error",
     "harness_inputs:IndexError: index out of range in self", "fails the forward stage too"),
    ("the reference fails generate too", "generate", _fail("generate"), REF_FAIL, True, "error",
     "harness_inputs:IndexError: index out of range in self", "fails the generate stage too"),
    ("the reference fails compile too", "compile", _fail("compile", "compile_error:x", "compile_error"), REF_FAIL,
     True, "error", "harness_inputs:IndexError: index out of range in self", "fails the compile stage too"),
    ("the reference cannot build the model", "load", _fail("load", "load_error:x", "load_error"), REF_LOAD, True,
     "error", "harness_load:RuntimeError: Unknown model <q>", "fails the load stage too"),
    ("a package missing on the reference", "load", _fail("load", "import_error:x", "import_error"), REF_ENV, True,
     "error", "environment:missing_package:timm", "fails the load stage too"),
    ("the reference out of host memory", "forward", _fail("forward"), REF_OOM, True, "fail",
     "other:RuntimeError: boom", "ran out of host memory"),
    ("the reference could not run", "forward", _fail("forward"), None, False, "fail", "other:RuntimeError: boom",
     "could not run"),
    ("oom on the target is the target's", "forward", dict(_fail("forward"), status="oom", signature="oom:forward"),
     REF_FAIL, True, "oom", "oom:forward", ""),
    ("an error stays an error", "forward", dict(_fail("forward"), status="error", signature="environment:x"),
     None, True, "error", "environment:x", ""),
    ("numerics compares with the reference it ran", "numerics",
     _fail("numerics", "numerics_mismatch:max_abs_diff", "numerics_mismatch"), REF_FAIL, True, "fail",
     "numerics_mismatch:max_abs_diff", ""),
    ("config runs no model", "config", _fail("config", "config_error:x", "config_error"), REF_FAIL, True, "fail",
     "config_error:x", ""),
])
def test_arbitrate(name, stage, device, reference, ran, want_status, want_sig, note):
    out, why = harness_failures.arbitrate(stage, device, reference, ran)
    assert (out["status"], out["signature"]) == (want_status, want_sig), name
    assert (note in why) if note else why == "", (name, why)
    if want_status == "error" and device["status"] == "fail":
        assert out["op"] is None and out["failure_class"] == reference["failure_class"]
        assert out["message"].startswith("not a verdict on the model: the float32 cpu reference fails")
        assert reference["message"] in out["message"] and device["message"] in out["message"]
        assert out["log_tail"] == "reference traceback"


TIMM_MESSAGE = (
    "\nTimmBackbone requires the timm library but it was not found in your environment. You can install it "
    "with pip:\n`pip install timm`. Please note that you may need to restart your runtime after installation.\n"
)


def _not_found(name):
    e = ModuleNotFoundError(f"No module named '{name}'")
    e.name = name
    return e


@pytest.mark.parametrize("exc,find,want", [
    (ImportError(TIMM_MESSAGE), None, "timm"),
    (ImportError("\nFooModel requires the PIL library but it was not found in your environment. You can install it "
                 "with pip:\n`pip install pillow`."), None, "pillow"),
    (ImportError("Foo requires the scipy library but it was not found in your environment."), None, "scipy"),
    (ImportError("This modeling file requires the following packages that were not found in your environment: "
                 "einops. Run `pip install einops`"), None, "einops"),
    (_not_found("sentencepiece"), lambda name: None, "sentencepiece"),
    (_not_found("torchvision.ops"), lambda name: None, "torchvision"),
    (_not_found("torch_tpu._internal.x"), lambda name: object(), None),  # installed, broken inside: not missing
    (ImportError("cannot import name 'FooBlock' from 'transformers.models.foo'"), None, None),
    (RuntimeError("requires the timm library but it was not found"), None, None),  # not an ImportError
])
def test_missing_package(exc, find, want):
    assert harness_failures.missing_package(_exc(exc), find_spec=find) == want


def test_a_missing_package_is_the_environments_error_in_any_stage():
    for stage in ("config", "load", "forward"):
        c = harness_failures.classify(_exc(ImportError(TIMM_MESSAGE)), stage)
        assert (c["status"], c["failure_class"], c["signature"]) == \
            ("error", "import_error", "environment:missing_package:timm"), stage


def test_shared_checks_are_the_scanners():
    c = harness_failures.classify(
        _exc(
            harness_failures.SharedFailure(
                harness_failures.INPUTS_ORIGIN,
                "perplexity ... the model itself",
                "passage perplexity of the model itself",
            )
        ),
        "numerics",
    )
    assert (c["status"], c["signature"]) == ("error", "harness_inputs:passage perplexity of the model itself")
    c = harness_failures.classify(
        _exc(harness_failures.ReferenceFailed("the reference failed", "oom:numerics", "oom")), "numerics"
    )
    assert (c["status"], c["failure_class"], c["signature"]) == ("error", "oom", "reference:oom:numerics")


# --- real runs ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind,task", [("llama", "text-generation"), ("bert", "fill-mask")])
def test_an_input_error_the_reference_shares_is_the_scanners(tmp_path, run_inproc, monkeypatch, kind, task):
    """The stand-in of LLaVA-NeXT-Video's case: a token id one past the embedding, in the inputs the target and the
    reference share. Both fail the forward: error, harness_inputs, never the model's fail."""
    monkeypatch.setenv("HARNESS_TEST_INJECT", "inputs:beyond-vocab")
    d = build_model_dir(tmp_path, kind, full=False)
    code, res = run_inproc(d, task=task, mode="arch", extra=FAST)
    assert code == 0
    assert_contract_shape(res)
    assert (res["status"], res["stage"]) == ("error", "forward"), res["message"]
    assert res["signature"] == "harness_inputs:IndexError: index out of range in self"
    assert res["message"].startswith("not a verdict on the model: the float32 cpu reference fails the forward stage")
    assert "the scanner's error, not the model's" in stage_map(res)["forward"]["note"]


def test_a_failure_the_reference_does_not_share_is_the_targets(tmp_path, run_inproc, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_INJECT", "forward:RuntimeError:the target's own failure")
    d = build_model_dir(tmp_path, "llama", full=False)
    code, res = run_inproc(d, task="text-generation", mode="arch", extra=FAST)
    assert (res["status"], res["stage"], res["signature"]) == \
        ("fail", "forward", "other:RuntimeError: the target's own failure")
    assert "the float32 cpu reference passes the forward stage" in stage_map(res)["forward"]["note"]


def test_a_generate_failure_the_reference_does_not_share_is_the_targets(tmp_path, run_inproc, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_INJECT", "generate:RuntimeError:decode broke on the target")
    d = build_model_dir(tmp_path, "llama", full=False)
    code, res = run_inproc(d, task="text-generation", mode="arch", extra=["--no-compile"])
    assert (res["status"], res["stage"]) == ("fail", "generate"), res["message"]
    assert "the float32 cpu reference passes the generate stage" in stage_map(res)["generate"]["note"]


def _detr_dir(base, **changes) -> str:
    staging = os.path.join(str(base), "stage-detr")
    os.makedirs(staging)
    with open(os.path.join(staging, "config.json"), "w") as fh:
        json.dump(dict(detr_timm(), **changes), fh)
    return snapshot_layout(staging, os.path.join(str(base), "models--facebook--detr-resnet-50"))


def test_a_missing_package_is_never_the_models_import_error(tmp_path, run_inproc, monkeypatch):
    """facebook/detr-resnet-50's layout needs timm (TimmBackbone). With timm made unavailable the way transformers
    sees it (its own availability table), the probe is the environment's error naming the package."""
    from transformers.utils import import_utils

    monkeypatch.setitem(import_utils.BACKENDS_MAPPING, "timm", (lambda: False, import_utils.TIMM_IMPORT_ERROR))
    code, res = run_inproc(_detr_dir(tmp_path), task="object-detection", mode="arch", extra=FAST)
    assert_contract_shape(res)
    assert (res["status"], res["stage"], res["failure_class"], res["signature"]) == \
        ("error", "load", "import_error", "environment:missing_package:timm"), res["message"]
    assert "requires the timm library" in res["message"]


def test_with_timm_the_detr_layout_runs(tmp_path, run_inproc):
    code, res = run_inproc(_detr_dir(tmp_path), task="object-detection", mode="arch", extra=FAST)
    assert res["status"] == "pass", res["message"]


def test_a_model_the_reference_cannot_build_is_the_scanners(tmp_path, run_inproc):
    """A backbone timm does not know: building the model fails on the float32 cpu reference too (arch mode builds
    the reference first), so it is not a verdict on the target."""
    code, res = run_inproc(_detr_dir(tmp_path, backbone="not_a_timm_model"), task="object-detection", mode="arch",
                           extra=FAST)
    assert (res["status"], res["stage"]) == ("error", "load"), res["message"]
    assert res["signature"].startswith("harness_load:"), res["signature"]
    assert "not a verdict on the model" in res["message"]


def _probe(model_dir, tmp_path, mode, extra=()):
    out = tmp_path / f"result-{mode}.json"
    return harness.new_probe(harness.parse_args(harness_args(model_dir, out, mode=mode, task="text-generation",
                                                             extra=list(extra))))


@pytest.mark.parametrize("mode", ["arch", "full"])
def test_the_reference_is_built_once_when_the_target_passes(tmp_path, mode, monkeypatch):
    """The arbitration costs nothing on a pass: the reference numerics needs is the only one built."""
    monkeypatch.delenv("HARNESS_TEST_INJECT", raising=False)
    d = build_model_dir(tmp_path, "llama", full=mode == "full")
    probe = _probe(d, tmp_path, mode, ["--no-compile"])
    res = probe.run()
    assert res.status == "pass", res.message
    assert probe.reference.builds == 1


def test_the_cpu_verdict_says_what_it_compares(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "llama", full=False)
    code, res = run_inproc(d, task="text-generation", mode="arch", extra=FAST)
    assert "verdict: bfloat16 on cpu against the float32 cpu reference" in stage_map(res)["env"]["note"]
    assert "bfloat16 vs float32 cpu reference" in stage_map(res)["numerics"]["note"]
    code, res = run_inproc(d, task="text-generation", mode="arch", extra=FAST + ["--dtype", "float32"])
    assert "float32 on cpu is the float32 cpu reference itself" in stage_map(res)["env"]["note"]
