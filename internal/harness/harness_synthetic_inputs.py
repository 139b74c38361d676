"""The synthetic forward inputs of a probe, per task family, built from the config alone (every mode;
in full mode harness_real_inputs.build can replace them with the model's own tokenizer and processor's).

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
leaves an optional vision tower out (transformers builds the model without it) gets its text alone;
[1, tiles, C, H, W] with pixel_attention_mask for Idefics/SmolVLM; [1, patches, C, H, W] with image_sizes for
LLaVA-NeXT (anyres); patches with
spatial_shapes for SigLIP 2. A field the inputs need that the config lacks raises
IncompleteConfig naming it (the harness fails the model at config with config_error).

The builders take only (config, family, shapes); in full mode harness_real_inputs.build can replace their answer.
"""

from __future__ import annotations

import inspect
import json
import os
import re

from harness_inputs import IncompleteConfig, as_int, get, max_positions, placeholder, text_config

TEXT_FAMILIES = ("causal-lm", "text-encoder", "seq2seq")
VIDEO_FRAMES = 4
AUDIO_SAMPLES = 16000
# BERT-style learned positions with a padding offset (RoBERTa: padding_idx + 1)
_OFFSET_POSITIONS = ("roberta", "xlm-roberta", "camembert", "longformer", "mpnet", "ibert", "layoutlmv3",
                     "xlm-roberta-xl", "bart", "mbart")


def need_int(config, key: str, where: str = "", minimum: int = 1) -> int:
    """config.key as an int >= minimum, else IncompleteConfig naming where.key."""
    val = get(config, key)
    name = f"{where}.{key}" if where else key
    if val is None:
        raise IncompleteConfig(name)
    if as_int(val) is None or val < minimum:
        raise IncompleteConfig(name, f"is {val!r}, not an integer >= {minimum}")
    return val


def sub_config(config, *keys, required: str = ""):
    """The first present sub-config among keys (an object); IncompleteConfig(required) when none is."""
    for key in keys:
        val = get(config, key)
        if val is not None and not isinstance(val, (int, float, str, bool, list, tuple)):
            return key, val
    if required:
        raise IncompleteConfig(required)
    return "", None


# --- text ------------------------------------------------------------------------


def text_length(config, seq_len: int, reserve: int = 0) -> int:
    """The static text length: --seq-len, clamped so that seq + reserve fits the position table."""
    mp = max_positions(config)
    n = seq_len
    if mp:
        n = min(n, mp - reserve)
        if get(config, "model_type") in _OFFSET_POSITIONS:
            n = min(n, mp - 2 - reserve)
    return max(2, n)


def token_range(config) -> tuple[int, int]:
    vocab = get(config, "vocab_size") or 32000
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
        val = get(config, key)
        if isinstance(val, int):
            return val
    return 0


