"""Failures land in the right stage, class and status; isolation rules hold."""

import json
import os
import pickle
import subprocess
import sys

import pytest

from conftest import HARNESS, assert_contract_shape, build_model_dir, write_config

NO_COMPILE = ["--no-compile"]
FAST = ["--no-compile", "--no-generate"]
OP_MESSAGE = "Could not run 'aten::foo' with arguments from the 'TPU' backend. This could be because the operator " \
             "doesn't exist for this backend."


def test_unknown_model_type_is_a_config_error(tmp_path, run_inproc):
    d = write_config(tmp_path, "unknown", {"model_type": "definitely_not_a_model_type",
                                           "architectures": ["FooForCausalLM"], "hidden_size": 8})
    code, res = run_inproc(d, task="text-generation")
    assert code == 0
    assert_contract_shape(res)
    assert (res["status"], res["stage"], res["failure_class"]) == ("fail", "config", "config_error")
    assert res["signature"].startswith("config_error:")
    assert "definitely_not_a_model_type" not in res["signature"]  # quoted names are normalised away


def test_injected_unsupported_op_in_forward(tmp_path, run_inproc, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_INJECT", f"forward:NotImplementedError:{OP_MESSAGE}")
    sigs = []
    for kind, task in (("llama", "text-generation"), ("bert", "fill-mask")):
        d = build_model_dir(tmp_path, kind)
        code, res = run_inproc(d, task=task, extra=FAST)
        assert code == 0
        assert_contract_shape(res)
        assert (res["status"], res["stage"], res["failure_class"], res["op"]) == \
            ("fail", "forward", "unsupported_op", "aten::foo")
        assert "Traceback" in res["log_tail"] and "_raise" in res["log_tail"]  # raised inside the model's forward
        assert res["stages"][-1] == {**res["stages"][-1], "stage": "forward", "ok": False}
        sigs.append(res["signature"])
    assert sigs[0] == sigs[1] == "unsupported_op:aten::foo"  # one root cause, one signature


def test_injected_oom_in_load(tmp_path, run_inproc, monkeypatch):
    monkeypatch.setenv(
        "HARNESS_TEST_INJECT", "load:RuntimeError:RESOURCE_EXHAUSTED: Out of memory allocating 123 bytes"
    )
    d = build_model_dir(tmp_path, "llama")
    code, res = run_inproc(d, task="text-generation", extra=FAST)
    assert (res["status"], res["stage"], res["failure_class"], res["signature"]) == ("oom", "load", "oom", "oom:load")


def test_numerics_mismatch(tmp_path, run_inproc, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_INJECT", "numerics:perturb")
    d = build_model_dir(tmp_path, "vit")
    code, res = run_inproc(d, task="image-classification", extra=FAST)
    assert (res["status"], res["stage"], res["failure_class"]) == ("fail", "numerics", "numerics_mismatch")
    assert res["signature"] == "numerics_mismatch:max_abs_diff"
    assert res["metrics"]["max_abs_diff"] > res["metrics"]["tolerance"]


def test_recompile_is_detected(tmp_path, run_inproc, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_INJECT", "compile:recompile")
    d = build_model_dir(tmp_path, "llama")
    code, res = run_inproc(d, task="text-generation", extra=["--compile-backend", "aot_eager", "--no-generate"])
    assert (res["status"], res["stage"], res["failure_class"]) == ("fail", "compile", "recompile"), res["message"]
    assert res["metrics"]["compile_s"] is not None and res["metrics"]["compiled_step_ms"] is None
    # the float32 cpu reference compiles the same model (aot_eager) and its second call compiles nothing: the
    # recompile is the target's
    compile_note = next(s for s in res["stages"] if s["stage"] == "compile")["note"]
    assert "the float32 cpu reference passes the compile stage" in compile_note, compile_note


def test_auto_map_with_unknown_model_type_is_skipped_remote_code(tmp_path, run_inproc):
    d = write_config(tmp_path, "remote", {"model_type": "my_custom_arch", "architectures": ["MyCustomForCausalLM"],
                                          "auto_map": {"AutoConfig": "configuration_my.MyConfig",
                                                       "AutoModelForCausalLM": "modeling_my.MyForCausalLM"}})
    with open(os.path.join(d, "modeling_my.py"), "w") as fh:
        fh.write("raise SystemExit('remote code must never run')\n")
    code, res = run_inproc(d, task="text-generation")
    assert code == 0
    assert (res["status"], res["stage"], res["reason"]) == ("skipped", "config", "remote_code")
    assert res["failure_class"] is None


def test_auto_map_with_a_native_model_type_is_skipped_remote_code_too(tmp_path, run_inproc):
    """One rule with the scanner's preflight (remote_code.json): the repository asks for its own code, so a
    native class of the same model_type does not stand in for it."""
    def add_auto_map(cfg):
        cfg.auto_map = {"AutoModelForCausalLM": "modeling_x.XForCausalLM"}

    d = build_model_dir(tmp_path, "llama", mutate=add_auto_map)
    code, res = run_inproc(d, task="text-generation", extra=FAST)
    assert code == 0
    assert (res["status"], res["stage"], res["reason"]) == ("skipped", "config", "remote_code"), res["message"]
    assert "auto_map" in res["message"]


def test_target_tpu_without_tpu_is_an_environment_error(tmp_path, run_subproc):
    d = build_model_dir(tmp_path, "llama", full=False)
    proc, res = run_subproc(d, target="tpu", task="text-generation")
    assert proc.returncode == 0
    assert_contract_shape(res)
    assert (res["status"], res["stage"], res["failure_class"]) == ("error", "env", "device_unavailable")
    assert res["target"] == "tpu"
    assert res["signature"] == "device_unavailable:tpu"


def test_target_cuda_without_cuda_is_an_environment_error(tmp_path, run_inproc):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this host has CUDA: the test needs a host without it")
    d = build_model_dir(tmp_path, "llama", full=False)
    code, res = run_inproc(d, target="cuda", task="text-generation")
    assert (res["status"], res["stage"], res["failure_class"], res["target"]) == \
        ("error", "env", "device_unavailable", "cuda")


def test_full_mode_without_safetensors_is_skipped(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "llama", full=False)
    code, res = run_inproc(d, task="text-generation", mode="full")
    assert (res["status"], res["stage"], res["reason"], res["mode"]) == ("skipped", "config", "no_safetensors", "full")


class _Boom:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickle_weights_are_never_unpickled(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "llama", full=False)
    marker = tmp_path / "UNPICKLED"
    with open(os.path.join(d, "pytorch_model.bin"), "wb") as fh:
        pickle.dump(_Boom(str(marker)), fh)
    code, res = run_inproc(d, task="text-generation", mode="full")
    assert (res["status"], res["reason"]) == ("skipped", "no_safetensors")
    assert "pickle weights (pytorch_model.bin) are never loaded" in res["message"]
    code, res = run_inproc(d, task="text-generation", mode="arch", extra=FAST)
    assert (res["status"], res["mode"]) == ("pass", "arch"), res["message"]
    assert not marker.exists()


def test_safetensors_outside_the_transformers_layout_are_not_a_checkpoint(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "llama", full=False)
    with open(os.path.join(d, "consolidated.safetensors"), "wb") as fh:
        fh.write(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    code, res = run_inproc(d, task="text-generation", mode="full")
    assert (res["status"], res["reason"]) == ("skipped", "no_safetensors")
    assert "consolidated.safetensors" in res["message"]
    code, res = run_inproc(d, task="text-generation", mode="arch", extra=FAST)
    assert (res["status"], res["mode"]) == ("pass", "arch"), res["message"]


def test_unsupported_task_is_skipped(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "llama", full=False)
    code, res = run_inproc(d, task="text-to-image")
    assert (res["status"], res["stage"], res["reason"]) == ("skipped", "config", "unsupported_task")


def test_missing_config_is_a_config_error(tmp_path, run_inproc):
    d = tmp_path / "empty"
    d.mkdir()
    code, res = run_inproc(d, task="text-generation")
    assert (res["status"], res["stage"], res["failure_class"]) == ("fail", "config", "config_error")


def test_env_only(tmp_path):
    out = tmp_path / "env.json"
    proc = subprocess.run([sys.executable, "-I", "-B", HARNESS, "--env-only", "--result-file", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    assert res["status"] == "pass" and res["target"] == "cpu"
    rt = res["runtime"]
    assert rt["torch"] and rt["transformers"] and rt["harness"] and rt["python"]
    assert rt["device"] and rt["device_count"] == 1
    assert json.loads(proc.stdout) == res


def test_bad_arguments_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-I", "-B", HARNESS, "--target", "nope", "--result-file",
                           str(tmp_path / "r.json")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("mode, says", [
    ([], "--mode is required"),
    (["--mode", "auto"], "invalid choice: 'auto'"),
])
def test_the_harness_chooses_no_mode(tmp_path, mode, says):
    """The scanner's plan decides full or arch; the harness runs the mode it is given, by hand too."""
    d = build_model_dir(tmp_path, "llama", full=False)
    proc = subprocess.run([sys.executable, "-I", "-B", HARNESS, "--model-dir", d, "--result-file",
                           str(tmp_path / "r.json"), *mode], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr
    assert not (tmp_path / "r.json").exists()


def test_incomplete_subconfigs_fail_at_config_naming_the_field(tmp_path, run_inproc):
    """Bad input: a composite config whose sub-configs are incomplete is the model's config error."""
    clip = {"model_type": "clip", "architectures": ["CLIPModel"], "projection_dim": 16,
            "text_config": {"model_type": "clip_text_model", "hidden_size": 32, "intermediate_size": 64,
                            "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 256},
            "vision_config": {"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 64,
                              "num_hidden_layers": 1, "num_attention_heads": 4, "patch_size": 8, "image_size": None}}
    cases = {
        "null-image-size": (clip, "vision_config.image_size is missing"),
        "string-tower": ({**clip, "vision_config": "clip_vision_model"}, "vision_config is a str, not an object"),
        "null-text-vocab": ({**clip, "text_config": {**clip["text_config"], "vocab_size": None}},
                            "text_config.vocab_size is missing"),
    }
    for name, (cfg, want) in cases.items():
        d = write_config(tmp_path, name, cfg)
        code, res = run_inproc(d, task="zero-shot-image-classification", mode="arch", extra=FAST)
        assert code == 0
        assert_contract_shape(res)
        assert (res["status"], res["stage"], res["failure_class"]) == ("fail", "config", "config_error"), (name, res)
        assert want in res["message"], (name, res["message"])


def test_a_config_transformers_builds_but_the_harness_cannot_read_is_the_scanners_error(tmp_path, run_inproc,
                                                                                       monkeypatch):
    """Issue 41: transformers loads the config and builds the model from it, the harness cannot make the family's
    inputs from it (a layout its builder does not know): the scanner's error naming the field, never the model's
    fail at config. The same gap in a config transformers cannot build the model from either stays the model's
    config_error (test_incomplete_subconfigs_fail_at_config_naming_the_field)."""
    import harness_inputs
    import harness_synthetic_inputs
    from tiny_families import llava

    def unread(ctx):
        raise harness_inputs.IncompleteConfig("vision_config.some_layout_field")

    monkeypatch.setitem(harness_synthetic_inputs.BUILDERS, "vlm", unread)
    staging = tmp_path / "stage-llava"
    llava().save_pretrained(str(staging))
    from conftest import snapshot_layout

    d = snapshot_layout(str(staging), str(tmp_path / "models--test--llava"))
    code, res = run_inproc(d, task="image-text-to-text", mode="arch", extra=FAST)
    assert code == 0
    assert_contract_shape(res)
    assert (res["status"], res["stage"]) == ("error", "config"), res
    assert res["signature"] == "harness_inputs:config:vision_config.some_layout_field", res["signature"]
    assert "not a verdict on the model" in res["message"] and "vision_config.some_layout_field" in res["message"]


def test_compile_budget_leaves_a_reserve():
    import harness_compile

    assert harness_compile.compile_budget(None, 10) is None and harness_compile.compile_budget(0, 10) is None
    assert harness_compile.compile_budget(1200, 100) == 1200 - 100 - 300  # a quarter of the limit kept for what follows
    assert harness_compile.compile_budget(60, 10) == 60 - 10 - 30  # at least 30 s kept
    assert harness_compile.compile_budget(60, 40) < 0


@pytest.mark.parametrize("budget,why", [(0.5, "ran past its bound"), (-1.0, "no time was left")])
def test_a_compile_past_the_probes_limit_keeps_the_eager_verdict(tmp_path, run_inproc, monkeypatch, budget, why):
    """Issue 41: a compile stage that runs past the probe's time limit (inductor on a 2-core cpu) timed the whole
    probe out, with no verdict. Bounded by what is left of --deadline-s: the compile is stopped (or not started),
    result.modes.compiled says timeout at compile, and the probe's status is the eager verdict."""
    import time

    import harness_compile

    started = []

    def slow_compile(self, backend):
        def call(**inputs):
            started.append(True)
            time.sleep(30)  # a compile that would outlive the probe
        return call

    monkeypatch.setattr(harness_compile.CompileStage, "compile_model", slow_compile)
    monkeypatch.setattr(harness_compile, "compile_budget", lambda deadline, elapsed: budget)
    d = build_model_dir(tmp_path, "llama")
    t0 = time.monotonic()
    code, res = run_inproc(d, task="text-generation", extra=["--no-generate", "--deadline-s", "1200"])
    assert code == 0 and time.monotonic() - t0 < 25
    assert_contract_shape(res)
    assert res["status"] == "pass", (res["stage"], res["message"])
    comp = next(s for s in res["stages"] if s["stage"] == "compile")
    assert comp["ok"] and comp["skipped"] and why in comp["note"] and "the eager verdict stands" in comp["note"]
    assert bool(started) == (budget > 0)
    c = res["modes"]["compiled"]
    assert (c["status"], c["stage"], c["failure_class"], c["signature"]) == ("timeout", "compile", "timeout",
                                                                               "timeout:compile")
    assert res["metrics"]["compile_s"] is None
    import signal

    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # the alarm is disarmed
