"""The forward inputs of a probe: synthetic ones per task family, built from the config alone
(every mode), and in full mode real ones from the model's own tokenizer and image processor.

Synthetic inputs (build_inputs).

No tokenizer, no processor, no downloaded data: token ids are seeded random ids of the config's
vocabulary, images seeded noise at the config's size, audio seeded noise at 16 kHz. Multimodal
models get one image (or clip, or audio clip) and as many placeholder tokens as the model's own
``get_image_features`` (``get_video_features``, ``get_audio_features``) returns for it, so that
the token count is the model's, not a guess. Shapes are static: batch 1, ``--seq-len`` text
tokens (clamped to the position table), the config's image size.

| family              | inputs                                                                      |
|---------------------|-----------------------------------------------------------------------------|
| causal-lm           | input_ids [1, S]: a random chunk repeated (no padding, no attention mask)   |
| text-encoder        | input_ids [1, S] with [CLS] ... [SEP] (+ token_type_ids)                    |
| multiple-choice     | input_ids [1, 2, S] (+ token_type_ids)                                      |
| table-qa            | input_ids [1, S], 7-channel token_type_ids of a 2-column table (TAPAS)      |
| seq2seq             | input_ids [1, S], decoder_input_ids [1, D]                                  |
| time-series         | past_values [1, context, channels] (+ time features, masks)                 |
| decision            | states, actions, rewards, returns_to_go, timesteps [1, 20, ...]             |
| vision, depth, ...  | pixel_values [1, C, H, W] at the config's image size (+ pixel_mask)         |
| video               | pixel_values [1, frames, C, H, W]                                           |
| contrastive         | pixel_values [1, C, H, W], input_ids [2, S] (two candidate labels)          |
| zero-shot-detection | pixel_values [1, C, H, W], input_ids of text queries                        |
| mask-generation     | pixel_values [1, 3, S, S], one point prompt                                 |
| keypoints           | pixel_values [1, C, H, W]; a pair [1, 2, C, H, W] for matching              |
| vlm, retrieval      | one image in the model's layout, input_ids [1, N image tokens + S]          |
|                     | (any-to-any with an audio tower too: + one clip, its tokens after the image)|
| video-lm            | one 4-frame clip in the model's layout, input_ids [1, N video tokens + S]   |
| document            | input_ids [1, S], bbox [1, S, 4] (+ pixel_values of the page)               |
| speech-seq2seq      | input_features [1, mel, frames], decoder_input_ids                          |
| speech-ctc/-encoder | input_values [1, 16000], or the filter-bank input_features [1, 100, bins]   |
|                     | (Whisper's encoder: [1, mel, 3000]) where the forward takes those instead   |
| audio-lm            | input_features of one clip, input_ids [1, N audio tokens + S]               |
|                     | (Gemma 4 unified: 1 s of raw waveform frames [1, N, samples per token])     |
| tts                 | input_ids [1, S] (+ decoder_input_ids of audio codes)                       |
| codec               | input_values [1, channels, 1 s at the config's sampling rate]               |
|                     | (+ the semantic tower's input_features [1, frames, bins]: X-Codec 2)        |

Image layouts: [1, C, H, W] for most; flattened patches with image_grid_thw for Qwen-VL-style
towers (temporal_patch_size, spatial_merge_size); flattened patches with image_position_ids for
Gemma 4 (a tower or an encoder-free embedder that takes patch positions); a composite whose config
leaves an optional vision tower out (transformers builds the model without it) gets its text alone; [1, tiles, C, H, W] with pixel_attention_mask
for Idefics/SmolVLM; [1, patches, C, H, W] with image_sizes for LLaVA-NeXT (anyres); patches with
spatial_shapes for SigLIP 2. A field the inputs need that the config lacks raises
IncompleteConfig naming it (the harness fails the model at config with config_error).

The builders take only (config, family, shapes); in full mode build() can replace their answer.

Real inputs for a full-mode probe (build): the model's own tokenizer and image processor.

In full mode the harness builds its inputs the way a user of the model would:

* text-only models (causal LMs, encoders, seq2seq): a fixed English passage, PASSAGE (the
  Gettysburg Address, public domain), tokenized by the model's own tokenizer and truncated to
  the same static length the synthetic inputs have (build_inputs). A causal LM is
  then scored on it: perplexity on the device and on the float32 CPU reference, and a pass needs
  the device's below PASSAGE_PPL_MAX (100, as TorchTPU's own Hugging Face coverage tests require:
  tests/compile/model_coverage_hf_test.py) and within PASSAGE_PPL_RTOL of the reference's. Its
  greedy continuation of the fixed PROMPT is reported with the result.
* image-only models: a fixed synthetic picture (synthetic_image: computed, no file) through the
  model's own image processor.

Everything else (arch mode; audio, video and multimodal inputs; a model without the files) keeps
the synthetic inputs of build_inputs, and the forward stage's note says which
inputs ran and why. The tokenizer and processor files are the ones of input_files.json (the
table the scanner downloads by, with the same size caps): only those, within their caps, are
shown to transformers (linked into a private folder), always with trust_remote_code=False and
local files only. A file that is missing, over its cap or malformed never fails the model: the
probe falls back to the synthetic inputs and says so.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field

TEXT_FAMILIES = ("causal-lm", "text-encoder", "seq2seq")
VIDEO_FRAMES = 4
AUDIO_SAMPLES = 16000
# BERT-style learned positions with a padding offset (RoBERTa: padding_idx + 1)
_OFFSET_POSITIONS = ("roberta", "xlm-roberta", "camembert", "longformer", "mpnet", "ibert", "layoutlmv3",
                     "xlm-roberta-xl", "bart", "mbart")


class IncompleteConfig(ValueError):
    """The config lacks a field the inputs need; str() names it (e.g. vision_config.image_size)."""

    def __init__(self, field: str, why: str = "is missing"):
        super().__init__(f"{field} {why}")
        self.field = field


def _get(config, key, default=None):
    if isinstance(config, dict):
        return config.get(key, default)
    return getattr(config, key, default)


def _int(val) -> int | None:
    return val if isinstance(val, int) and not isinstance(val, bool) else None


def need_int(config, key: str, where: str = "", minimum: int = 1) -> int:
    """config.key as an int >= minimum, else IncompleteConfig naming where.key."""
    val = _get(config, key)
    name = f"{where}.{key}" if where else key
    if val is None:
        raise IncompleteConfig(name)
    if _int(val) is None or val < minimum:
        raise IncompleteConfig(name, f"is {val!r}, not an integer >= {minimum}")
    return val


def sub_config(config, *keys, required: str = ""):
    """The first present sub-config among keys (an object); IncompleteConfig(required) when none is."""
    for key in keys:
        val = _get(config, key)
        if val is not None and not isinstance(val, (int, float, str, bool, list, tuple)):
            return key, val
    if required:
        raise IncompleteConfig(required)
    return "", None


def text_config(config):
    if not isinstance(config, dict) and hasattr(config, "get_text_config"):
        try:
            return config.get_text_config(decoder=True)
        except Exception:  # noqa: BLE001
            return config
    return config


# --- text ------------------------------------------------------------------------

def max_positions(config) -> int | None:
    for key in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "n_ctx", "max_sequence_length"):
        val = _get(config, key)
        if isinstance(val, int) and val > 0:
            return val
    return None


def text_length(config, seq_len: int, reserve: int = 0) -> int:
    """The static text length: --seq-len, clamped so that seq + reserve fits the position table."""
    mp = max_positions(config)
    n = seq_len
    if mp:
        n = min(n, mp - reserve)
        if _get(config, "model_type") in _OFFSET_POSITIONS:
            n = min(n, mp - 2 - reserve)
    return max(2, n)


def token_range(config) -> tuple[int, int]:
    vocab = _get(config, "vocab_size") or 32000
    lo = min(2000, vocab // 4)
    hi = min(vocab, 30000)
    if hi <= lo:
        lo, hi = 0, vocab
    return lo, hi


def copy_pattern(torch, n: int, lo: int, hi: int, gen):
    """n token ids: a random chunk repeated, so positions >= n//2 are predictable by copying."""
    half = max(1, n // 2)
    chunk = torch.randint(lo, hi, (half,), generator=gen)
    ids = torch.cat([chunk, chunk, chunk])[:n]
    return ids.unsqueeze(0), half


def decoder_start(config) -> int:
    for key in ("decoder_start_token_id", "bos_token_id", "pad_token_id"):
        val = _get(config, key)
        if isinstance(val, int):
            return val
    return 0


def _special(config, *keys):
    for key in keys:
        val = _get(config, key)
        if isinstance(val, (list, tuple)) and val:
            val = val[0]
        if _int(val) is not None and 0 <= val < (_get(config, "vocab_size") or 0):
            return val
    return None


def special_ids(*configs) -> set[int]:
    """Every *_token_id / *_token_index of the configs (placeholders, bos, ...), to keep out of random text."""
    out: set[int] = set()
    for cfg in configs:
        if cfg is None:
            continue
        items = cfg.items() if isinstance(cfg, dict) else _attrs(cfg).items()
        for key, val in items:
            if key.endswith(("_token_id", "_token_index", "_token_ids")):
                vals = val if isinstance(val, (list, tuple)) else [val]
                out.update(v for v in vals if _int(v) is not None)
    return out


def _attrs(cfg) -> dict:
    try:
        return dict(vars(cfg))
    except TypeError:
        return {}


def random_text(torch, gen, tcfg, n: int, avoid: set[int], where: str | None = None):
    """[1, n] random ids of the text vocabulary (copy pattern), none of them a special id. With where
    (the config's name for tcfg), a vocab_size the config leaves empty is IncompleteConfig."""
    if where is not None:
        need_int(tcfg, "vocab_size", where)
    lo, hi = token_range(tcfg)
    ids, half = copy_pattern(torch, n, lo, hi, gen)
    if avoid:
        bad = torch.isin(ids, torch.tensor(sorted(avoid)))
        if bool(bad.any()):
            safe = next((t for t in range(lo, hi) if t not in avoid), lo)
            ids[bad] = safe
    return ids, half


# --- the context one build works in --------------------------------------------------

class Ctx:
    def __init__(self, torch, family, config, accepted, seq_len, new_tokens, seed, class_name, model, to_device,
                 counts=None):
        self.counts = dict(counts or {})  # media -> placeholders, as the model itself reported them (harness.py)
        self.torch = torch
        self.family = family
        self.config = config
        self.accepted = set(accepted or ())
        self.seq_len = seq_len
        self.new_tokens = new_tokens
        self.gen = torch.Generator().manual_seed(seed)
        self.class_name = class_name or ""
        self.model = model
        self.to_device = to_device or (lambda kw: kw)
        self.info: dict = {}

    def takes(self, name: str) -> bool:
        return name in self.accepted

    def randn(self, *shape):
        return self.torch.randn(*shape, generator=self.gen)

    def rand(self, *shape):
        return self.torch.rand(*shape, generator=self.gen)


# --- family builders ---------------------------------------------------------------

def _text(ctx: Ctx) -> dict:
    torch, config, family = ctx.torch, ctx.config, ctx.family
    tcfg = text_config(config)  # composite (multimodal) configs keep vocab and positions in their text config
    reserve = ctx.new_tokens if family == "causal-lm" else 0
    n = text_length(tcfg, ctx.seq_len, reserve)
    lo, hi = token_range(tcfg)
    ids, half = copy_pattern(torch, n, lo, hi, ctx.gen)
    if family == "text-encoder":
        # encoders expect [CLS] ... [SEP] (BART-style classifiers require the eos)
        first = _special(config, "cls_token_id", "bos_token_id")
        last = _special(config, "sep_token_id", "eos_token_id")
        if first is not None:
            ids[0, 0] = first
        if last is not None:
            ids[0, -1] = last
    inputs = {"input_ids": ids}
    # No padding: every position is a real token, so the attention mask would be all ones. It is
    # left out (the model then builds its static causal / full mask itself), as TorchTPU's own
    # benchmarks do, which avoids data-dependent mask checks in compiled graphs.
    ctx.info.update(seq_len=n, copy_from=half)
    if family == "text-encoder" and ctx.takes("token_type_ids") and (_get(config, "type_vocab_size") or 0) > 0:
        inputs["token_type_ids"] = torch.zeros_like(ids)
    if family == "seq2seq" or (family == "text-encoder" and _get(config, "is_encoder_decoder")
                               and ctx.takes("decoder_input_ids") and ctx.class_name.endswith("Model")):
        d = max(2, min(ctx.new_tokens, n))
        inputs["decoder_input_ids"] = torch.cat([torch.tensor([decoder_start(config)]), ids[0, : d - 1]]).unsqueeze(0)
        ctx.info["decoder_len"] = d
    return inputs


def _multiple_choice(ctx: Ctx) -> dict:
    torch, config = ctx.torch, ctx.config
    n = text_length(config, ctx.seq_len)
    a, _ = random_text(torch, ctx.gen, config, n, special_ids(config))
    b, _ = random_text(torch, ctx.gen, config, n, special_ids(config))
    ids = torch.stack([a[0], b[0]]).unsqueeze(0)
    inputs = {"input_ids": ids}
    if ctx.takes("token_type_ids") and (_get(config, "type_vocab_size") or 0) > 0:
        inputs["token_type_ids"] = torch.zeros_like(ids)
    ctx.info.update(seq_len=n, choices=2)
    return inputs


def _table_qa(ctx: Ctx) -> dict:
    torch, config = ctx.torch, ctx.config
    n = text_length(config, ctx.seq_len)
    ids, _ = random_text(torch, ctx.gen, config, n, special_ids(config))
    sizes = list(_get(config, "type_vocab_sizes") or [3, 256, 256, 2, 256, 256, 10])
    if len(sizes) != 7:
        raise IncompleteConfig("type_vocab_sizes", f"has {len(sizes)} entries, not 7")
    # question in the first half (segment 0), a 2-column table in the second (segment 1, column 1-2, row 1..)
    tt = torch.zeros(1, n, 7, dtype=torch.long)
    q = n // 2
    for i in range(q, n):
        cell = i - q
        tt[0, i, 0] = min(1, sizes[0] - 1)
        tt[0, i, 1] = min(1 + cell % 2, sizes[1] - 1)
        tt[0, i, 2] = min(1 + cell // 2, sizes[2] - 1)
    ctx.info.update(seq_len=n, table_tokens=n - q)
    return {"input_ids": ids, "attention_mask": torch.ones(1, n, dtype=torch.long), "token_type_ids": tt}


def _time_series(ctx: Ctx) -> dict:
    torch, config = ctx.torch, ctx.config
    mt = _get(config, "model_type") or ""
    if mt in ("timesfm", "timesfm2_5"):
        ctx_len = min(ctx.seq_len * 4, _get(config, "context_length") or 512)
        patch = _get(config, "patch_length") or 32
        ctx_len = max(patch, ctx_len // patch * patch)
        t = torch.arange(ctx_len, dtype=torch.float32)
        series = torch.sin(t / 8.0) + 0.1 * ctx.randn(ctx_len)
        ctx.info.update(context=ctx_len)
        inputs = {"past_values": series.unsqueeze(0)}
        if ctx.takes("freq"):
            inputs["freq"] = torch.zeros(1, dtype=torch.long)
        return inputs
    context = need_int(config, "context_length")
    channels = _get(config, "num_input_channels")
    if _int(channels) is None:
        channels = _get(config, "input_size") or 1
    lags = list(_get(config, "lags_sequence") or [])
    past = context + (max(lags) if lags else 0)
    t = torch.arange(past, dtype=torch.float32)
    shape = (1, past, channels) if (channels > 1 or mt in ("patchtst", "patchtsmixer")) else (1, past)
    base = torch.sin(t / 8.0).reshape(1, past, *([1] * (len(shape) - 2)))
    values = base.expand(*shape) + 0.1 * ctx.randn(*shape)
    inputs = {"past_values": values}
    ctx.info.update(context=context, channels=channels)
    if ctx.takes("past_time_features"):
        nt = _get(config, "num_time_features") or 0
        pred = need_int(config, "prediction_length")
        inputs["past_time_features"] = ctx.randn(1, past, nt)
        inputs["past_observed_mask"] = torch.ones(*shape)
        if (_get(config, "num_static_categorical_features") or 0) > 0:
            inputs["static_categorical_features"] = torch.zeros(1, _get(config, "num_static_categorical_features"),
                                                                dtype=torch.long)
        if (_get(config, "num_static_real_features") or 0) > 0:
            inputs["static_real_features"] = ctx.randn(1, _get(config, "num_static_real_features"))
        fshape = (1, pred, channels) if len(shape) == 3 else (1, pred)
        inputs["future_values"] = ctx.randn(*fshape)
        inputs["future_time_features"] = ctx.randn(1, pred, nt)
        ctx.info["prediction_length"] = pred
    return inputs


def _decision(ctx: Ctx) -> dict:
    torch, config = ctx.torch, ctx.config
    state_dim = need_int(config, "state_dim")
    act_dim = need_int(config, "act_dim")
    t = min(20, _get(config, "max_ep_len") or 20)
    ctx.info.update(steps=t)
    return {"states": ctx.randn(1, t, state_dim), "actions": ctx.randn(1, t, act_dim).tanh(),
            "rewards": ctx.randn(1, t, 1), "returns_to_go": ctx.randn(1, t, 1),
            "timesteps": torch.arange(t).unsqueeze(0), "attention_mask": torch.ones(1, t, dtype=torch.long)}


# --- images ---------------------------------------------------------------------

def image_size(config, where: str = "", default: int | None = 224) -> tuple[int, int]:
    """The config's image size. A config whose class has an image size but leaves it empty (null) is
    incomplete; one without the field at all (convolutional towers take any size) gets default,
    unless default is None."""
    name = f"{where}.image_size" if where else "image_size"
    size = None
    for key in ("image_size", "img_size", "input_size", "resolution"):  # timm names; LayoutLMv3's page; VQ-VAEs
        present = key in config if isinstance(config, dict) else hasattr(config, key)
        if present:
            size = _get(config, key)
            if size is None:
                raise IncompleteConfig(name)
            break
    if size is None:
        if default is None:
            raise IncompleteConfig(name)
        size = default
    if isinstance(size, dict):
        size = (size.get("height", default or 224), size.get("width", default or 224))
    if isinstance(size, (list, tuple)):
        h, w = size[0], size[-1]
    else:
        h = w = size
    if _int(h) is None or _int(w) is None or h < 1 or w < 1:
        raise IncompleteConfig(f"{where}.image_size" if where else "image_size", f"is {size!r}, not a size")
    return h, w


def channels(config) -> int:
    for key in ("num_channels", "in_channels", "in_chans", "input_channels"):
        val = _int(_get(config, key))
        if val:
            return val
    return 3


def _backbone_size(config) -> tuple[int, int]:
    """The image size of a detection/segmentation/depth model: its own, its backbone's, else 224."""
    if _get(config, "image_size") is not None:
        return image_size(config)
    for key in ("backbone_config", "vision_config", "encoder_config"):
        sub = _get(config, key)
        if sub is not None and not isinstance(sub, (str, int)) and _get(sub, "image_size") is not None:
            return image_size(sub, key)
    return 224, 224


def _multiple(n: int, k: int) -> int:
    return max(k, (n // k) * k) if k and k > 1 else n


def _pixels(ctx: Ctx, config=None, size=None, where="") -> dict:
    config = ctx.config if config is None else config
    h, w = size or image_size(config, where)
    c = channels(config)
    patch = _int(_get(config, "patch_size"))
    if patch and patch > 1:
        h, w = _multiple(h, patch), _multiple(w, patch)
    ctx.info.setdefault("image", [c, h, w])
    inputs = {"pixel_values": ctx.randn(1, c, h, w)}
    if ctx.takes("pixel_mask"):
        inputs["pixel_mask"] = ctx.torch.ones(1, h, w, dtype=ctx.torch.long)
    return inputs


def _vision(ctx: Ctx) -> dict:
    return _pixels(ctx, size=image_size(ctx.config))


def _dense_vision(ctx: Ctx) -> dict:
    """Detection, segmentation, depth, image-to-image: pixels at the model's (or backbone's) size."""
    config = ctx.config
    h, w = _backbone_size(config)
    window = _int(_get(config, "window_size"))
    if window and window > 1 and ctx.family == "image-to-image":
        h, w = _multiple(h, window), _multiple(w, window)
    inputs = _pixels(ctx, size=(h, w))
    if ctx.takes("task_inputs"):  # OneFormer: the task as text ("the task is semantic")
        n = _get(config, "task_seq_len") or 77
        tcfg = _get(config, "text_config") or config
        inputs["task_inputs"], _ = random_text(ctx.torch, ctx.gen, tcfg, n, set())
    inputs.update(_prompt_text(ctx))
    return inputs


def _prompt_text(ctx: Ctx) -> dict:
    """One text prompt, input_ids [1, S] (+ attention_mask), for an image model whose forward takes text too and
    whose config has a text tower (CLIPSeg: "a photo of a cat" segments the cat); {} otherwise."""
    tkey, tcfg = sub_config(ctx.config, "text_config")
    if not ctx.takes("input_ids") or tcfg is None:
        return {}
    n = text_length(tcfg, min(ctx.seq_len, 16))
    ids, _ = random_text(ctx.torch, ctx.gen, tcfg, n, special_ids(ctx.config, tcfg), tkey)
    out = {"input_ids": ids}
    if ctx.takes("attention_mask"):
        out["attention_mask"] = ctx.torch.ones_like(ids)
    ctx.info.update(seq_len=n, prompts=1)
    return out


def _video(ctx: Ctx) -> dict:
    config = ctx.config
    frames = _int(_get(config, "num_frames")) or VIDEO_FRAMES
    h, w = image_size(config)
    c = channels(config)
    ctx.info.update(video=[frames, c, h, w])
    return {"pixel_values": ctx.randn(1, frames, c, h, w)}


def _keypoints(ctx: Ctx) -> dict:
    config = ctx.config
    if "Matching" in ctx.class_name or ctx.takes("pixel_values") and _get(config, "keypoint_detector_config"):
        h, w = _backbone_size(config)
        h, w = _multiple(min(h, 480), 8), _multiple(min(w, 640), 8)
        ctx.info.update(pair=[2, 3, h, w])
        return {"pixel_values": ctx.randn(1, 2, 3, h, w).clamp(0, 1)}
    h, w = _backbone_size(config)
    inputs = _pixels(ctx, size=(_multiple(h, 8), _multiple(w, 8)))
    inputs["pixel_values"] = inputs["pixel_values"].clamp(0, 1)
    if ctx.takes("dataset_index") and (_get(_get(config, "backbone_config"), "num_experts") or 1) > 1:
        inputs["dataset_index"] = ctx.torch.zeros(1, dtype=ctx.torch.long)
    return inputs


def _mask_generation(ctx: Ctx) -> dict:
    torch, config = ctx.torch, ctx.config
    _, vcfg = sub_config(config, "vision_config", required="vision_config")
    h, w = image_size(vcfg, "vision_config", default=None)
    inputs = {"pixel_values": ctx.randn(1, channels(vcfg), h, w)}
    ctx.info.update(image=[channels(vcfg), h, w], points=1)
    inputs["input_points"] = torch.tensor([[[[w / 2.0, h / 2.0]]]])
    inputs["input_labels"] = torch.ones(1, 1, 1, dtype=torch.long)
    if ctx.takes("multimask_output"):
        inputs["multimask_output"] = False
    return inputs


def _contrastive(ctx: Ctx) -> dict:
    torch, config = ctx.torch, ctx.config
    _, tcfg = sub_config(config, "text_config", required="text_config")
    vkey, vcfg = sub_config(config, "vision_config", required="vision_config")
    n = text_length(tcfg, min(ctx.seq_len, 64))
    a, _ = random_text(torch, ctx.gen, tcfg, n, special_ids(config, tcfg), "text_config")
    b, _ = random_text(torch, ctx.gen, tcfg, n, special_ids(config, tcfg), "text_config")
    inputs = {"input_ids": torch.cat([a, b])}
    if ctx.takes("attention_mask"):
        inputs["attention_mask"] = torch.ones(2, n, dtype=torch.long)
    if ctx.takes("spatial_shapes"):  # SigLIP 2: patches of a native-resolution image
        inputs.update(_siglip2_patches(ctx, vcfg))
    else:
        inputs.update(_pixels(ctx, vcfg, size=image_size(vcfg, vkey, default=None), where=vkey))
        inputs.pop("pixel_mask", None)
    ctx.info.update(seq_len=n, labels=2)
    return inputs


def _audio_contrastive(ctx: Ctx) -> dict:
    """CLAP: one audio clip as its feature extractor writes it, input_features [1, channels, frames, mel bins]
    (4 channels, the fused views, when the audio tower fuses; frames the longest the tower takes, spec_size x
    spec_size / mel bins) with is_longer, and two candidate label texts input_ids [2, S]."""
    torch, config = ctx.torch, ctx.config
    tkey, tcfg = sub_config(config, "text_config", required="text_config")
    akey, acfg = sub_config(config, "audio_config", required="audio_config")
    n = text_length(tcfg, min(ctx.seq_len, 64))
    rows = [random_text(torch, ctx.gen, tcfg, n, special_ids(config, tcfg), tkey)[0] for _ in range(2)]
    inputs = {"input_ids": torch.cat(rows)}
    if ctx.takes("attention_mask"):
        inputs["attention_mask"] = torch.ones(2, n, dtype=torch.long)
    mel = need_int(acfg, "num_mel_bins", akey)
    spec = need_int(acfg, "spec_size", akey, minimum=mel)
    frames = spec * (spec // mel)
    views = 4 if _get(acfg, "enable_fusion") else 1
    inputs["input_features"] = (ctx.randn(1, views, frames, mel) * 0.5).clamp(-1.5, 1.5)
    if ctx.takes("is_longer"):
        inputs["is_longer"] = torch.zeros(1, 1, dtype=torch.bool)
    ctx.info.update(seq_len=n, labels=2, audio=[views, frames, mel])
    return inputs


def _siglip2_patches(ctx: Ctx, vcfg) -> dict:
    torch = ctx.torch
    patch = need_int(vcfg, "patch_size", "vision_config")
    num = need_int(vcfg, "num_patches", "vision_config")
    side = max(1, int(num ** 0.5))
    c = channels(vcfg)
    ctx.info.update(patches=[side, side], patch=patch)
    return {"pixel_values": ctx.randn(1, side * side, c * patch * patch),
            "pixel_attention_mask": torch.ones(1, side * side, dtype=torch.long),
            "spatial_shapes": torch.tensor([[side, side]])}


def _zero_shot_detection(ctx: Ctx) -> dict:
    torch, config = ctx.torch, ctx.config
    tkey, tcfg = sub_config(config, "text_config", required="text_config")
    vkey, vcfg = sub_config(config, "vision_config", "backbone_config")
    owl = _get(config, "model_type") in ("owlvit", "owlv2")
    n = text_length(tcfg, 16 if owl else min(ctx.seq_len, 16))
    queries = 2 if owl else 1
    rows = [random_text(torch, ctx.gen, tcfg, n, special_ids(config, tcfg), tkey)[0] for _ in range(queries)]
    inputs = {"input_ids": torch.cat(rows)}
    if ctx.takes("attention_mask"):
        inputs["attention_mask"] = torch.ones(queries, n, dtype=torch.long)
    if owl:
        inputs.update(_pixels(ctx, vcfg, size=image_size(vcfg, vkey, default=None), where=vkey))
    else:
        inputs.update(_pixels(ctx, size=_backbone_size(config)))
    inputs.pop("pixel_mask", None)
    if ctx.takes("pixel_mask"):
        _, _, h, w = inputs["pixel_values"].shape
        inputs["pixel_mask"] = torch.ones(1, h, w, dtype=torch.long)
    if ctx.takes("token_type_ids"):
        inputs["token_type_ids"] = torch.zeros(queries, n, dtype=torch.long)
    ctx.info.update(seq_len=n, queries=queries)
    return inputs


# --- vision-language --------------------------------------------------------------

def _vision_of(config):
    key, sub = sub_config(config, "vision_config", "visual", "vision_encoder_config", "encoder", "vq_config")
    if sub is None and _get(config, "image_size") is not None:  # one tower for both (ViLT)
        return "", config
    return key, sub


def _qwen_style(vcfg) -> bool:
    return _get(vcfg, "temporal_patch_size") is not None and (
        _get(vcfg, "spatial_merge_size") is not None or _get(vcfg, "merge_size") is not None)


def _qwen_patches(ctx: Ctx, vcfg, frames: int) -> tuple:
    """Flattened patches of a Qwen-VL-style tower: (pixels, grid_thw)."""
    patch = need_int(vcfg, "patch_size", "vision_config")
    merge = _int(_get(vcfg, "spatial_merge_size")) or need_int(vcfg, "merge_size", "vision_config")
    tp = need_int(vcfg, "temporal_patch_size", "vision_config")
    c = channels(vcfg)
    target = _int(_get(vcfg, "image_size")) or 224
    side = max(merge, round(target / (patch * merge)) * merge)
    grid_t = max(1, frames // tp)
    pixels = ctx.randn(grid_t * side * side, c * tp * patch * patch)
    grid = ctx.torch.tensor([[grid_t, side, side]])
    ctx.info.update(grid_thw=[grid_t, side, side])
    return pixels, grid


def _positioned_patches(ctx: Ctx, vcfg) -> dict:
    """Gemma 4: one image as its processor writes it, flattened patches with their (x, y) positions,
    pixel_values [1, N, 3 x P x P] and image_position_ids [1, N, 2]. P is the tower's patch (patch_size), or its
    merged patch (model_patch_size: patch_size x pooling_kernel_size, an encoder-free embedder); a tower that pools
    k x k patches into one token gets a side that k divides. About a 224-pixel image, within the position table."""
    torch = ctx.torch
    patch = need_int(vcfg, "patch_size", "vision_config")
    merged = _int(_get(vcfg, "model_patch_size"))
    k = _int(_get(vcfg, "pooling_kernel_size")) or 1
    pixel, unit = (merged, 1) if merged else (patch, k)
    target = _int(_get(vcfg, "image_size")) or 224
    side = unit * max(1, round(target / (pixel * unit)))
    limit = _int(_get(vcfg, "position_embedding_size")) or _int(_get(vcfg, "mm_posemb_size"))
    if limit:
        side = min(side, max(unit, limit // unit * unit))
    rows = torch.arange(side).repeat_interleave(side)
    cols = torch.arange(side).repeat(side)
    ctx.info.update(patches=[side, side], patch=pixel)
    return {"pixel_values": ctx.rand(1, side * side, 3 * pixel * pixel),
            "image_position_ids": torch.stack([cols, rows], dim=-1).unsqueeze(0)}


def optional_tower_absent(config, key: str) -> bool:
    """The config names no key sub-config and its class declares that tower optional (transformers builds the model
    without it: Gemma 4's vision and audio embedders)."""
    if isinstance(config, dict) or _get(config, key) is not None:
        return False
    spec = (getattr(type(config), "sub_configs_defaults", None) or {}).get(key)
    return bool(getattr(spec, "optional", False))


def media_inputs(ctx: Ctx, config, video: bool = False) -> dict:
    """The pixel inputs of one image (or clip) in the model's layout."""
    torch = ctx.torch
    vkey, vcfg = _vision_of(config)
    if vcfg is None:
        raise IncompleteConfig("vision_config")
    frames = VIDEO_FRAMES
    if ctx.takes("image_position_ids") and not video:
        return _positioned_patches(ctx, vcfg)
    if _qwen_style(vcfg):
        pixels, grid = _qwen_patches(ctx, vcfg, frames if video else _get(vcfg, "temporal_patch_size"))
        if video:
            return {"pixel_values_videos": pixels, "video_grid_thw": grid}
        return {"pixel_values": pixels, "image_grid_thw": grid}
    if ctx.takes("flattened_patches"):  # Pix2Struct
        patch = _get(vcfg, "patch_size") or 16
        n = min(_get(vcfg, "seq_len") or 2048, 256)
        dim = (_get(vcfg, "patch_embed_hidden_size") or channels(vcfg) * patch * patch) + 2
        side = max(1, int(n ** 0.5))
        n = side * side
        patches = ctx.randn(1, n, dim)
        # the first two columns are each patch's row and column (1-based), as the processor writes them
        patches[0, :, 0] = torch.arange(n).div(side, rounding_mode="floor").float() + 1
        patches[0, :, 1] = torch.arange(n).remainder(side).float() + 1
        ctx.info.update(patches=n)
        return {"flattened_patches": patches, "attention_mask": torch.ones(1, n, dtype=torch.long)}
    if ctx.takes("spatial_shapes"):
        return _siglip2_patches(ctx, vcfg)
    h, w = image_size(vcfg, vkey or "vision_config")
    c = channels(vcfg)
    model_type = _get(config, "model_type") or ""
    if _get(vcfg, "model_type") == "pixtral":  # any size up to image_size: a 448-pixel image is plenty
        step = (_int(_get(vcfg, "patch_size")) or 14) * (_int(_get(config, "spatial_merge_size")) or 1)
        h = w = _multiple(min(h, 448), step)
    if video:
        ctx.info.update(video=[frames, c, h, w])
        key = "pixel_values_videos" if ctx.takes("pixel_values_videos") else "pixel_values"
        return {key: ctx.randn(1, frames, c, h, w)}
    if model_type in ("idefics2", "idefics3", "smolvlm"):
        ctx.info.update(image=[1, c, h, w])
        out = {"pixel_values": ctx.randn(1, 1, c, h, w)}
        if ctx.takes("pixel_attention_mask"):
            out["pixel_attention_mask"] = torch.ones(1, 1, h, w, dtype=torch.bool)
        return out
    pinpoints = _get(config, "image_grid_pinpoints")
    if pinpoints and ctx.takes("image_sizes"):  # LLaVA-NeXT anyres: the base image plus its grid of patches
        from transformers.models.llava_next.modeling_llava_next import image_size_to_num_patches

        size = [int(v) for v in pinpoints[0]]
        n = image_size_to_num_patches(size, pinpoints, h)
        ctx.info.update(image=[n, c, h, w], image_sizes=size)
        return {"pixel_values": ctx.randn(1, n, c, h, w), "image_sizes": torch.tensor([size])}
    out = {"pixel_values": ctx.randn(1, c, h, w)}
    ctx.info.update(image=[c, h, w])
    if ctx.takes("image_sizes") and _get(vcfg, "model_type") == "pixtral":
        out["image_sizes"] = torch.tensor([[h, w]])
    return out


def _owner(model, method: str):
    """The module that implements method: the model, or its inner model / vlm / language_model."""
    for obj in (model, getattr(model, "model", None), getattr(model, "vlm", None)):
        if obj is not None and callable(getattr(obj, method, None)):
            return obj
    return None


def count_features(ctx: Ctx, method: str, kwargs: dict) -> int | None:
    """How many placeholder tokens the model's own method (get_image_features, ...) fills for kwargs."""
    owner = _owner(ctx.model, method) if ctx.model is not None else None
    if owner is None:
        return None
    fn = getattr(owner, method)
    try:
        params = inspect.signature(fn).parameters
        takes_all = any(p.kind == p.VAR_KEYWORD for p in params.values())
    except (TypeError, ValueError):
        params, takes_all = {}, True
    call = {k: v for k, v in kwargs.items() if k in params or (takes_all and k not in ("input_ids",))}
    with ctx.torch.no_grad():
        out = fn(**ctx.to_device(call))
    return _token_count(out)


def _token_count(out) -> int | None:
    feats = getattr(out, "pooler_output", None) if not isinstance(out, (tuple, list)) and hasattr(
        out, "pooler_output") else out
    if feats is None and hasattr(out, "last_hidden_state"):
        feats = out.last_hidden_state
    if hasattr(feats, "shape"):
        feats = [feats]
    if not isinstance(feats, (tuple, list)):
        return None
    total = 0
    for f in feats:
        if not hasattr(f, "shape") or f.dim() < 2:
            return None
        total += f.numel() // f.shape[-1]
    return total


def placeholder(config, media: str) -> int | None:
    keys = {"image": ("image_token_id", "image_token_index"), "video": ("video_token_id", "video_token_index"),
            "audio": ("audio_token_id", "audio_token_index")}[media]
    for key in keys:
        val = _int(_get(config, key))
        if val is not None:
            return val
    return None


def _mm_text(ctx: Ctx, config, tcfg, media: str, n_tokens: int, reserve: int, more=()) -> dict:
    """input_ids [1, n_tokens placeholders (then those of more: (media, n) pairs) + S text] (+ mm_token_type_ids,
    attention_mask)."""
    torch = ctx.torch
    segments = [(m, placeholder(config, m), n) for m, n in [(media, n_tokens), *more]]
    placed = sum(n for _, t, n in segments if t is not None)
    mp = max_positions(tcfg)
    s = ctx.seq_len
    latent = (_get(config, "latent_query_num") or 64) if ctx.takes("image_embeds_position_mask") else 0
    s = max(s, latent + 2)  # Kosmos-2: the image's latent queries sit in the text
    if mp:
        s = max(2, min(s, mp - placed - reserve))
    where = "text_config" if _get(config, "text_config") is not None else ""
    text, _ = random_text(torch, ctx.gen, tcfg, s, special_ids(config, tcfg), where)
    parts = [torch.full((1, n), t, dtype=text.dtype) for _, t, n in segments if t is not None and n]
    ids = torch.cat([*parts, text], dim=1) if parts else text
    out = {"input_ids": ids}
    ctx.info.update(seq_len=int(ids.shape[1]), **{f"{m}_tokens": n if t is not None else 0 for m, t, n in segments})
    if ctx.takes("mm_token_type_ids") and any(t is not None for _, t, _ in segments):
        mm = torch.zeros_like(ids)
        at = 0
        for m, t, n in segments:
            if t is not None and n:
                mm[0, at: at + n] = {"image": 1, "video": 2, "audio": 3}[m]
                at += n
        out["mm_token_type_ids"] = mm
    if ctx.takes("image_embeds_position_mask"):  # Kosmos-2: where the image's latent queries go
        q = _get(config, "latent_query_num") or 64
        mask = torch.zeros_like(ids)
        mask[0, 1: 1 + min(q, ids.shape[1] - 1)] = 1
        out["image_embeds_position_mask"] = mask
    if ctx.takes("qformer_input_ids"):  # InstructBLIP: the instruction, for the Q-Former too
        qcfg = _get(config, "qformer_config") or tcfg
        q, _ = random_text(torch, ctx.gen, qcfg, 8, special_ids(qcfg))
        out["qformer_input_ids"] = q
        out["qformer_attention_mask"] = torch.ones_like(q)
    return out


def _encoder_decoder(ctx: Ctx, config, tcfg) -> bool:
    return bool(_get(config, "is_encoder_decoder") or _get(tcfg, "is_encoder_decoder")) or ctx.class_name in (
        "VisionEncoderDecoderModel",)


def _vlm(ctx: Ctx, video: bool = False) -> dict:
    config = ctx.config
    if ctx.family == "retrieval" and _get(config, "vlm_config") is not None:
        config = _get(config, "vlm_config")
    tcfg = text_config(config)
    if _get(config, "model_type") == "vision-encoder-decoder":
        tcfg = _get(config, "decoder") or tcfg
    media = "video" if video else "image"
    if optional_tower_absent(config, "vision_config"):  # the model as configured has no vision tower: its text
        ctx.info["no_vision_tower"] = True
        reserve = ctx.new_tokens if FAMILY_GENERATES.get(ctx.family) else 0
        return _mm_text(ctx, config, tcfg, media, 0, reserve)
    pix = media_inputs(ctx, config, video=video)
    token = placeholder(config, media)
    n = 0
    if token is not None and media in ctx.counts:
        n = ctx.counts[media]
    elif token is not None:
        counted = count_features(ctx, f"get_{media}_features", pix)
        n = counted if counted is not None else 1
    inputs = dict(pix)
    if _encoder_decoder(ctx, config, tcfg):
        d = max(2, min(ctx.new_tokens, ctx.seq_len))
        dec, _ = random_text(ctx.torch, ctx.gen, tcfg, d, special_ids(config, tcfg))
        dec[0, 0] = decoder_start(config if _get(config, "decoder_start_token_id") is not None else tcfg)
        if ctx.takes("input_ids") and ctx.class_name != "VisionEncoderDecoderModel":
            inputs.update(_mm_text(ctx, config, tcfg, media, n, 0))
        inputs["decoder_input_ids"] = dec
        ctx.info["decoder_len"] = d
    else:
        reserve = ctx.new_tokens if FAMILY_GENERATES.get(ctx.family) else 0
        more = []
        akey, acfg = sub_config(config, "audio_config")
        if acfg is not None and ctx.takes("input_features") and placeholder(config, "audio") is not None:
            feats, frames = _audio_clip(ctx, acfg, akey)  # an any-to-any model: its audio too, after the image
            inputs.update(feats)
            more.append(("audio", _audio_tokens(ctx, config, feats, frames)))
        inputs.update(_mm_text(ctx, config, tcfg, media, n, reserve, more))
    return inputs


def _document(ctx: Ctx) -> dict:
    torch, config = ctx.torch, ctx.config
    n = text_length(config, ctx.seq_len)
    ids, _ = random_text(torch, ctx.gen, config, n, special_ids(config))
    x0 = (ctx.rand(1, n) * 800).long()
    y0 = (ctx.rand(1, n) * 800).long()
    bbox = torch.stack([x0, y0, x0 + 100, y0 + 50], dim=-1)
    inputs = {"input_ids": ids, "bbox": bbox, "attention_mask": torch.ones(1, n, dtype=torch.long)}
    if ctx.takes("pixel_values"):
        inputs.update(_pixels(ctx, size=image_size(config)))
    elif ctx.takes("image"):  # LayoutLMv2
        inputs["image"] = ctx.randn(1, 3, 224, 224)
    ctx.info.update(seq_len=n)
    return inputs


# --- audio ------------------------------------------------------------------------

def _speech_seq2seq(ctx: Ctx) -> dict:
    torch, config = ctx.torch, ctx.config
    mel = _get(config, "num_mel_bins") or 80
    frames = 2 * (_get(config, "max_source_positions") or 1500)
    d = max(2, min(ctx.new_tokens, (_get(config, "max_target_positions") or 448) // 2))
    lo, hi = token_range(config)
    dec = torch.cat([torch.tensor([decoder_start(config)]), torch.randint(lo, hi, (d - 1,), generator=ctx.gen)])
    ctx.info.update(mel=mel, frames=frames, decoder_len=d)
    return {"input_features": (ctx.randn(1, mel, frames) * 0.5).clamp(-1.5, 1.5), "decoder_input_ids": dec.unsqueeze(0)}


def _speech_features(ctx: Ctx) -> dict:
    """The filter-bank input_features of 1 s of audio, for a speech encoder whose forward takes them instead of a
    waveform (the forward's signature decides, issue 41): the bins from the config (w2v-BERT's
    feature_projection_input_dim, else num_mel_bins, at the top or in the encoder's / audio tower's sub-config);
    Whisper's encoder (an encoder-decoder config with num_mel_bins and max_source_positions) reads
    [1, mel, 2 x max_source_positions], the others (Parakeet,
    w2v-BERT) [1, 100 frames of 10 ms, bins]."""
    torch, config = ctx.torch, ctx.config
    where, cfg = "", config
    if _get(config, "feature_projection_input_dim") is not None:
        bins = need_int(config, "feature_projection_input_dim")
    else:
        if _get(config, "num_mel_bins") is None:
            where, sub = sub_config(config, "encoder_config", "audio_config", "encoder")
            cfg = sub if sub is not None else config
        bins = need_int(cfg, "num_mel_bins", where)
    msp = _int(_get(cfg, "max_source_positions"))
    if msp and _get(cfg, "is_encoder_decoder") and _get(cfg, "num_mel_bins") is not None:  # a Whisper encoder
        frames = 2 * msp
        ctx.info.update(frames=frames, mel=bins)
        return {"input_features": (ctx.randn(1, bins, frames) * 0.5).clamp(-1.5, 1.5)}
    frames = 100  # 1 s of 10 ms filter-bank frames
    ctx.info.update(frames=frames, bins=bins)
    out = {"input_features": ctx.randn(1, frames, bins)}
    if ctx.takes("attention_mask") and _get(config, "feature_projection_input_dim") is None:
        out["attention_mask"] = torch.ones(1, frames, dtype=torch.long)
    return out


def _speech(ctx: Ctx) -> dict:
    config = ctx.config
    if ctx.takes("input_features") and not ctx.takes("input_values"):
        return _speech_features(ctx)
    if _get(config, "model_type") == "audio-spectrogram-transformer":
        frames = need_int(config, "max_length")
        bins = need_int(config, "num_mel_bins")
        ctx.info.update(frames=frames, bins=bins)
        return {"input_values": ctx.randn(1, frames, bins)}
    ctx.info.update(samples=AUDIO_SAMPLES)
    return {"input_values": ctx.randn(1, AUDIO_SAMPLES)}


def _audio_clip(ctx: Ctx, acfg, akey: str) -> tuple[dict, int]:
    """One clip's audio features in the tower's layout, and its frame count: raw waveform frames for Gemma 4
    unified ([1, N, samples per token], one token each), else Whisper-style mel features [1, mel, frames]."""
    torch = ctx.torch
    per = _int(_get(acfg, "audio_samples_per_token"))
    if per and _get(acfg, "num_mel_bins") is None:
        frames = max(1, AUDIO_SAMPLES // per)
        feats = {"input_features": (ctx.randn(1, frames, per) * 0.1).clamp(-1, 1)}
        if ctx.takes("input_features_mask"):  # True = a real frame (the model keeps those by it)
            feats["input_features_mask"] = torch.ones(1, frames, dtype=torch.bool)
        ctx.info.update(frames=frames, samples_per_frame=per)
        return feats, frames
    mel = need_int(acfg, "num_mel_bins", akey)
    frames = 2 * (_int(_get(acfg, "max_source_positions")) or 1500)
    feats = {"input_features": (ctx.randn(1, mel, frames) * 0.5).clamp(-1.5, 1.5)}
    if ctx.takes("feature_attention_mask"):
        feats["feature_attention_mask"] = torch.ones(1, frames, dtype=torch.long)
    if ctx.takes("input_features_mask"):
        feats["input_features_mask"] = torch.ones(1, frames, dtype=torch.long)
    ctx.info.update(mel=mel, frames=frames)
    return feats, frames


def _audio_tokens(ctx: Ctx, config, feats: dict, frames: int) -> int:
    """How many audio placeholders one clip fills: the model's own count, else one (enough to check a config)."""
    if placeholder(config, "audio") is None:
        return 0
    if "audio" in ctx.counts:
        return ctx.counts["audio"]
    counted = count_features(ctx, "get_audio_features", feats)
    if counted is None:
        counted = _audio_output_length(ctx, frames)
    return counted if counted is not None else 1


def _audio_lm(ctx: Ctx) -> dict:
    config = ctx.config
    akey, acfg = sub_config(config, "audio_config", "audio_encoder_config", required="audio_config")
    tcfg = text_config(config)
    feats, frames = _audio_clip(ctx, acfg, akey)
    n = _audio_tokens(ctx, config, feats, frames)
    inputs = dict(feats)
    inputs.update(_mm_text(ctx, config, tcfg, "audio", n, ctx.new_tokens))
    return inputs


def _audio_output_length(ctx: Ctx, frames: int) -> int | None:
    """Audio tokens of one clip of frames, by the audio tower's own _get_feat_extract_output_lengths
    (Qwen2-Audio and others without get_audio_features)."""
    model = ctx.model
    for obj in (model, getattr(model, "model", None)):
        tower = getattr(obj, "audio_tower", None) if obj is not None else None
        fn = getattr(tower, "_get_feat_extract_output_lengths", None)
        if fn is not None:
            out = fn(ctx.torch.tensor([frames]))
            last = out[-1] if isinstance(out, (tuple, list)) else out
            return int(last.reshape(-1)[0])
    return None


def _tts(ctx: Ctx) -> dict:
    torch, config = ctx.torch, ctx.config
    tcfg = _get(config, "text_encoder") or text_config(config)
    n = text_length(tcfg, min(ctx.seq_len, 32))
    ids, _ = random_text(torch, ctx.gen, tcfg, n, special_ids(config, tcfg))
    inputs = {"input_ids": ids}
    if ctx.takes("attention_mask"):
        inputs["attention_mask"] = torch.ones_like(ids)
    ctx.info.update(seq_len=n)
    if ctx.takes("decoder_input_values"):  # SpeechT5: the spectrogram frames decoded so far
        bins = need_int(config, "num_mel_bins")
        frames = max(2, ctx.new_tokens)
        inputs["decoder_input_values"] = ctx.randn(1, frames, bins) * 0.5
        if ctx.takes("speaker_embeddings"):
            inputs["speaker_embeddings"] = ctx.randn(1, need_int(config, "speaker_embedding_dim")) * 0.1
        ctx.info.update(decoder_frames=frames)
    dcfg = _get(config, "decoder")
    if ctx.takes("decoder_input_ids") and dcfg is not None:  # MusicGen: audio codes, one row per codebook
        books = need_int(dcfg, "num_codebooks", "decoder")
        vocab = need_int(dcfg, "vocab_size", "decoder")
        d = max(2, ctx.new_tokens)
        dec = torch.randint(0, vocab, (books, d), generator=ctx.gen)
        dec[:, 0] = _int(_get(dcfg, "pad_token_id")) if _int(_get(dcfg, "pad_token_id")) is not None else 0
        inputs["decoder_input_ids"] = dec
        ctx.info.update(codebooks=books, decoder_len=d)
    return inputs


def _codec(ctx: Ctx) -> dict:
    """A clip of input_values [1, channels, samples] (up to 1 s, a whole number of hops); a codec with a semantic
    tower too (X-Codec 2: a w2v-BERT reading filter-bank input_features) gets its features, one frame per hop."""
    config = ctx.config
    rate = need_int(config, "sampling_rate")
    ch = _int(_get(config, "audio_channels")) or 1
    hop = _int(_get(config, "hop_length"))
    samples = min(rate, 24000)
    if hop:
        samples = _multiple(samples, hop)
    ctx.info.update(samples=samples, channels=ch, rate=rate)
    out = {"input_values": (ctx.randn(1, ch, samples) * 0.1).clamp(-1, 1)}
    skey, scfg = sub_config(config, "semantic_model_config")
    if ctx.takes("input_features") and scfg is not None:
        bins = need_int(scfg, "feature_projection_input_dim", skey)
        frames = samples // need_int(config, "hop_length")
        out["input_features"] = ctx.randn(1, frames, bins)
        ctx.info.update(frames=frames, bins=bins)
    return out


BUILDERS = {
    "causal-lm": _text, "text-encoder": _text, "seq2seq": _text,
    "multiple-choice": _multiple_choice, "table-qa": _table_qa,
    "time-series": _time_series, "decision": _decision,
    "vision": _vision, "video": _video,
    "detection": _dense_vision, "segmentation": _dense_vision, "depth": _dense_vision,
    "image-to-image": _dense_vision,
    "keypoints": _keypoints, "mask-generation": _mask_generation,
    "contrastive": _contrastive, "zero-shot-detection": _zero_shot_detection,
    "audio-contrastive": _audio_contrastive,
    "vlm": _vlm, "retrieval": _vlm, "video-lm": lambda ctx: _vlm(ctx, video=True),
    "document": _document,
    "speech-seq2seq": _speech_seq2seq, "speech-ctc": _speech, "speech-encoder": _speech,
    "audio-lm": _audio_lm, "tts": _tts, "codec": _codec,
}

# Families whose forward is followed by generate(): tasks.json, the one task table.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tasks.json"), encoding="utf-8") as _fh:
    FAMILY_GENERATES: dict[str, bool] = {name: spec["generate"] for name, spec in json.load(_fh)["families"].items()}


def build_inputs(torch, family: str, config, accepted: set[str], seq_len: int, new_tokens: int, seed: int,
                 class_name: str = "", model=None, to_device=None, counts=None) -> tuple[dict, dict]:
    """CPU float32/int64 inputs for one static-shape forward, plus facts about them.

    accepted: the parameter names of model.forward (optional inputs are added only where taken);
    class_name: the model class (plain encoder-decoder *Model classes need decoder_input_ids);
    model, to_device: the loaded model and the harness's conversion of CPU inputs to its device and
    dtype, used to ask multimodal models how many placeholder tokens one image takes (without a
    model, one placeholder is assumed: enough to check the config); counts: media -> placeholders the
    model itself reported (placeholder_mismatch), used instead. Raises IncompleteConfig."""
    builder = BUILDERS.get(family)
    if builder is None:
        raise ValueError(f"unknown family {family}")
    ctx = Ctx(torch, family, config, accepted, seq_len, new_tokens, seed, class_name, model, to_device, counts)
    inputs = builder(ctx)
    if "use_cache" in ctx.accepted and FAMILY_GENERATES.get(family):
        inputs["use_cache"] = False
    return inputs, ctx.info


# The modalities of a forward's inputs: a forward that takes a key of a modality, of a model whose config has that
# modality's tower, gets an input of it (CLIPSeg segments the image by a text prompt; CLAP scores a clip against
# texts). tests/test_families.py checks every family's inputs against its tiny model's forward with this.
MODALITY_KEYS = {
    "text": ("input_ids",),
    "vision": ("pixel_values", "pixel_values_videos", "flattened_patches", "image"),
    "audio": ("input_features", "input_values"),
}
_TOWER_KEYS = {
    "text": ("text_config", "vocab_size", "text_encoder"),
    "vision": ("vision_config", "visual", "vision_encoder_config", "backbone_config", "image_size", "input_size",
               "num_channels", "vq_config", "backbone"),
    "audio": ("audio_config", "audio_encoder_config", "num_mel_bins", "feat_extract_norm", "conv_dim",
              "feature_projection_input_dim", "sampling_rate"),
}


def modalities_missing(accepted, config, inputs: dict) -> list[str]:
    """The modalities model.forward takes (accepted: its parameters) and its config has a tower for, of which inputs
    carry none; [] when every one it takes is given."""
    accepted = set(accepted or ())
    missing = []
    for modality, keys in MODALITY_KEYS.items():
        takes = accepted & set(keys)
        tower = any(_get(config, k) is not None for k in _TOWER_KEYS[modality])
        if takes and tower and not (set(inputs) & set(keys)):
            missing.append(modality)
    return missing


# transformers' own words when a multimodal forward's placeholders and features disagree ("Image features and image
# tokens do not match, tokens: 1, features: 16"; "...: tokens: 1, features 16" in a few models).
_PLACEHOLDER_MISMATCH = re.compile(r"\b(Image|Video|Audio) features and \w+ tokens do not match[,:]? tokens: (\d+), "
                                   r"features:? (\d+)\b")


def placeholder_mismatch(exc: BaseException) -> tuple[str, int, int] | None:
    """(media, placeholders given, features the model made) when exc (or its cause) is transformers' placeholder
    mismatch; None otherwise."""
    seen = set()
    e = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        m = _PLACEHOLDER_MISMATCH.search(str(e))
        if m:
            return m.group(1).lower(), int(m.group(2)), int(m.group(3))
        e = e.__cause__ or e.__context__
    return None


def placeholder_candidates(made: int, hidden: int | None) -> list[int]:
    """The placeholder counts a mismatch message's feature figure can mean: the features themselves, or, where the
    model prints the features' numel over a flattened [features, hidden] (LLaVA), that over the hidden size."""
    out = [made] if made > 0 else []
    if hidden and made > hidden and made % hidden == 0:
        out.append(made // hidden)
    return out


def check_inputs(torch, family: str, config, class_name: str = "", accepted=None) -> None:
    """Raise IncompleteConfig when the config lacks what the family's inputs need (a dry build)."""
    build_inputs(torch, family, config, set(accepted or ()), 8, 2, 0, class_name)


def generate_inputs(family: str, inputs: dict) -> dict:
    """The subset of forward inputs that generate() takes as the prompt."""
    if family in ("causal-lm", "seq2seq"):
        return {"input_ids": inputs["input_ids"]}
    if family == "speech-seq2seq":
        return {"input_features": inputs["input_features"]}
    if FAMILY_GENERATES.get(family):
        return {k: v for k, v in inputs.items() if k not in ("use_cache", "decoder_input_ids")}
    return {}


# --- real inputs (full mode) ------------------------------------------------

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "input_files.json"), encoding="utf-8") as _fh:
    TABLE = json.load(_fh)

# The Gettysburg Address (Abraham Lincoln, 1863; the Bliss copy), in the public domain.
PASSAGE = (
    "Four score and seven years ago our fathers brought forth on this continent, a new nation, conceived in "
    "Liberty, and dedicated to the proposition that all men are created equal.\n\n"
    "Now we are engaged in a great civil war, testing whether that nation, or any nation so conceived and so "
    "dedicated, can long endure. We are met on a great battle-field of that war. We have come to dedicate a "
    "portion of that field, as a final resting place for those who here gave their lives that that nation might "
    "live. It is altogether fitting and proper that we should do this.\n\n"
    "But, in a larger sense, we can not dedicate -- we can not consecrate -- we can not hallow -- this ground. The "
    "brave men, living and dead, who struggled here, have consecrated it, far above our poor power to add or "
    "detract. The world will little note, nor long remember what we say here, but it can never forget what they "
    "did here. It is for us the living, rather, to be dedicated here to the unfinished work which they who fought "
    "here have thus far so nobly advanced. It is rather for us to be here dedicated to the great task remaining "
    "before us -- that from these honored dead we take increased devotion to that cause for which they gave the "
    "last full measure of devotion -- that we here highly resolve that these dead shall not have died in vain -- "
    "that this nation, under God, shall have a new birth of freedom -- and that government of the people, by the "
    "people, for the people, shall not perish from the earth."
)
PROMPT = "The capital of France is"
# Zero-shot image classification: the candidate labels the fixed picture is scored against.
LABELS = ("a photo of a cat", "a photo of a dog", "a diagram of shapes")
# Text-prompted segmentation (CLIPSeg): what to segment in the fixed picture.
PROMPTED_SEGMENT = ("a photo of a cat",)
# Audio-text models (CLAP): the candidate labels the fixed tone is scored against.
AUDIO_LABELS = ("a pure tone", "a dog barking", "people talking")
# Vision-language models: the question asked about the fixed picture (after the processor's image tokens).
VLM_PROMPT = "What is shown in this picture?"

PASSAGE_PPL_MAX = 100.0  # a pass needs the device's perplexity on the passage below this
# The device's passage perplexity may differ from the float32 CPU reference's by this fraction.
PASSAGE_PPL_RTOL = {"float32": 1e-3, "float16": 0.05, "bfloat16": 0.1}
# The passage check's key when the float32 CPU reference misses the bound too: the passage (the harness's choice of
# English text) is what the model does not predict, not a verdict on the target (harness.py raises SharedFailure).
REFERENCE_TOO_KEY = "passage perplexity of the model itself"
CONTINUATION_MAX_CHARS = 2000  # a guard on the result file; the scanner keeps 2048 bytes

TEXT_KEYS = frozenset({"input_ids", "token_type_ids", "attention_mask", "decoder_input_ids"})
IMAGE_KEYS = frozenset({"pixel_values", "pixel_mask"})
# Input files that are not the tokenizer's: a problem with one of them leaves the tokenizer alone.
IMAGE_FILES = frozenset({"preprocessor_config.json", "processor_config.json"})
NOT_TOKENIZER = IMAGE_FILES | {"generation_config.json", "chat_template.json", "chat_template.jinja"}

AUDIO_KEYS = frozenset({"input_values", "input_features", "attention_mask"})
TONE_HZ = 440.0  # the synthetic waveform: a pure tone at half amplitude

IMAGE_SIZE = (240, 320)  # (height, width) of the synthetic picture: 4:3, so processors resize and crop


class InputProblem(Exception):
    """Real inputs cannot be built; the probe runs the synthetic ones and notes why."""


def input_cap(name: str) -> int | None:
    """The cap of an input file of input_files.json, None when name is not one (top-level, exact names)."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None
    for kind in TABLE["kinds"]:
        if name in kind.get("names", ()):
            return int(kind["max_bytes"])
        for suffix in kind.get("suffixes", ()):
            if name.endswith(suffix) and len(name) > len(suffix):
                return int(kind["max_bytes"])
    return None


@dataclass
class Inputs:
    """What the forward stage runs: tensors, facts about them, and where they came from."""

    tensors: dict
    info: dict
    note: str
    source: str = "synthetic"  # "passage", "image", "contrastive", "prompted-image", "audio-text", "vlm", "audio" or "synthetic"
    tokenizer: object = None
    problems: list = field(default_factory=list)


class Vetted:
    """A private folder holding links to the snapshot's input files that are within their caps
    (plus config.json), so transformers sees nothing else; removed on close."""

    def __init__(self, model_dir: str):
        self.dir = tempfile.mkdtemp(prefix="harness-inputs-")
        self.present: set[str] = set()
        self.refused: dict[str, str] = {}
        try:
            names = sorted(os.listdir(model_dir))
        except OSError:
            names = []
        for name in names:
            cap = input_cap(name)
            if cap is None and name != "config.json":
                continue
            path = os.path.realpath(os.path.join(model_dir, name))
            if not os.path.isfile(path):
                if cap is not None:
                    self.refused[name] = "not a regular file"
                continue
            size = os.path.getsize(path)
            if cap is not None and size > cap:
                self.refused[name] = f"{name} is {size} bytes, over its {cap}-byte cap"
                continue
            os.symlink(path, os.path.join(self.dir, name))
            if cap is not None:
                self.present.add(name)

    def problems(self, exclude=frozenset(), only=None) -> list[str]:
        return [why for name, why in sorted(self.refused.items())
                if name not in exclude and (only is None or name in only)]

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def short(e: BaseException, limit: int = 240) -> str:
    text = f"{type(e).__name__}: {e}".strip().replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def load_tokenizer(vetted: Vetted):
    """The model's own tokenizer from the vetted files; InputProblem when there is none."""
    refused = vetted.problems(exclude=NOT_TOKENIZER)
    if refused:
        raise InputProblem("tokenizer files refused: " + "; ".join(refused))
    if not (vetted.present - NOT_TOKENIZER):
        raise InputProblem("no tokenizer files in the snapshot")
    try:
        import transformers

        with _quiet_transformers(transformers):
            tok = transformers.AutoTokenizer.from_pretrained(vetted.dir, local_files_only=True, trust_remote_code=False)
    except Exception as e:  # noqa: BLE001 - any problem with the files means synthetic inputs
        raise InputProblem(f"tokenizer not loadable: {short(e)}") from e
    if not callable(tok):
        raise InputProblem(f"tokenizer not usable: {type(tok).__name__}")
    return tok


def load_image_processor(vetted: Vetted):
    """The model's own image processor from the vetted files; InputProblem when there is none."""
    refused = vetted.problems(only=IMAGE_FILES)
    if refused:
        raise InputProblem("processor files refused: " + "; ".join(refused))
    if not (vetted.present & IMAGE_FILES):
        raise InputProblem("no image processor files in the snapshot")
    return _from_pretrained("AutoImageProcessor", "image processor", vetted)


def load_feature_extractor(vetted: Vetted):
    """The model's own audio feature extractor (preprocessor_config.json); InputProblem when there is none."""
    name = "preprocessor_config.json"
    if name in vetted.refused:
        raise InputProblem("feature extractor file refused: " + vetted.refused[name])
    if name not in vetted.present:
        raise InputProblem("no feature extractor file in the snapshot")
    return _from_pretrained("AutoFeatureExtractor", "feature extractor", vetted)


def load_processor(vetted: Vetted, part: str = "image_processor"):
    """The model's own multimodal processor (tokenizer plus image processor, or with part "feature_extractor" plus
    audio feature extractor; AutoProcessor) from the vetted files; InputProblem when any input file was refused or
    the processor lacks either part."""
    refused = vetted.problems()
    if refused:
        raise InputProblem("processor files refused: " + "; ".join(refused))
    if not (vetted.present & IMAGE_FILES):
        raise InputProblem("no processor files in the snapshot")
    if not (vetted.present - NOT_TOKENIZER):
        raise InputProblem("no tokenizer files in the snapshot")
    proc = _from_pretrained("AutoProcessor", "processor", vetted)
    if getattr(proc, "tokenizer", None) is None or getattr(proc, part, None) is None:
        raise InputProblem(f"the processor ({type(proc).__name__}) lacks a tokenizer or an "
                           f"{part.replace('_', ' ')}")
    return proc


def _from_pretrained(auto: str, what: str, vetted: Vetted):
    """transformers.<auto>.from_pretrained on the vetted folder (never remote code); InputProblem on failure."""
    try:
        import transformers

        with _quiet_transformers(transformers):
            return getattr(transformers, auto).from_pretrained(vetted.dir, local_files_only=True,
                                                               trust_remote_code=False)
    except ImportError as e:
        raise InputProblem(f"the {what} needs a package this environment lacks: {short(e, 160)}") from e
    except Exception as e:  # noqa: BLE001 - any problem with the files means synthetic inputs
        raise InputProblem(f"{what} not loadable: {short(e)}") from e


@contextlib.contextmanager
def _quiet_transformers(transformers):
    """transformers' warnings about the files go to stderr, not into the result."""
    try:
        level = transformers.utils.logging.get_verbosity()
        transformers.utils.logging.set_verbosity_error()
    except Exception:  # noqa: BLE001
        level = None
    try:
        yield
    finally:
        if level is not None:
            with contextlib.suppress(Exception):
                transformers.utils.logging.set_verbosity(level)


def text_vocab_size(config) -> int | None:
    cfg = config
    if hasattr(config, "get_text_config"):
        with contextlib.suppress(Exception):
            cfg = config.get_text_config(decoder=True)
    size = getattr(cfg, "vocab_size", None)
    return size if isinstance(size, int) and size > 0 else None


def token_ids(tok, text: str, config, max_length: int | None = None) -> list[int]:
    """text as the tokenizer's ids (special tokens as the tokenizer adds them), checked against the
    model's vocabulary: an id the embedding table cannot take is an InputProblem, not a model failure."""
    try:
        kw = {"truncation": True, "max_length": max_length} if max_length else {}
        ids = tok(text, **kw)["input_ids"]
    except Exception as e:  # noqa: BLE001
        raise InputProblem(f"tokenizer failed on the passage: {short(e)}") from e
    if ids and isinstance(ids[0], list):
        ids = ids[0]
    ids = [int(i) for i in ids]
    if len(ids) < 2:
        raise InputProblem(f"the tokenizer made {len(ids)} token(s) of the text")
    check_vocab(ids, config)
    return ids


def check_vocab(ids, config) -> None:
    """InputProblem when a token id is one the model's embedding table cannot take."""
    vocab = text_vocab_size(config)
    if vocab is not None and ids and (max(ids) >= vocab or min(ids) < 0):
        raise InputProblem(f"the tokenizer's ids reach {max(ids)}, outside the model's vocab_size {vocab}")


def passage_inputs(torch, tok, config, synthetic: dict, info: dict) -> tuple[dict, dict, str]:
    """The synthetic text inputs with the passage's tokens in their place, at the same static length."""
    syn = synthetic["input_ids"]
    if syn.dim() != 2 or syn.shape[0] != 1:
        raise InputProblem(f"input_ids of shape {list(syn.shape)}: the passage fills [1, length] only")
    n = int(syn.shape[1])
    total = len(token_ids(tok, PASSAGE, config))
    ids = torch.tensor([token_ids(tok, PASSAGE, config, max_length=n)], dtype=syn.dtype)
    out = dict(synthetic)
    out["input_ids"] = ids
    if "token_type_ids" in synthetic:
        if bool(synthetic["token_type_ids"].any()):
            raise InputProblem("the synthetic inputs use token types the passage cannot fill")
        out["token_type_ids"] = torch.zeros_like(ids)
    if "attention_mask" in synthetic:
        out["attention_mask"] = torch.ones_like(ids)
    if "decoder_input_ids" in synthetic:
        dec = synthetic["decoder_input_ids"]
        d = min(int(dec.shape[1]), ids.shape[1] + 1)
        out["decoder_input_ids"] = torch.cat([dec[:, :1], ids[:, : d - 1]], dim=1)
    info = dict(info, seq_len=int(ids.shape[1]), copy_from=None, passage=True, passage_tokens=total)
    name = type(tok).__name__
    return out, info, f"the passage, {ids.shape[1]} of its {total} tokens, by the model's tokenizer ({name})"


def synthetic_image(height: int = IMAGE_SIZE[0], width: int = IMAGE_SIZE[1]):
    """A fixed RGB picture (uint8, height x width x 3), computed: gradients, a disc and a checkerboard."""
    import numpy as np

    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    r = 255 * x / max(width - 1, 1)
    g = 255 * y / max(height - 1, 1)
    disc = ((x - 0.6 * width) ** 2 + (y - 0.45 * height) ** 2) < (0.25 * min(height, width)) ** 2
    checker = ((x // 20 + y // 20) % 2).astype(np.float32)
    b = np.where(disc, 230.0, 60.0 + 100.0 * checker)
    return np.stack([r, g, b], axis=-1).round().clip(0, 255).astype(np.uint8)


def image_inputs(torch, proc, synthetic: dict, info: dict) -> tuple[dict, dict, str]:
    """The synthetic image inputs replaced by the processor's output for synthetic_image()."""
    img = synthetic_image()
    try:
        got = proc(images=img, return_tensors="pt")
    except Exception as e:  # noqa: BLE001
        raise InputProblem(f"the image processor failed on the picture: {short(e)}") from e
    pv = got.get("pixel_values") if hasattr(got, "get") else None
    check_pixels(pv, synthetic["pixel_values"], "image processor")
    out = dict(synthetic)
    for key in IMAGE_KEYS & set(synthetic):
        val = got.get(key)
        if val is None:
            raise InputProblem(f"the image processor made no {key}")
        out[key] = val.float() if key == "pixel_values" else val
    info = dict(info, image=list(pv.shape[1:]), processed_image=True)
    h, w = IMAGE_SIZE
    return out, info, (f"a synthetic {w}x{h} picture through the model's image processor "
                       f"({type(proc).__name__}) -> pixel_values {list(pv.shape)}")


def check_pixels(pv, syn, who: str) -> None:
    """InputProblem unless the processor's pixel_values have the synthetic ones' layout: as many dimensions,
    the same batch and channels for images ([.., C, H, W]), the same patch width for flattened patches."""
    ok = hasattr(pv, "dim") and pv.dim() == syn.dim()
    if ok and pv.dim() <= 3:
        ok = pv.shape[-1] == syn.shape[-1]
    elif ok:
        ok = pv.shape[0] == syn.shape[0] and pv.shape[-3] == syn.shape[-3]
    if not ok:
        shape = list(pv.shape) if hasattr(pv, "shape") else type(pv).__name__
        raise InputProblem(f"the {who} made pixel_values {shape}; the model takes {list(syn.shape)}")


def tensor_keys(inputs: dict) -> set[str]:
    return {k for k, v in inputs.items() if hasattr(v, "shape")}


def label_ids(ids, rows: int, n: int, config, what: str):
    """The [rows, n] input_ids a tokenizer or processor made of fixed texts, as int64; InputProblem (what, with {}
    for the shape it made) unless of that shape and within the model's vocabulary."""
    if not hasattr(ids, "shape") or list(ids.shape) != [rows, n]:
        shape = list(ids.shape) if hasattr(ids, "shape") else type(ids).__name__
        raise InputProblem(what.format(shape) + f", not [{rows}, {n}]")
    check_vocab([int(i) for i in ids.reshape(-1).tolist()], config)
    return ids.long()


def label_mask(torch, mask, ids):
    """The attention mask the tokenizer made for ids, else all ones."""
    return mask.long() if hasattr(mask, "shape") and mask.shape == ids.shape else torch.ones_like(ids)


def contrastive_inputs(torch, proc, config, synthetic: dict, info: dict, texts=LABELS) -> tuple[dict, dict, str]:
    """The fixed picture and texts (LABELS: zero-shot classification; one PROMPTED_SEGMENT: a text-prompted
    segmenter) through the model's processor, the texts padded to the synthetic length."""
    n = int(synthetic["input_ids"].shape[1])
    what = f"{len(texts)} fixed labels" if len(texts) > 1 else "a fixed prompt"
    try:
        got = proc(text=list(texts), images=synthetic_image(), padding="max_length", max_length=n, truncation=True,
                   return_tensors="pt")
    except Exception as e:  # noqa: BLE001
        raise InputProblem(f"the processor failed on the picture and {what}: {short(e)}") from e
    ids = label_ids(got.get("input_ids"), len(texts), n, config, f"the processor made input_ids {{}} of {what}")
    pv = got.get("pixel_values")
    check_pixels(pv, synthetic["pixel_values"], "processor")
    out = dict(synthetic, input_ids=ids, pixel_values=pv.float())
    if "attention_mask" in synthetic:
        out["attention_mask"] = label_mask(torch, got.get("attention_mask"), ids)
    info = dict(info, labels=len(texts), label_texts=list(texts), image=list(pv.shape[1:]), processed_image=True)
    h, w = IMAGE_SIZE
    return out, info, (f"a synthetic {w}x{h} picture and {what} through the model's processor "
                       f"({type(proc).__name__}) -> input_ids {list(ids.shape)}, pixel_values {list(pv.shape)}")


def audio_text_inputs(torch, proc, config, synthetic: dict, info: dict) -> tuple[dict, dict, str]:
    """CLAP: the fixed tone (1 s at the feature extractor's rate) through the model's own feature extractor
    (input_features, is_longer), and AUDIO_LABELS through its own tokenizer, padded to the synthetic length. The
    features must have the synthetic ones' layout: as many fused views and mel bins, at most as many frames (the
    longest clip the audio tower takes)."""
    fe, tok = proc.feature_extractor, proc.tokenizer
    rate = getattr(fe, "sampling_rate", None)
    if not isinstance(rate, int) or rate <= 0:
        raise InputProblem(f"the feature extractor names no sampling rate ({rate!r})")
    n = int(synthetic["input_ids"].shape[1])
    try:
        text = tok(list(AUDIO_LABELS), padding="max_length", max_length=n, truncation=True, return_tensors="pt")
        got = fe(synthetic_tone(rate, rate), sampling_rate=rate, return_tensors="pt")
    except Exception as e:  # noqa: BLE001
        raise InputProblem(f"the processor failed on the tone and labels: {short(e)}") from e
    ids = label_ids(text.get("input_ids"), len(AUDIO_LABELS), n, config, "the tokenizer made input_ids {} of the labels")
    feats = got.get("input_features")
    syn = synthetic["input_features"]
    if not hasattr(feats, "shape") or feats.dim() != syn.dim() or feats.shape[:2] != syn.shape[:2] or \
            feats.shape[-1] != syn.shape[-1] or feats.shape[-2] > syn.shape[-2]:
        shape = list(feats.shape) if hasattr(feats, "shape") else type(feats).__name__
        raise InputProblem(f"the feature extractor made input_features {shape}; the model takes {list(syn.shape[:2])} "
                           f"views of at most {syn.shape[-2]} frames of {syn.shape[-1]} mel bins")
    out = dict(synthetic, input_ids=ids, input_features=feats.float())
    if "attention_mask" in synthetic:
        out["attention_mask"] = label_mask(torch, text.get("attention_mask"), ids)
    if "is_longer" in synthetic:
        longer = got.get("is_longer")
        out["is_longer"] = longer.bool().reshape(1, 1) if hasattr(longer, "shape") and longer.numel() == 1 else \
            synthetic["is_longer"]
    info = dict(info, labels=len(AUDIO_LABELS), label_texts=list(AUDIO_LABELS), tone_hz=TONE_HZ, sampling_rate=rate,
                audio=list(feats.shape[1:]))
    return out, info, (f"a {TONE_HZ:g} Hz tone, {rate} samples at {rate} Hz, through the model's feature extractor "
                       f"({type(fe).__name__}) -> input_features {list(feats.shape)}, and {len(AUDIO_LABELS)} fixed "
                       f"labels through its tokenizer ({type(tok).__name__}) -> input_ids {list(ids.shape)}")


def vlm_text(proc, config) -> str:
    """VLM_PROMPT with the picture's place: by the processor's chat template, or after its image token."""
    if getattr(proc, "chat_template", None):
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": VLM_PROMPT}]}]
        try:
            text = proc.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        except Exception as e:  # noqa: BLE001
            raise InputProblem(f"the processor's chat template failed: {short(e)}") from e
        text = text[0] if isinstance(text, list) and text else text
        if not isinstance(text, str) or not text:
            raise InputProblem("the processor's chat template wrote no text")
        return text
    if placeholder(config, "image") is None:  # the picture is not in the text (BLIP, ViLT)
        return VLM_PROMPT
    token = getattr(proc, "image_token", None)
    if not isinstance(token, str) or not token:
        raise InputProblem("the processor has no chat template and names no image token")
    return f"{token}\n{VLM_PROMPT}"


def vlm_inputs(torch, proc, config, synthetic: dict, info: dict, accepted, reserve: int) -> tuple[dict, dict, str]:
    """The fixed picture and VLM_PROMPT through the model's processor (which expands the image tokens)."""
    if "decoder_input_ids" in synthetic:
        raise InputProblem("real inputs are built for decoder-only vision-language models")
    try:
        got = proc(images=synthetic_image(), text=vlm_text(proc, config), return_tensors="pt")
    except Exception as e:  # noqa: BLE001
        raise InputProblem(f"the processor failed on the picture and prompt: {short(e)}") from e
    made = {k: v for k, v in got.items() if hasattr(v, "shape")}
    missing = tensor_keys(synthetic) - set(made)
    if missing:
        raise InputProblem(f"the processor made no {', '.join(sorted(missing))}")
    check_pixels(made["pixel_values"], synthetic["pixel_values"], "processor")
    ids = made["input_ids"]
    if ids.dim() != 2 or ids.shape[0] != 1:
        raise InputProblem(f"the processor made input_ids {list(ids.shape)}, not [1, length]")
    check_vocab([int(i) for i in ids[0].tolist()], config)
    limit = max_positions(text_config(config))
    if limit and ids.shape[1] + reserve > limit:
        raise InputProblem(f"the prompt is {ids.shape[1]} tokens; the model takes {limit} with {reserve} to generate")
    n_image = _image_tokens(ids, config, made, synthetic, info)
    out = {k: v for k, v in synthetic.items() if not hasattr(v, "shape")}  # use_cache and the like
    for key, val in made.items():
        if key in synthetic or key in (accepted or ()):
            out[key] = val.float() if val.is_floating_point() else val
    info = dict(info, seq_len=int(ids.shape[1]), image_tokens=n_image, prompt=VLM_PROMPT, processed_image=True)
    h, w = IMAGE_SIZE
    return out, info, (f"a synthetic {w}x{h} picture and a fixed prompt through the model's processor "
                       f"({type(proc).__name__}) -> input_ids {list(ids.shape)} with {n_image} image tokens, "
                       f"pixel_values {list(made['pixel_values'].shape)}")


def _image_tokens(ids, config, made: dict, synthetic: dict, info: dict) -> int:
    """How many image placeholders the processor wrote; InputProblem when none where the model needs them, or
    (for pixels shaped as the synthetic ones) not as many as the model's own count for one image."""
    token = placeholder(config, "image")
    if token is None:
        return 0
    n = int((ids == token).sum())
    if n == 0:
        raise InputProblem(f"the processor wrote no image token (id {token}) into the prompt")
    same = all(made[k].shape == v.shape for k, v in synthetic.items() if hasattr(v, "shape") and k in made
               and k.startswith("pixel_values"))
    want = info.get("image_tokens")
    if same and want and n != want:
        raise InputProblem(f"the processor wrote {n} image tokens; the model fills {want} for this picture")
    return n


def synthetic_tone(samples: int, rate: int):
    """A fixed waveform: TONE_HZ at half amplitude, samples long at rate Hz (float32)."""
    import numpy as np

    t = np.arange(samples, dtype=np.float64) / rate
    return (0.5 * np.sin(2 * np.pi * TONE_HZ * t)).astype(np.float32)


def audio_inputs(torch, fe, synthetic: dict, info: dict) -> tuple[dict, dict, str]:
    """The synthetic audio inputs replaced by the feature extractor's output for a fixed tone at its sampling
    rate, as long as the synthetic clip (1 s at 16 kHz): the static shape must come out the same."""
    rate = getattr(fe, "sampling_rate", None)
    if not isinstance(rate, int) or rate <= 0:
        raise InputProblem(f"the feature extractor names no sampling rate ({rate!r})")
    key = "input_values" if "input_values" in synthetic else "input_features"
    syn = synthetic[key]
    samples = int(syn.shape[-1]) if key == "input_values" and syn.dim() == 2 else rate
    try:
        got = fe(synthetic_tone(samples, rate), sampling_rate=rate, return_tensors="pt")
    except Exception as e:  # noqa: BLE001
        raise InputProblem(f"the feature extractor failed on the tone: {short(e)}") from e
    val = got.get(key) if hasattr(got, "get") else None
    if not hasattr(val, "shape") or val.shape != syn.shape:
        shape = list(val.shape) if hasattr(val, "shape") else type(val).__name__
        raise InputProblem(f"the feature extractor made {key} {shape}; the model takes {list(syn.shape)}")
    out = dict(synthetic)
    out[key] = val.float()
    info = dict(info, tone_hz=TONE_HZ, tone_samples=samples, sampling_rate=rate)
    return out, info, (f"a {TONE_HZ:g} Hz tone, {samples} samples at {rate} Hz, through the model's feature "
                       f"extractor ({type(fe).__name__}) -> {key} {list(val.shape)}")


def _real_kind(family: str, keys: set[str]) -> str | None:
    """Which real inputs a family's synthetic inputs can be replaced by (None: none yet)."""
    if family == "contrastive":
        return "contrastive" if {"input_ids", "pixel_values"} <= keys <= TEXT_KEYS | IMAGE_KEYS else None
    if family == "audio-contrastive":
        return "audio-text" if {"input_ids", "input_features"} <= keys <= TEXT_KEYS | AUDIO_KEYS | {"is_longer"} else None
    if family in ("segmentation", "detection", "depth") and {"input_ids", "pixel_values"} <= keys <= TEXT_KEYS | IMAGE_KEYS:
        return "prompted-image"
    if family == "vlm":
        return "vlm" if {"input_ids", "pixel_values"} <= keys else None
    if family in ("speech-ctc", "speech-encoder"):
        return "audio" if keys <= AUDIO_KEYS and keys & {"input_values", "input_features"} else None
    if "input_ids" in keys and keys <= TEXT_KEYS:
        return "text"
    if "pixel_values" in keys and keys <= IMAGE_KEYS:
        return "image"
    return None


def build(torch, family: str, config, model_dir: str, mode: str, synthetic: dict, info: dict,
          accepted=None, reserve: int = 0) -> Inputs:
    """The forward inputs: real ones in full mode where the model's files allow, else the synthetic ones.

    synthetic/info are build_inputs' answer for this model; the real inputs keep its keys (text keeps its
    static length, the passage truncated to it). accepted: model.forward's parameters (a vision-language
    processor's extra outputs are passed where taken); reserve: tokens generate() adds after the prompt."""
    if mode != "full":
        return Inputs(synthetic, info, "synthetic (arch mode)")
    keys = tensor_keys(synthetic)
    kind = _real_kind(family, keys)
    if kind is None:
        return Inputs(synthetic, info, f"synthetic (inputs {', '.join(sorted(keys))}: real inputs are built for "
                                       "text-only, image-only, zero-shot image classification, text-prompted "
                                       "segmentation, audio-text, vision-language and speech encoder models)")
    vetted = Vetted(model_dir)
    try:
        if kind == "text":
            tok = load_tokenizer(vetted)
            tensors, new_info, note = passage_inputs(torch, tok, config, synthetic, info)
            return Inputs(tensors, new_info, note, "passage", tok)
        if kind == "image":
            proc = load_image_processor(vetted)
            tensors, new_info, note = image_inputs(torch, proc, synthetic, info)
            return Inputs(tensors, new_info, note, "image")
        if kind == "audio":
            tensors, new_info, note = audio_inputs(torch, load_feature_extractor(vetted), synthetic, info)
            return Inputs(tensors, new_info, note, "audio")
        if kind == "audio-text":
            proc = load_processor(vetted, "feature_extractor")
            tensors, new_info, note = audio_text_inputs(torch, proc, config, synthetic, info)
            return Inputs(tensors, new_info, note, kind, proc.tokenizer)
        proc = load_processor(vetted)
        if kind == "contrastive":
            tensors, new_info, note = contrastive_inputs(torch, proc, config, synthetic, info)
        elif kind == "prompted-image":
            tensors, new_info, note = contrastive_inputs(torch, proc, config, synthetic, info, PROMPTED_SEGMENT)
        else:
            tensors, new_info, note = vlm_inputs(torch, proc, config, synthetic, info, accepted, reserve)
        return Inputs(tensors, new_info, note, kind, proc.tokenizer)
    except InputProblem as e:
        return Inputs(synthetic, info, f"synthetic ({e})", problems=[str(e)])
    finally:
        vetted.close()


def prompt_ids(torch, tok, config):
    """The fixed prompt as a [1, P] tensor of the tokenizer's ids; None when it cannot be encoded."""
    try:
        return torch.tensor([token_ids(tok, PROMPT, config)])
    except InputProblem:
        return None


def continuation(tok, sequences, prompt_len: int) -> dict | None:
    """{"prompt", "text"}: what generate() wrote after the prompt, decoded; None when nothing."""
    try:
        new = [int(i) for i in sequences[0, prompt_len:].tolist()]
        text = tok.decode(new, skip_special_tokens=True)
    except Exception:  # noqa: BLE001 - a tokenizer that cannot decode leaves the result without it
        return None
    if not isinstance(text, str) or not text:
        return None
    return {"prompt": PROMPT, "text": text[:CONTINUATION_MAX_CHARS]}


def perplexity(torch, logits, ids) -> float | None:
    """exp of the mean next-token cross-entropy over the whole sequence (TorchTPU's coverage tests' way)."""
    if logits.dim() != 3 or ids.dim() != 2 or ids.shape[1] < 2 or logits.shape[1] != ids.shape[1]:
        return None
    lp = torch.log_softmax(logits[0, :-1].float(), dim=-1)
    nll = -lp.gather(-1, ids[0, 1:].unsqueeze(-1)).squeeze(-1).mean()
    return float(torch.exp(nll))


@dataclass
class PassageCheck:
    ppl: float | None
    ref_ppl: float | None
    ok: bool
    why: str
    key: str
    note: str


def passage_check(torch, dev_logits, ref_logits, ids, dtype_name: str) -> PassageCheck:
    """The full-mode rule for causal LMs on the passage: the device's perplexity below
    PASSAGE_PPL_MAX and within PASSAGE_PPL_RTOL of the float32 CPU reference's."""
    ppl = perplexity(torch, dev_logits, ids)
    ref = perplexity(torch, ref_logits, ids) if ref_logits.shape == dev_logits.shape else None
    rtol = PASSAGE_PPL_RTOL.get(dtype_name, PASSAGE_PPL_RTOL["float32"])
    note = (f"perplexity {_g(ppl)} on the passage (float32 cpu reference {_g(ref)}); a pass needs < "
            f"{PASSAGE_PPL_MAX:g} and within {rtol:g} of the reference")
    ok, why, key = verdict(ppl, ref, rtol)
    return PassageCheck(ppl, ref, ok, why, key, note)


def verdict(ppl, ref, rtol: float) -> tuple[bool, str, str]:
    """(ok, why, signature key) of a passage perplexity against the bound and the reference."""
    if ppl is None or not math.isfinite(ppl):
        return False, f"perplexity on the passage is {_g(ppl)}, not a finite number", "passage perplexity"
    if ppl >= PASSAGE_PPL_MAX:
        if ref is not None and ref >= PASSAGE_PPL_MAX:
            return False, (f"perplexity {_g(ppl)} on the passage is not below {PASSAGE_PPL_MAX:g}, and the float32 "
                           f"cpu reference's is {_g(ref)}: the model itself (its weights or its tokenizer) does not "
                           "predict English text"), REFERENCE_TOO_KEY
        return False, (f"perplexity {_g(ppl)} on the passage is not below {PASSAGE_PPL_MAX:g} (float32 cpu reference "
                       f"{_g(ref)})"), "passage perplexity"
    if ref is not None and math.isfinite(ref) and abs(ppl - ref) > rtol * ref:
        return False, (f"perplexity {_g(ppl)} on the passage is off the float32 cpu reference's {_g(ref)} by more "
                       f"than {rtol:g}"), "passage perplexity vs reference"
    return True, "", ""


def _g(x) -> str:
    return "n/a" if x is None else f"{x:.4g}"