def _special(config, *keys):
    for key in keys:
        val = get(config, key)
        if isinstance(val, (list, tuple)) and val:
            val = val[0]
        if as_int(val) is not None and 0 <= val < (get(config, "vocab_size") or 0):
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
                out.update(v for v in vals if as_int(v) is not None)
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
    if family == "text-encoder" and ctx.takes("token_type_ids") and (get(config, "type_vocab_size") or 0) > 0:
        inputs["token_type_ids"] = torch.zeros_like(ids)
    if family == "seq2seq" or (family == "text-encoder" and get(config, "is_encoder_decoder")
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
    if ctx.takes("token_type_ids") and (get(config, "type_vocab_size") or 0) > 0:
        inputs["token_type_ids"] = torch.zeros_like(ids)
    ctx.info.update(seq_len=n, choices=2)
    return inputs


def _table_qa(ctx: Ctx) -> dict:
    torch, config = ctx.torch, ctx.config
    n = text_length(config, ctx.seq_len)
    ids, _ = random_text(torch, ctx.gen, config, n, special_ids(config))
    sizes = list(get(config, "type_vocab_sizes") or [3, 256, 256, 2, 256, 256, 10])
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
    mt = get(config, "model_type") or ""
    if mt in ("timesfm", "timesfm2_5"):
        ctx_len = min(ctx.seq_len * 4, get(config, "context_length") or 512)
        patch = get(config, "patch_length") or 32
        ctx_len = max(patch, ctx_len // patch * patch)
        t = torch.arange(ctx_len, dtype=torch.float32)
        series = torch.sin(t / 8.0) + 0.1 * ctx.randn(ctx_len)
        ctx.info.update(context=ctx_len)
        inputs = {"past_values": series.unsqueeze(0)}
        if ctx.takes("freq"):
            inputs["freq"] = torch.zeros(1, dtype=torch.long)
        return inputs
    context = need_int(config, "context_length")
    channels = get(config, "num_input_channels")
    if as_int(channels) is None:
        channels = get(config, "input_size") or 1
    lags = list(get(config, "lags_sequence") or [])
    past = context + (max(lags) if lags else 0)
    t = torch.arange(past, dtype=torch.float32)
    shape = (1, past, channels) if (channels > 1 or mt in ("patchtst", "patchtsmixer")) else (1, past)
    base = torch.sin(t / 8.0).reshape(1, past, *([1] * (len(shape) - 2)))
    values = base.expand(*shape) + 0.1 * ctx.randn(*shape)
    inputs = {"past_values": values}
    ctx.info.update(context=context, channels=channels)
    if ctx.takes("past_time_features"):
        nt = get(config, "num_time_features") or 0
        pred = need_int(config, "prediction_length")
        inputs["past_time_features"] = ctx.randn(1, past, nt)
        inputs["past_observed_mask"] = torch.ones(*shape)
        if (get(config, "num_static_categorical_features") or 0) > 0:
            inputs["static_categorical_features"] = torch.zeros(1, get(config, "num_static_categorical_features"),
                                                                dtype=torch.long)
        if (get(config, "num_static_real_features") or 0) > 0:
            inputs["static_real_features"] = ctx.randn(1, get(config, "num_static_real_features"))
        fshape = (1, pred, channels) if len(shape) == 3 else (1, pred)
        inputs["future_values"] = ctx.randn(*fshape)
        inputs["future_time_features"] = ctx.randn(1, pred, nt)
        ctx.info["prediction_length"] = pred
    return inputs


def _decision(ctx: Ctx) -> dict:
    torch, config = ctx.torch, ctx.config
    state_dim = need_int(config, "state_dim")
    act_dim = need_int(config, "act_dim")
    t = min(20, get(config, "max_ep_len") or 20)
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
            size = get(config, key)
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
    if as_int(h) is None or as_int(w) is None or h < 1 or w < 1:
        raise IncompleteConfig(f"{where}.image_size" if where else "image_size", f"is {size!r}, not a size")
    return h, w


def channels(config) -> int:
    for key in ("num_channels", "in_channels", "in_chans", "input_channels"):
        val = as_int(get(config, key))
        if val:
            return val
    return 3


def _backbone_size(config) -> tuple[int, int]:
    """The image size of a detection/segmentation/depth model: its own, its backbone's, else 224."""
    if get(config, "image_size") is not None:
        return image_size(config)
    for key in ("backbone_config", "vision_config", "encoder_config"):
        sub = get(config, key)
        if sub is not None and not isinstance(sub, (str, int)) and get(sub, "image_size") is not None:
            return image_size(sub, key)
    return 224, 224


def _multiple(n: int, k: int) -> int:
    return max(k, (n // k) * k) if k and k > 1 else n


def _pixels(ctx: Ctx, config=None, size=None, where="") -> dict:
    config = ctx.config if config is None else config
    h, w = size or image_size(config, where)
    c = channels(config)
    patch = as_int(get(config, "patch_size"))
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
    window = as_int(get(config, "window_size"))
    if window and window > 1 and ctx.family == "image-to-image":
        h, w = _multiple(h, window), _multiple(w, window)
    inputs = _pixels(ctx, size=(h, w))
    if ctx.takes("task_inputs"):  # OneFormer: the task as text ("the task is semantic")
        n = get(config, "task_seq_len") or 77
        tcfg = get(config, "text_config") or config
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
    frames = as_int(get(config, "num_frames")) or VIDEO_FRAMES
    h, w = image_size(config)
    c = channels(config)
    ctx.info.update(video=[frames, c, h, w])
    return {"pixel_values": ctx.randn(1, frames, c, h, w)}


def _keypoints(ctx: Ctx) -> dict:
    config = ctx.config
    if "Matching" in ctx.class_name or ctx.takes("pixel_values") and get(config, "keypoint_detector_config"):
        h, w = _backbone_size(config)
        h, w = _multiple(min(h, 480), 8), _multiple(min(w, 640), 8)
        ctx.info.update(pair=[2, 3, h, w])
        return {"pixel_values": ctx.randn(1, 2, 3, h, w).clamp(0, 1)}
    h, w = _backbone_size(config)
    inputs = _pixels(ctx, size=(_multiple(h, 8), _multiple(w, 8)))
    inputs["pixel_values"] = inputs["pixel_values"].clamp(0, 1)
    if ctx.takes("dataset_index") and (get(get(config, "backbone_config"), "num_experts") or 1) > 1:
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
    views = 4 if get(acfg, "enable_fusion") else 1
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
    owl = get(config, "model_type") in ("owlvit", "owlv2")
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
    if sub is None and get(config, "image_size") is not None:  # one tower for both (ViLT)
        return "", config
    return key, sub


def _qwen_style(vcfg) -> bool:
    return get(vcfg, "temporal_patch_size") is not None and (
        get(vcfg, "spatial_merge_size") is not None or get(vcfg, "merge_size") is not None)


def _qwen_patches(ctx: Ctx, vcfg, frames: int) -> tuple:
    """Flattened patches of a Qwen-VL-style tower: (pixels, grid_thw)."""
    patch = need_int(vcfg, "patch_size", "vision_config")
    merge = as_int(get(vcfg, "spatial_merge_size")) or need_int(vcfg, "merge_size", "vision_config")
    tp = need_int(vcfg, "temporal_patch_size", "vision_config")
    c = channels(vcfg)
    target = as_int(get(vcfg, "image_size")) or 224
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
    merged = as_int(get(vcfg, "model_patch_size"))
    k = as_int(get(vcfg, "pooling_kernel_size")) or 1
    pixel, unit = (merged, 1) if merged else (patch, k)
    target = as_int(get(vcfg, "image_size")) or 224
    side = unit * max(1, round(target / (pixel * unit)))
    limit = as_int(get(vcfg, "position_embedding_size")) or as_int(get(vcfg, "mm_posemb_size"))
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
    if isinstance(config, dict) or get(config, key) is not None:
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
        pixels, grid = _qwen_patches(ctx, vcfg, frames if video else get(vcfg, "temporal_patch_size"))
        if video:
            return {"pixel_values_videos": pixels, "video_grid_thw": grid}
        return {"pixel_values": pixels, "image_grid_thw": grid}
    if ctx.takes("flattened_patches"):  # Pix2Struct
        patch = get(vcfg, "patch_size") or 16
        n = min(get(vcfg, "seq_len") or 2048, 256)
        dim = (get(vcfg, "patch_embed_hidden_size") or channels(vcfg) * patch * patch) + 2
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
    model_type = get(config, "model_type") or ""
    if get(vcfg, "model_type") == "pixtral":  # any size up to image_size: a 448-pixel image is plenty
        step = (as_int(get(vcfg, "patch_size")) or 14) * (as_int(get(config, "spatial_merge_size")) or 1)
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
    pinpoints = get(config, "image_grid_pinpoints")
    if pinpoints and ctx.takes("image_sizes"):  # LLaVA-NeXT anyres: the base image plus its grid of patches
        from transformers.models.llava_next.modeling_llava_next import image_size_to_num_patches

        size = [int(v) for v in pinpoints[0]]
        n = image_size_to_num_patches(size, pinpoints, h)
        ctx.info.update(image=[n, c, h, w], image_sizes=size)
        return {"pixel_values": ctx.randn(1, n, c, h, w), "image_sizes": torch.tensor([size])}
    out = {"pixel_values": ctx.randn(1, c, h, w)}
    ctx.info.update(image=[c, h, w])
    if ctx.takes("image_sizes") and get(vcfg, "model_type") == "pixtral":
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


def _mm_text(ctx: Ctx, config, tcfg, media: str, n_tokens: int, reserve: int, more=()) -> dict:
    """input_ids [1, n_tokens placeholders (then those of more: (media, n) pairs) + S text] (+ mm_token_type_ids,
    attention_mask)."""
    torch = ctx.torch
    segments = [(m, placeholder(config, m), n) for m, n in [(media, n_tokens), *more]]
    placed = sum(n for _, t, n in segments if t is not None)
    mp = max_positions(tcfg)
    s = ctx.seq_len
    latent = (get(config, "latent_query_num") or 64) if ctx.takes("image_embeds_position_mask") else 0
    s = max(s, latent + 2)  # Kosmos-2: the image's latent queries sit in the text
    if mp:
        s = max(2, min(s, mp - placed - reserve))
    where = "text_config" if get(config, "text_config") is not None else ""
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
        q = get(config, "latent_query_num") or 64
        mask = torch.zeros_like(ids)
        mask[0, 1: 1 + min(q, ids.shape[1] - 1)] = 1
        out["image_embeds_position_mask"] = mask
    if ctx.takes("qformer_input_ids"):  # InstructBLIP: the instruction, for the Q-Former too
        qcfg = get(config, "qformer_config") or tcfg
        q, _ = random_text(torch, ctx.gen, qcfg, 8, special_ids(qcfg))
        out["qformer_input_ids"] = q
        out["qformer_attention_mask"] = torch.ones_like(q)
    return out


def _encoder_decoder(ctx: Ctx, config, tcfg) -> bool:
    return bool(get(config, "is_encoder_decoder") or get(tcfg, "is_encoder_decoder")) or ctx.class_name in (
        "VisionEncoderDecoderModel",)


def _vlm(ctx: Ctx, video: bool = False) -> dict:
    config = ctx.config
    if ctx.family == "retrieval" and get(config, "vlm_config") is not None:
        config = get(config, "vlm_config")
    tcfg = text_config(config)
    if get(config, "model_type") == "vision-encoder-decoder":
        tcfg = get(config, "decoder") or tcfg
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
        dec[0, 0] = decoder_start(config if get(config, "decoder_start_token_id") is not None else tcfg)
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
    mel = get(config, "num_mel_bins") or 80
    frames = 2 * (get(config, "max_source_positions") or 1500)
    d = max(2, min(ctx.new_tokens, (get(config, "max_target_positions") or 448) // 2))
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
    if get(config, "feature_projection_input_dim") is not None:
        bins = need_int(config, "feature_projection_input_dim")
    else:
        if get(config, "num_mel_bins") is None:
            where, sub = sub_config(config, "encoder_config", "audio_config", "encoder")
            cfg = sub if sub is not None else config
        bins = need_int(cfg, "num_mel_bins", where)
    msp = as_int(get(cfg, "max_source_positions"))
    if msp and get(cfg, "is_encoder_decoder") and get(cfg, "num_mel_bins") is not None:  # a Whisper encoder
        frames = 2 * msp
        ctx.info.update(frames=frames, mel=bins)
        return {"input_features": (ctx.randn(1, bins, frames) * 0.5).clamp(-1.5, 1.5)}
    frames = 100  # 1 s of 10 ms filter-bank frames
    ctx.info.update(frames=frames, bins=bins)
    out = {"input_features": ctx.randn(1, frames, bins)}
    if ctx.takes("attention_mask") and get(config, "feature_projection_input_dim") is None:
        out["attention_mask"] = torch.ones(1, frames, dtype=torch.long)
    return out


def _speech(ctx: Ctx) -> dict:
    config = ctx.config
    if ctx.takes("input_features") and not ctx.takes("input_values"):
        return _speech_features(ctx)
    if get(config, "model_type") == "audio-spectrogram-transformer":
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
    per = as_int(get(acfg, "audio_samples_per_token"))
    if per and get(acfg, "num_mel_bins") is None:
        frames = max(1, AUDIO_SAMPLES // per)
        feats = {"input_features": (ctx.randn(1, frames, per) * 0.1).clamp(-1, 1)}
        if ctx.takes("input_features_mask"):  # True = a real frame (the model keeps those by it)
            feats["input_features_mask"] = torch.ones(1, frames, dtype=torch.bool)
        ctx.info.update(frames=frames, samples_per_frame=per)
        return feats, frames
    mel = need_int(acfg, "num_mel_bins", akey)
    frames = 2 * (as_int(get(acfg, "max_source_positions")) or 1500)
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
    tcfg = get(config, "text_encoder") or text_config(config)
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
    dcfg = get(config, "decoder")
    if ctx.takes("decoder_input_ids") and dcfg is not None:  # MusicGen: audio codes, one row per codebook
        books = need_int(dcfg, "num_codebooks", "decoder")
        vocab = need_int(dcfg, "vocab_size", "decoder")
        d = max(2, ctx.new_tokens)
        dec = torch.randint(0, vocab, (books, d), generator=ctx.gen)
        dec[:, 0] = as_int(get(dcfg, "pad_token_id")) if as_int(get(dcfg, "pad_token_id")) is not None else 0
        inputs["decoder_input_ids"] = dec
        ctx.info.update(codebooks=books, decoder_len=d)
    return inputs


def _codec(ctx: Ctx) -> dict:
    """A clip of input_values [1, channels, samples] (up to 1 s, a whole number of hops); a codec with a semantic
    tower too (X-Codec 2: a w2v-BERT reading filter-bank input_features) gets its features, one frame per hop."""
    config = ctx.config
    rate = need_int(config, "sampling_rate")
    ch = as_int(get(config, "audio_channels")) or 1
    hop = as_int(get(config, "hop_length"))
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
        tower = any(get(config, k) is not None for k in _TOWER_KEYS[modality])
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
