"""Full mode with real multimodal inputs (harness_real_inputs.py): zero-shot image classification (CLIP, SigLIP) gets
the fixed picture and the fixed labels through the model's own processor, a decoder-only vision-language
model (LLaVA) the picture and the fixed question through its own processor (which expands the image
tokens), a wav2vec2 CTC model a fixed tone through its own feature extractor; a processor that is missing,
malformed, over its cap or at odds with the model leaves the synthetic inputs, with the reason in the
forward stage's note.

The processors are real transformers processors saved by the test from a tiny word-level tokenizer and a
CLIP image processor (no downloads). Expected token ids come from the word list the test writes, the
expected image-token count from the tiny vision tower's patch grid, the expected audio from the tone's
formula and the feature extractor's documented normalisation, all independently of harness_real_inputs.
"""

from __future__ import annotations

import json
import os

import pytest
import torch

import harness_real_inputs
import tiny_families
from conftest import FAST, build_model_dir, snapshot_layout
from tiny_families import CLIP_VISION

NO_COMPILE = ["--no-compile"]
SEQ = int(FAST[FAST.index("--seq-len") + 1])
SPECIAL = ["[UNK]", "<|endoftext|>", "<image>"]
# Every word of the labels and the question, so that nothing encodes to [UNK].
WORDS = sorted(
    {
        w.strip("?")
        for text in (
            *harness_real_inputs.LABELS,
            *harness_real_inputs.AUDIO_LABELS,
            *harness_real_inputs.PROMPTED_SEGMENT,
            harness_real_inputs.VLM_PROMPT,
        )
        for w in text.split()
    }
    | {"?"}
)
VOCAB = {w: i for i, w in enumerate(SPECIAL + WORDS)}
PAD = VOCAB["<|endoftext|>"]
IMAGE = VOCAB["<image>"]
SIDE = CLIP_VISION["image_size"]
# LLaVA's image features: one per patch of the tower's grid (the CLS feature dropped, strategy "default").
IMAGE_TOKENS = (CLIP_VISION["image_size"] // CLIP_VISION["patch_size"]) ** 2


def notes(res) -> dict:
    return {s["stage"]: s.get("note", "") for s in res["stages"]}


def words(text: str) -> list[int]:
    """text as VOCAB's ids, split as the test tokenizer's Whitespace pre-tokenizer splits it."""
    out = []
    for w in text.replace("?", " ?").split():
        out.append(VOCAB[w])
    return out


def tiny_snapshot(base, kind: str, mutate) -> str:
    """A snapshot of tiny_families' `kind` model (random weights, seeded), its config changed by mutate."""
    import transformers as tf

    cfg = tiny_families.TINY[kind][1]()
    mutate(cfg)
    staging = os.path.join(str(base), f"stage-{kind}")
    torch.manual_seed(0)
    getattr(tf, cfg.architectures[0])(cfg).eval().save_pretrained(staging)
    return snapshot_layout(staging, os.path.join(str(base), f"models--test--{kind}"))


def tokenizer():
    import transformers as tf
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    tk = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.add_special_tokens([AddedToken(t, special=True) for t in SPECIAL])
    return tf.PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="<|endoftext|>",
                                      eos_token="<|endoftext|>", bos_token="<|endoftext|>")


def image_processor():
    import transformers as tf

    return tf.CLIPImageProcessor(size={"shortest_edge": SIDE}, crop_size={"height": SIDE, "width": SIDE})


def clip_snapshot(base, kind: str = "clip") -> str:
    """A tiny CLIP (or SigLIP) with its own processor: the test tokenizer and an image processor at its size."""
    import transformers as tf

    def mutate(cfg):
        cfg.text_config.eos_token_id = PAD
        cfg.text_config.pad_token_id = PAD

    snap = tiny_snapshot(base, kind, mutate)
    if kind == "siglip":
        proc = tf.SiglipProcessor(image_processor=tf.SiglipImageProcessor(size={"height": SIDE, "width": SIDE}),
                                  tokenizer=tokenizer())
    else:
        proc = tf.CLIPProcessor(image_processor=image_processor(), tokenizer=tokenizer())
    proc.save_pretrained(snap)
    return snap


def llava_snapshot(base, image_token_id: int = IMAGE) -> str:
    import transformers as tf

    def mutate(cfg):
        cfg.image_token_id = image_token_id

    snap = tiny_snapshot(base, "llava", mutate)
    tf.LlavaProcessor(image_processor=image_processor(), tokenizer=tokenizer(), patch_size=CLIP_VISION["patch_size"],
                      vision_feature_select_strategy="default", image_token="<image>",
                      num_additional_image_tokens=1).save_pretrained(snap)
    return snap


