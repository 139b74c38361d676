"""A tiny real model of every task family through the harness on CPU (tiny_families.py).

Each runs in arch mode (config.json only, seeded random weights, as a scan does for a model too
large to download) without compile; the models of the families most likely to break compile on
their own (a vision-language model, a detector, a dual encoder, a mask generator) also run the
compile stage (aot_eager: dynamo and AOT autograd, cheap on 2 cores), and two composite models run
in full mode from safetensors. Compile of the other new families is not run here: their forward
code paths are plain PyTorch modules of the same kinds (vision and text transformers, convolutions),
covered by these compile runs and the text families' compile tests in test_models.py.
"""

import os

import pytest

from conftest import assert_contract_shape, snapshot_layout
from tiny_families import TINY

ARCH = ["--no-compile", "--layers", "2"]
AOT = ["--compile-backend", "aot_eager", "--layers", "2"]

# name -> (family, inputs that must be in the forward note, metric keys that must be measured,
#          whether generate runs)
EXPECT = {
    "clip": ("contrastive", ["input_ids=[2,", "pixel_values=[1, 3, 32, 32]"], ["top1_agreement", "cosine_similarity"], False),
    "siglip": ("contrastive", ["input_ids=[2,", "pixel_values=[1, 3, 32, 32]"], ["top1_agreement", "cosine_similarity"], False),
    "owlvit": ("zero-shot-detection", ["input_ids=[2, 16]", "pixel_values=[1, 3, 32, 32]"], ["top1_agreement", "rel_error"], False),
    "detr": ("detection", ["pixel_values=[1, 3, 224, 224]", "pixel_mask"], ["top1_agreement", "rel_error"], False),
    "segformer": ("segmentation", ["pixel_values=[1, 3, 32, 32]"], ["rel_error"], False),
    "sam": ("mask-generation", ["pixel_values=[1, 3, 64, 64]", "input_points=[1, 1, 1, 2]"], ["rel_error"], False),
    "dpt": ("depth", ["pixel_values=[1, 3, 32, 32]"], ["rel_error"], False),
    "superpoint": ("keypoints", ["pixel_values=[1, 3,"], ["rel_error", "cosine_similarity"], False),
    "vitpose": ("keypoints", ["pixel_values=[1, 3, 64, 48]"], ["rel_error"], False),
    "swin2sr": ("image-to-image", ["pixel_values=[1, 3, 16, 16]"], ["rel_error"], False),
    "videomae": ("video", ["pixel_values=[1, 4, 3, 32, 32]"], ["top1_agreement"], False),
    "llava": ("vlm", ["pixel_values=[1, 3, 32, 32]", "input_ids=[1,"], ["top1_agreement"], True),
    "qwen2_vl": ("vlm", ["pixel_values=[", "image_grid_thw=[1, 3]", "mm_token_type_ids"], ["top1_agreement"], True),
    "blip": ("vlm", ["pixel_values=[1, 3, 32, 32]", "input_ids=[1,"], ["top1_agreement"], True),
    "vilt": ("vlm", ["pixel_values=[1, 3, 32, 32]", "input_ids=[1,"], ["top1_agreement"], False),
    "layoutlmv3": ("document", ["bbox=[1,", "pixel_values=[1, 3, 32, 32]"], ["top1_agreement"], False),
    "colpali": ("retrieval", ["pixel_values=[1, 3, 32, 32]", "input_ids=[1,"], ["cosine_similarity"], False),
    "llava_next_video": ("video-lm", ["pixel_values_videos=[1, 4, 3, 32, 32]"], ["top1_agreement"], True),
    "qwen2_vl_video": ("video-lm", ["pixel_values_videos=[", "video_grid_thw=[1, 3]"], ["top1_agreement"], True),
    "llava_any": ("vlm", ["pixel_values=[1, 3, 32, 32]"], ["top1_agreement"], True),
    "vits": ("tts", ["input_ids=[1,"], ["rel_error"], False),
    "speecht5_tts": ("tts", ["decoder_input_values=[1, 4, 8]", "speaker_embeddings=[1, 16]"], ["rel_error"], False),
    "qwen2_audio": ("audio-lm", ["input_features=[1, 16, 64]", "feature_attention_mask"], ["top1_agreement"], True),
    "encodec": ("codec", ["input_values=[1, 1, 8000]"], ["rel_error"], False),
    "bert_multiple_choice": ("multiple-choice", ["input_ids=[1, 2, 32]"], ["top1_agreement"], False),
    "bert_cross_encoder": ("text-encoder", ["input_ids=[1, 32]", "token_type_ids=[1, 32]"], [], False),
    "tapas": ("table-qa", ["token_type_ids=[1, 32, 7]"], ["top1_agreement"], False),
    "patchtst": ("time-series", ["past_values=[1, 32, 2]"], ["rel_error"], False),
    "decision_transformer": ("decision", ["states=[1, 20, 4]", "returns_to_go=[1, 20, 1]"], ["rel_error"], False),
    "wavlm": ("speech-encoder", ["input_values=[1, 16000]"], ["cosine_similarity"], False),
    "w2v_bert": ("speech-encoder", ["input_features=[1, 100, 16]"], ["cosine_similarity"], False),
}
COMPILED = ("llava", "detr", "clip", "sam")


