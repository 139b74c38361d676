"""A tiny real model of every task family through the harness on CPU (tiny_families.py).

Each family's inputs are also checked against its tiny model's forward signature
(test_inputs_fit_the_forward): every key is a parameter of the forward, every modality the
forward takes (text, vision, audio) and the config has a tower for is given, and the forward runs;
test_every_family_has_its_inputs_checked lists the families so checked.

Each runs in arch mode (config.json only, seeded random weights, as a scan does for a model too
large to download) without compile; the models of the families most likely to break compile on
their own (a vision-language model, a detector, a dual encoder, a mask generator) also run the
compile stage (aot_eager: dynamo and AOT autograd, cheap on 2 cores), and two composite models run
in full mode from safetensors. Compile of the other new families is not run here: their forward
code paths are plain PyTorch modules of the same kinds (vision and text transformers, convolutions),
covered by these compile runs and the text families' compile tests in test_models.py.
"""

import inspect
import json
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
    "detr_timm": ("detection", ["pixel_values=[1, 3, 224, 224]", "pixel_mask"], ["top1_agreement", "rel_error"], False),
    "clipseg": ("segmentation", ["input_ids=[1, 16]", "pixel_values=[1, 3, 32, 32]"], ["rel_error"], False),
    "clap": ("audio-contrastive", ["input_ids=[2, 32]", "input_features=[1, 4, 256, 16]", "is_longer=[1, 1]"],
             ["top1_agreement", "cosine_similarity"], False),
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
    "llava_next_video_legacy": ("video-lm", ["pixel_values_videos=[1, 4, 3, 32, 32]"], ["top1_agreement"], True),
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
        cfg = factory()
        if isinstance(cfg, dict):  # the config.json as written
            staging.mkdir()
            (staging / "config.json").write_text(json.dumps(cfg))
        else:
            cfg.save_pretrained(str(staging))
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
    # bfloat16 on cpu against the float32 cpu reference: measured, within the bfloat16 bound (numerics.json)
    assert "verdict: bfloat16 on cpu against the float32 cpu reference" in st["env"]["note"]
    assert 0.0 <= m["max_abs_diff"] <= m["tolerance"]
    if m["rel_error"] is not None:
        assert m["rel_error"] <= 0.1
    if m["cosine_similarity"] is not None:
        assert m["cosine_similarity"] >= 0.99
    # the ops for the TorchTPU prediction: traced, and renamed to what the TPU reaches (harness_ops.py)
    traced = res["ops_traced"]
    assert traced["forward"] and not traced.get("notes"), traced.get("notes")
    leftovers = [op for kind in ("forward", "generate", "train") for op in traced.get(kind, [])
                 if any(m in op for m in ("_for_cpu", "mkldnn", "_cpu"))]
    assert not leftovers, leftovers
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


# --- the inputs of every family against its model's forward signature ---------------------------------

# The text, vision and speech families' tiny models (conftest.tiny_config), by pipeline tag.
PLAIN = {"llama": "text-generation", "bert": "fill-mask", "t5": "translation", "vit": "image-classification",
         "whisper": "automatic-speech-recognition", "wav2vec2": "automatic-speech-recognition"}
SIGNATURE_CHECKED: dict[str, list[str]] = {}  # family -> the tiny models whose inputs fit their forward


def _tiny_model(name):
    """(config, pipeline tag, model) of a tiny model, seeded random weights, float32, eval."""
    import torch
    import transformers

    from conftest import tiny_config

    if name in PLAIN:
        cfg, tag = tiny_config(name), PLAIN[name]
    else:
        tag, factory = TINY[name]
        cfg = factory()
        if isinstance(cfg, dict):
            cfg = transformers.AutoConfig.for_model(**cfg)
    import harness_tasks as ht

    ht.make_deterministic(cfg)  # as the harness's config stage prepares it
    ht.legacy_text_vocab(cfg)
    torch.manual_seed(0)
    model = getattr(transformers, cfg.architectures[0])(cfg).eval()
    return cfg, tag, model


@pytest.mark.parametrize("name", sorted(TINY) + sorted(PLAIN))
def test_inputs_fit_the_forward(name):
    """The harness's inputs of the model's family are what its forward takes: each key a parameter of the forward
    (or the forward takes **kwargs), every modality it takes given (a text prompt for CLIPSeg, a clip's
    input_features and texts for CLAP), and the forward accepts them."""
    import torch

    import harness_inputs as hi
    import harness_tasks as ht

    cfg, tag, model = _tiny_model(name)
    _, family, _ = ht.resolve_family(tag, cfg)
    assert family is not None, (name, tag)
    params = inspect.signature(model.forward).parameters
    accepted = set(params)
    inputs, _ = hi.build_inputs(torch, family, model.config, accepted, 32, 4, 0, type(model).__name__, model=model)
    takes_any = any(p.kind == p.VAR_KEYWORD for p in params.values())
    strays = sorted(k for k in inputs if k not in accepted)
    assert takes_any or not strays, (name, strays)
    assert hi.modalities_missing(accepted, model.config, inputs) == [], (name, sorted(inputs), sorted(accepted))
    taken = [m for m, keys in hi.MODALITY_KEYS.items() if set(keys) & set(inputs)]
    assert taken or family in ("time-series", "decision"), (name, sorted(inputs))
    with torch.no_grad():
        out = model(**inputs)
    assert out is not None
    SIGNATURE_CHECKED.setdefault(family, []).append(name)


def test_every_family_has_its_inputs_checked():
    """The coverage of the check above: every family of the task table (less "speech", resolved to speech-seq2seq
    or speech-ctc) has a tiny model whose inputs were checked against its forward signature. Runs after it
    (pytest keeps file order); on its own it checks them itself."""
    import harness_tasks as ht

    if not SIGNATURE_CHECKED:
        for name in sorted(TINY) + sorted(PLAIN):
            test_inputs_fit_the_forward(name)
    want = set(ht.FAMILIES) - {"speech"}
    checked = set(SIGNATURE_CHECKED)
    print("families whose inputs were checked against their forward signature:")
    for family in sorted(checked):
        print(f"  {family}: {', '.join(sorted(SIGNATURE_CHECKED[family]))}")
    assert checked == want, (sorted(want - checked), sorted(checked - want))
    # the families of the issue: CLAP's audio and text, CLIPSeg's text and image
    assert "clap" in SIGNATURE_CHECKED["audio-contrastive"] and "clipseg" in SIGNATURE_CHECKED["segmentation"]