def test_vocabulary_covers_the_fixed_texts():
    assert len(VOCAB) < 256  # the tiny models' vocab_size
    assert len(words(harness_real_inputs.LABELS[0])) >= 2 and len(words(harness_real_inputs.VLM_PROMPT)) >= 2


# --- zero-shot image classification ---------------------------------------------------------------

@pytest.mark.parametrize("kind,cls", [("clip", "CLIPProcessor"), ("siglip", "SiglipProcessor")])
def test_zero_shot_full_mode_uses_its_processor(tmp_path, run_inproc, kind, cls):
    snap = clip_snapshot(tmp_path, kind)
    assert "processor_config.json" in os.listdir(snap)
    code, res = run_inproc(snap, task="zero-shot-image-classification", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    fwd = notes(res)["forward"]
    assert f"and {len(harness_real_inputs.LABELS)} fixed labels through the model's processor ({cls})" in fwd, fwd
    assert f"pixel_values [1, 3, {SIDE}, {SIDE}]" in fwd, fwd
    assert f"input_ids [{len(harness_real_inputs.LABELS)}, " in fwd, fwd


@pytest.mark.parametrize(
    "family,source,texts",
    [
        ("contrastive", "contrastive", harness_real_inputs.LABELS),
        ("segmentation", "prompted-image", harness_real_inputs.PROMPTED_SEGMENT),
    ],
)
def test_texts_are_the_tokenizers(tmp_path, family, source, texts):
    """Each label's (or the prompt's) ids are its words' ids, padded with the pad token to the synthetic length."""
    import transformers as tf

    snap = clip_snapshot(tmp_path) if family == "contrastive" else clipseg_snapshot(tmp_path)
    config = tf.AutoConfig.from_pretrained(snap, local_files_only=True)
    n = 12
    rows = 2 if family == "contrastive" else 1
    syn = {"input_ids": torch.zeros(rows, n, dtype=torch.long), "attention_mask": torch.ones(rows, n, dtype=torch.long),
           "pixel_values": torch.zeros(1, 3, SIDE, SIDE)}
    got = harness_real_inputs.build(torch, family, config, snap, "full", syn, {"labels": rows})
    assert got.source == source, got.note
    for row, label in enumerate(texts):
        ids = words(label)
        want = ids + [PAD] * (n - len(ids))
        assert got.tensors["input_ids"][row].tolist() == want
        assert got.tensors["attention_mask"][row].tolist() == [1] * len(ids) + [0] * (n - len(ids))
    assert got.tensors["input_ids"].shape[0] == len(texts)
    assert list(got.tensors["pixel_values"].shape) == [1, 3, SIDE, SIDE]
    assert got.info["labels"] == len(texts)


def test_clip_without_processor_files_falls_back(tmp_path, run_inproc):
    snap = clip_snapshot(tmp_path)
    os.remove(os.path.join(snap, "processor_config.json"))
    code, res = run_inproc(snap, task="zero-shot-image-classification", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    fwd = notes(res)["forward"]
    assert "inputs: synthetic (no processor files in the snapshot)" in fwd, fwd


# --- vision-language ------------------------------------------------------------------------------

def test_llava_full_mode_uses_its_processor(tmp_path, run_inproc):
    snap = llava_snapshot(tmp_path)
    code, res = run_inproc(snap, task="image-text-to-text", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    n = notes(res)
    want_len = IMAGE_TOKENS + len(words(harness_real_inputs.VLM_PROMPT))
    assert (f"a fixed prompt through the model's processor (LlavaProcessor) -> input_ids [1, {want_len}] "
            f"with {IMAGE_TOKENS} image tokens") in n["forward"], n["forward"]
    assert "new tokens" in n["generate"], n["generate"]


def test_llava_prompt_is_the_processors(tmp_path):
    """The image token expanded to one per patch, then the question's words."""
    import transformers as tf

    snap = llava_snapshot(tmp_path)
    config = tf.AutoConfig.from_pretrained(snap, local_files_only=True)
    syn = {"input_ids": torch.zeros(1, 20, dtype=torch.long), "pixel_values": torch.zeros(1, 3, SIDE, SIDE),
           "use_cache": False}
    got = harness_real_inputs.build(torch, "vlm", config, snap, "full", syn, {"image_tokens": IMAGE_TOKENS},
                   accepted={"input_ids", "pixel_values", "attention_mask"}, reserve=4)
    assert got.source == "vlm", got.note
    ids = got.tensors["input_ids"][0].tolist()
    assert ids == [IMAGE] * IMAGE_TOKENS + words(harness_real_inputs.VLM_PROMPT)
    assert got.tensors["attention_mask"].tolist() == [[1] * len(ids)]
    assert got.tensors["use_cache"] is False
    assert got.info["image_tokens"] == IMAGE_TOKENS


@pytest.mark.parametrize("case", ["image token", "malformed", "huge"])
def test_llava_bad_processor_falls_back(tmp_path, run_inproc, case):
    if case == "image token":  # the model's image token is not the one the processor writes
        snap = llava_snapshot(tmp_path, image_token_id=IMAGE + 100)
        why = f"the processor wrote no image token (id {IMAGE + 100})"
    else:
        snap = llava_snapshot(tmp_path)
        path = os.path.join(snap, "processor_config.json")
        os.remove(path)  # a link into blobs/: write a file of its own
        with open(path, "w") as fh:
            if case == "malformed":
                fh.write('{"processor_class": "LlavaProcessor", "patch_size": ')
                why = "processor not loadable"
            else:
                fh.write(json.dumps({"pad": "x" * (harness_real_inputs.input_cap("processor_config.json") + 1)}))
                why = "processor files refused: processor_config.json is"
    code, res = run_inproc(snap, task="image-text-to-text", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    fwd = notes(res)["forward"]
    assert "inputs: synthetic (" in fwd and why in fwd, fwd


# --- speech ---------------------------------------------------------------------------------------

def wav2vec2_snapshot(base, rate: int = 16000) -> str:
    import transformers as tf

    snap = build_model_dir(base, "wav2vec2")  # Wav2Vec2ForCTC
    tf.Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=rate, padding_value=0.0, do_normalize=True,
                                return_attention_mask=False).save_pretrained(snap)
    return snap


def test_wav2vec2_full_mode_uses_its_feature_extractor(tmp_path, run_inproc):
    snap = wav2vec2_snapshot(tmp_path)
    code, res = run_inproc(snap, task="automatic-speech-recognition", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    fwd = notes(res)["forward"]
    assert ("inputs: a 440 Hz tone, 16000 samples at 16000 Hz, through the model's feature extractor "
            "(Wav2Vec2FeatureExtractor) -> input_values [1, 16000]") in fwd, fwd


def test_wav2vec2_values_are_the_normalised_tone(tmp_path):
    import math

    import transformers as tf

    snap = wav2vec2_snapshot(tmp_path)
    config = tf.AutoConfig.from_pretrained(snap, local_files_only=True)
    got = harness_real_inputs.build(
        torch, "speech-ctc", config, snap, "full", {"input_values": torch.zeros(1, 16000)}, {}
    )
    assert got.source == "audio", got.note
    t = torch.arange(16000, dtype=torch.float64) / 16000
    wave = 0.5 * torch.sin(2 * math.pi * 440 * t)
    want = (wave - wave.mean()) / torch.sqrt(wave.var(unbiased=False) + 1e-7)
    assert torch.allclose(got.tensors["input_values"][0].double(), want, atol=1e-4)


def test_speech_feature_extractor_at_odds_falls_back(tmp_path, run_inproc):
    """A feature extractor whose output is not the model's static shape leaves the synthetic clip."""
    import transformers as tf

    snap = build_model_dir(tmp_path, "wav2vec2")
    tf.Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=8000, return_attention_mask=True).save_pretrained(snap)
    config = tf.AutoConfig.from_pretrained(snap, local_files_only=True)
    syn = {"input_features": torch.zeros(1, 100, 16)}
    got = harness_real_inputs.build(torch, "speech-encoder", config, snap, "full", syn, {})
    assert got.source == "synthetic" and "the feature extractor" in got.note, got.note
    os.remove(os.path.join(snap, "preprocessor_config.json"))
    code, res = run_inproc(snap, task="automatic-speech-recognition", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    assert "inputs: synthetic (no feature extractor file in the snapshot)" in notes(res)["forward"]


# --- text-prompted segmentation and audio-text (CLIPSeg, CLAP) ------------------------------------

def clipseg_snapshot(base) -> str:
    """A tiny CLIPSeg with its own processor: the test tokenizer and an image processor at its size."""
    import transformers as tf

    def mutate(cfg):
        cfg.text_config.eos_token_id = PAD
        cfg.text_config.pad_token_id = PAD

    snap = tiny_snapshot(base, "clipseg", mutate)
    tf.CLIPSegProcessor(image_processor=tf.ViTImageProcessor(size={"height": SIDE, "width": SIDE}),
                        tokenizer=tokenizer()).save_pretrained(snap)
    return snap


def test_clipseg_full_mode_gets_the_prompt_and_the_picture(tmp_path, run_inproc):
    """CLIPSeg segments the picture by a text prompt: both through its own processor (the issue's "You have to
    specify input_ids" came from giving it the image alone)."""
    snap = clipseg_snapshot(tmp_path)
    code, res = run_inproc(snap, task="image-segmentation", extra=NO_COMPILE)
    assert res["status"] == "pass", (res["message"], res.get("log_tail", "")[-1500:])
    fwd = notes(res)["forward"]
    n = 16  # the synthetic prompt length of a text-prompted segmenter (harness_synthetic_inputs._prompt_text)
    assert (f"a fixed prompt through the model's processor (CLIPSegProcessor) -> input_ids [1, {n}], "
            f"pixel_values [1, 3, {SIDE}, {SIDE}]") in fwd, fwd


CLAP_RATE, CLAP_HOP = 16000, 160
CLAP_FRAMES = CLAP_RATE // CLAP_HOP + 1  # 1 s at the rate, one frame per hop and one more (a centred STFT)


def clap_snapshot(base, mel: int = 16) -> str:
    """A tiny CLAP (fused) with its own processor: the test tokenizer and a CLAP feature extractor of 1 s clips."""
    import transformers as tf

    def mutate(cfg):
        cfg.text_config.pad_token_id = PAD

    snap = tiny_snapshot(base, "clap", mutate)
    fe = tf.ClapFeatureExtractor(feature_size=mel, sampling_rate=CLAP_RATE, hop_length=CLAP_HOP, max_length_s=1,
                                 fft_window_size=400, truncation="fusion", padding="repeatpad")
    tf.ClapProcessor(feature_extractor=fe, tokenizer=tokenizer()).save_pretrained(snap)
    return snap


def test_clap_full_mode_gets_features_and_texts(tmp_path, run_inproc):
    """CLAP scores a clip against texts: the feature extractor's input_features (four fused views) and the
    tokenizer's labels (the issue's "unexpected keyword argument 'input_values'" came from speech inputs)."""
    snap = clap_snapshot(tmp_path)
    code, res = run_inproc(snap, task="feature-extraction", extra=NO_COMPILE)
    assert res["status"] == "pass", (res["message"], res.get("log_tail", "")[-1500:])
    assert "family=audio-contrastive" in notes(res)["config"]
    fwd = notes(res)["forward"]
    assert (
        f"through the model's feature extractor (ClapFeatureExtractor) -> input_features [1, 4, {CLAP_FRAMES}, 16], "
        f"and {len(harness_real_inputs.AUDIO_LABELS)} fixed labels through its tokenizer"
    ) in fwd, fwd
    assert res["metrics"]["cosine_similarity"] is not None and res["metrics"]["top1_agreement"] is not None


def test_clap_labels_are_the_tokenizers(tmp_path):
    import transformers as tf

    snap = clap_snapshot(tmp_path)
    config = tf.AutoConfig.from_pretrained(snap, local_files_only=True)
    n = 12
    syn = {"input_ids": torch.zeros(2, n, dtype=torch.long), "attention_mask": torch.ones(2, n, dtype=torch.long),
           "input_features": torch.zeros(1, 4, 256, 16), "is_longer": torch.zeros(1, 1, dtype=torch.bool)}
    got = harness_real_inputs.build(torch, "audio-contrastive", config, snap, "full", syn, {})
    assert got.source == "audio-text", got.note
    for row, label in enumerate(harness_real_inputs.AUDIO_LABELS):
        ids = words(label)
        assert got.tensors["input_ids"][row].tolist() == ids + [PAD] * (n - len(ids))
    assert list(got.tensors["input_features"].shape) == [1, 4, CLAP_FRAMES, 16]
    # no clip is longer than the window, so the fusing feature extractor flags one at random (of one: this one;
    # transformers' feature_extraction_clap.py: "if no audio is longer than 10s, then randomly select one")
    assert got.tensors["is_longer"].tolist() == [[True]]


def test_clap_feature_extractor_at_odds_falls_back(tmp_path):
    """Features of other mel bins than the audio tower's leave the synthetic clip, saying why."""
    import transformers as tf

    snap = clap_snapshot(tmp_path, mel=8)
    config = tf.AutoConfig.from_pretrained(snap, local_files_only=True)
    syn = {"input_ids": torch.zeros(2, 12, dtype=torch.long), "input_features": torch.zeros(1, 4, 256, 16)}
    got = harness_real_inputs.build(torch, "audio-contrastive", config, snap, "full", syn, {})
    assert got.source == "synthetic" and "the feature extractor made input_features [1, 4, " in got.note, got.note