def stage_map(res):
    return {s["stage"]: s for s in res["stages"]}


@pytest.fixture(scope="module")
def config_dirs(tmp_path_factory):
    """Every tiny config, saved once in snapshot layout (config.json only: arch mode)."""
    base = tmp_path_factory.mktemp("families")
    out = {}
    for name, (_, factory) in TINY.items():
        staging = base / f"stage-{name}"
        factory().save_pretrained(str(staging))
        out[name] = snapshot_layout(str(staging), str(base / f"models--tiny--{name}"))
    return out


def test_every_family_has_a_tiny_model():
    import harness_tasks as ht

    covered = {EXPECT[name][0] for name in TINY}
    # every family of the table, less the text/vision/speech ones test_models.py runs and the
    # "speech" placeholder the config resolves
    want = set(ht.FAMILIES) - {"causal-lm", "text-encoder", "seq2seq", "vision", "speech", "speech-seq2seq", "speech-ctc"}
    assert want <= covered, sorted(want - covered)
    assert set(EXPECT) == set(TINY)


def check(res, name):
    family, inputs, metrics, generates = EXPECT[name]
    assert_contract_shape(res)
    assert res["status"] == "pass", (res["stage"], res["message"], res.get("log_tail", "")[-1500:])
    assert res["task"] == TINY[name][0]
    st = stage_map(res)
    assert f"family={family}" in st["config"]["note"]
    for want in inputs:
        assert want in st["forward"]["note"], (want, st["forward"]["note"])
    m = res["metrics"]
    for key in ["max_abs_diff", "tolerance", "forward_ms", "load_s"] + metrics:
        assert m[key] is not None, key
    assert m["max_abs_diff"] == 0.0  # float32 cpu vs float32 cpu: the same function, measured
    if m["rel_error"] is not None:
        assert m["rel_error"] == 0.0
    if m["cosine_similarity"] is not None:
        assert m["cosine_similarity"] > 0.999999
    if generates:
        assert not st["generate"].get("skipped"), st["generate"]
        assert m["tokens_per_s"] > 0
    else:
        assert st["generate"].get("skipped"), st["generate"]
        assert m["tokens_per_s"] is None
    return st


@pytest.mark.parametrize("name", sorted(TINY))
def test_family_arch_mode(name, config_dirs, run_inproc):
    code, res = run_inproc(config_dirs[name], task=TINY[name][0], mode="arch", extra=ARCH)
    assert code == 0
    st = check(res, name)
    assert st["compile"].get("skipped")


@pytest.mark.parametrize("name", COMPILED)
def test_family_compiles(name, config_dirs, run_inproc):
    code, res = run_inproc(config_dirs[name], task=TINY[name][0], mode="arch", extra=AOT)
    st = check(res, name)
    assert not st["compile"].get("skipped")
    assert res["metrics"]["compile_s"] > 0 and res["metrics"]["compiled_step_ms"] > 0
    assert "compiled vs eager" in st["compile"]["note"]


def _full_dir(base, name):
    import torch
    import transformers

    cfg = TINY[name][1]()
    torch.manual_seed(0)
    model = getattr(transformers, cfg.architectures[0])(cfg).eval()
    staging = os.path.join(str(base), f"stage-{name}")
    model.save_pretrained(staging)
    return snapshot_layout(staging, os.path.join(str(base), f"models--full--{name}"))


@pytest.mark.parametrize("name", ("llava", "clip"))
def test_family_full_mode(name, tmp_path, run_inproc):
    code, res = run_inproc(_full_dir(tmp_path, name), task=TINY[name][0], mode="full", extra=["--no-compile"])
    check(res, name)
    assert res["mode"] == "full"


def test_random_forward_is_made_deterministic(config_dirs, run_inproc):
    """VITS samples noise in its forward: with it left on, device and reference could not agree."""
    code, res = run_inproc(config_dirs["vits"], task="text-to-speech", mode="arch", extra=ARCH)
    assert res["status"] == "pass", res["message"]
    assert "noise_scale 0.667->0.0" in stage_map(res)["config"]["note"]
