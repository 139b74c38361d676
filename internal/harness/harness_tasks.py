"""Which Hub tasks the harness can smoke-test: the task table, a task for a model without one, the
family of inputs and outputs for a task and a config, coverage of a Hub listing, and the arch-mode
layer cut.

The table is tasks.json (read by the scanner's Go preflight too: internal/harness/tasks.go): pipeline
tag -> family; per family whether it generates, the Auto classes to try and the outputs compared with
the CPU reference (their kinds and bounds are numerics.json, applied by harness_numerics.py). The
inputs of every family are built from the config alone by harness_synthetic_inputs.py (no tokenizer, no
processor, no downloaded data): see its docstring for the table of inputs.

A model without a pipeline tag gets its task from config.architectures[0]: the first of transformers'
own MODEL_FOR_*_MAPPING_NAMES (in the order of tasks.json "mappings") that lists the class, else the
first suffix of "arch_suffixes" it ends with, refined by the config (a ForConditionalGeneration with a
vision tower is image-text-to-text, a bare ...Model with a vision config image-feature-extraction, ...).
A tag of "unsupported" (transformers has no model class for it) is skipped with reason
``unsupported_task``, naming the task.

Run ``python harness_tasks.py coverage LISTING.json`` to print which share of a Hub listing (a JSON
list of entries with pipeline_tag, library_name and config.architectures, optionally downloads) the
harness covers, and ``python harness_tasks.py table`` for the table.
"""

from __future__ import annotations

import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_HERE, "tasks.json"), encoding="utf-8") as _fh:
    TABLE = json.load(_fh)
# Which models need code from their own repository: one table, read by the scanner's preflight too.
with open(os.path.join(_HERE, "remote_code.json"), encoding="utf-8") as _fh:
    REMOTE_CODE = json.load(_fh)

# pipeline tag -> family. "speech" is resolved to speech-seq2seq or speech-ctc from the config.
TASK_FAMILIES: dict[str, str] = {tag: spec["family"] for tag, spec in TABLE["tasks"].items()}
FAMILIES: dict[str, dict] = TABLE["families"]
UNSUPPORTED: dict[str, str] = TABLE["unsupported"]
GENERATIVE_FAMILIES = {name for name, spec in FAMILIES.items() if spec["generate"]}
# Auto classes per family, tried when config.architectures names no transformers class; per task first.
AUTO_CLASSES: dict[str, tuple] = {name: tuple(spec["auto"]) for name, spec in FAMILIES.items()}
TASK_AUTO_CLASSES: dict[str, tuple] = {
    tag: tuple(spec["auto"]) for tag, spec in TABLE["tasks"].items() if "auto" in spec
}
ARCH_SUFFIXES: list[tuple[str, str]] = [(s, t) for s, t in TABLE["arch_suffixes"]]

# The Hub libraries whose checkpoints are plain transformers models (config.json + safetensors), and
# whether config.json must then have a model_type: tasks.json "libraries", the scanner's table too.
LIBRARIES = TABLE["libraries"]


def library_supported(library_name: str | None, config=None) -> bool:
    """Whether the harness loads a model of this Hub library (tasks.json "libraries"): a library of the
    table whose config.json has a model_type where the table needs one. The scanner's Go face of the same
    table is internal/harness/coverage.go (TransformersModel)."""
    spec = LIBRARIES.get((library_name or "").strip())
    return spec is not None and (not spec["needs_model_type"] or bool(_cfg_get(config or {}, "model_type")))


# The sub-configs a composite model may carry; each must be an object with at least a model_type or a size.
SUB_CONFIGS = ("text_config", "vision_config", "audio_config")

LAYER_KEYS = (
    "num_hidden_layers", "n_layer", "n_layers", "num_layers", "encoder_layers", "decoder_layers",
    "num_encoder_layers", "num_decoder_layers", "depth",
)


def _cfg_get(config, key, default=None):
    if isinstance(config, dict):
        return config.get(key, default)
    return getattr(config, key, default)


def needs_remote_code(config, tags=()) -> str | None:
    """Why a model needs code from its own repository (remote_code.json), else None: one of the table's
    Hub tags, or one of its config.json keys with a value other than null, whatever the model_type. The
    scanner's preflight applies the same table (internal/harness/remotecode.go)."""
    for tag in REMOTE_CODE["tags"]:
        if tag in tags:
            return f"tagged {tag}"
    for key in REMOTE_CODE["config_keys"]:
        if _cfg_get(config, key) is not None:
            return f"config.json has {key}"
    return None


def looks_like_vision(config) -> bool:
    return (_cfg_get(config, "num_channels") is not None and _cfg_get(config, "max_position_embeddings") is None
            and (_cfg_get(config, "vocab_size") is None or _cfg_get(config, "image_size") is not None))


def looks_like_audio(config) -> bool:
    return (_cfg_get(config, "feat_extract_norm") is not None or _cfg_get(config, "conv_dim") is not None
            or _cfg_get(config, "feature_projection_input_dim") is not None)


def looks_like_whisper(config) -> bool:
    return bool(_cfg_get(config, "is_encoder_decoder")) and _cfg_get(config, "num_mel_bins") is not None


def _has(config, key) -> bool:
    return _cfg_get(config, key) is not None


def multimodal(config) -> str:
    """'vision', 'audio', 'vision+audio' or '' from the sub-configs a composite config carries."""
    vision = any(_has(config, k) for k in ("vision_config", "visual", "vision_encoder_config"))
    audio = any(_has(config, k) for k in ("audio_config", "audio_encoder_config"))
    return "+".join(n for n, on in (("vision", vision), ("audio", audio)) if on)


def _mapping_task(arch: str) -> str | None:
    """The task of the first transformers MODEL_FOR_*_MAPPING_NAMES (tasks.json order) listing arch."""
    try:
        from transformers.models.auto import modeling_auto
    except Exception:  # noqa: BLE001 - without transformers, the suffix rules decide
        return None
    for mapping, task in TABLE["mappings"]:
        names = getattr(modeling_auto, mapping, None) or {}
        for val in names.values():
            if arch == val or (isinstance(val, (list, tuple)) and arch in val):
                return task
    return None


def conditional_generation_known(config) -> bool:
    """Whether a ...ForConditionalGeneration that transformers' mappings do not list has a known task: its
    config has one of tasks.json "conditional_generation" keys (an encoder-decoder, or vision or audio towers)
    with a value other than None and False. The scanner's preflight applies the same table (ConfigRefusal)."""
    return any(_cfg_get(config, k) not in (None, False) for k in TABLE["conditional_generation"]["keys"])


def mapped_architectures() -> dict[str, str]:
    """The architectures transformers' mappings (tasks.json "mappings") list whose task the suffix rules alone
    would not give (no suffix, or a ...ForConditionalGeneration without towers), with that task: what
    tasks.json "mapped_architectures" must say, so that preflight, which cannot ask transformers, agrees."""
    from transformers.models.auto import modeling_auto

    out = {}
    for mapping, _ in TABLE["mappings"]:
        for val in (getattr(modeling_auto, mapping, None) or {}).values():
            for arch in val if isinstance(val, (list, tuple)) else [val]:
                suffix = _suffix_task(arch)
                if suffix is None or (suffix == "text2text-generation" and arch.endswith("ForConditionalGeneration")):
                    out[arch] = _mapping_task(arch)
    return dict(sorted(out.items()))


def _suffix_task(arch: str) -> str | None:
    for suffix, task in ARCH_SUFFIXES:
        # "Model" alone is not an architecture; "BertModel" is.
        if arch.endswith(suffix) and len(arch) > len(suffix):
            return task
    return None


def infer_task(architectures, config=None) -> str | None:
    """A pipeline tag from config.architectures when the listing gave none."""
    arch = (architectures or [None])[0] or ""
    if not arch:
        return None
    task = _mapping_task(arch) or _suffix_task(arch)
    if task is None or config is None:
        return task
    enc_dec = bool(_cfg_get(config, "is_encoder_decoder"))
    mm = multimodal(config)
    if task == "text2text-generation" and arch.endswith("ForConditionalGeneration"):
        if looks_like_whisper(config):
            return "automatic-speech-recognition"
        if mm:
            return "audio-text-to-text" if mm == "audio" else "image-text-to-text"
        # T5/BART/Marian style; a decoder-only ...ForConditionalGeneration without towers that transformers'
        # mappings do not list is not known (tasks.json "conditional_generation", preflight's rule too)
        return task if conditional_generation_known(config) else None
    if task == "any-to-any" and mm == "audio":
        return "audio-text-to-text"
    if task == "text-generation" and enc_dec:
        return "text2text-generation"
    if task == "text-classification" and looks_like_audio(config):
        return "audio-classification"
    if task == "feature-extraction":
        if mm == "vision" and _has(config, "text_config"):
            return "zero-shot-image-classification"
        if looks_like_vision(config):
            return "image-feature-extraction"
    return task


def _note(note: str, more: str) -> str:
    return (note + "; " if note else "") + more


def resolve_family(task: str | None, config) -> tuple[str | None, str | None, str]:
    """(task, family, note) for a pipeline tag and a config (object or dict).

    family None means unsupported; the note then says why, naming the task. The note
    otherwise explains any adjustment."""
    note = ""
    architectures = _cfg_get(config, "architectures") or []
    if not task:
        task = infer_task(architectures, config)
        if task is None:
            return None, None, f"no pipeline tag and architectures {architectures} name no supported task"
        note = f"task inferred from architectures: {task}"
    family = TASK_FAMILIES.get(task)
    if family is None:
        why = UNSUPPORTED.get(task)
        return task, None, f"task {task!r} is not supported" + (f": {why}" if why else "")
    family, more = _refine(task, family, config)
    if more:
        note = _note(note, more)
    if family is None:
        return task, None, note
    return task, family, note


def config_refusal(task: str, family: str, config) -> str:
    """Why a model of a supported task is not tested after all: its family requires (tasks.json "requires") one
    of model_types, or one of keys with a value other than None and False, and config has none; "" when it has.
    An audio-to-audio model must quantize audio (a codec: a codebook, or X-Codec 2's finite scalar quantization
    levels, issue 41); a table-question-answering one must be TAPAS or an encoder-decoder. The scanner's
    preflight applies the same table (internal/harness/tasks.go, ConfigRefusal)."""
    req = FAMILIES[family].get("requires")
    model_type = _cfg_get(config, "model_type") or ""
    if not req or model_type in req.get("model_types", ()):
        return ""
    if any(_cfg_get(config, k) not in (None, False) for k in req.get("keys", ())):
        return ""
    return f"{task} model of type {model_type!r}: {req['why']}"


def _refine(task: str, family: str, config) -> tuple[str | None, str]:
    """The family a config really needs for a task's family, and a note (family None: unsupported)."""
    why = config_refusal(task, family, config)
    if why:
        return None, why
    mm = multimodal(config)
    enc_dec = bool(_cfg_get(config, "is_encoder_decoder"))
    model_type = _cfg_get(config, "model_type") or ""
    if family == "speech":
        if looks_like_whisper(config):
            return "speech-seq2seq", ""
        if _has(config, "text_config") and any(_has(config, k) for k in ("audio_token_id", "audio_token_index")):
            # Qwen3-ASR, Granite Speech: a language model transcribing a clip's audio tokens
            return "audio-lm", "a language model with audio placeholders: audio and text inputs"
        if enc_dec:
            return None, f"encoder-decoder speech model without num_mel_bins is not supported (task {task!r})"
        return "speech-ctc", ""
    if family in ("text-encoder", "vision") and mm == "vision" and _has(config, "text_config"):
        return "contrastive", "text and vision towers: paired image and text inputs"
    if family == "text-encoder" and mm == "audio" and _has(config, "text_config"):
        return "audio-contrastive", "text and audio towers: paired audio and text inputs"
    if family == "speech-ctc" and mm == "audio" and _has(config, "text_config") and _has(config, "projection_dim"):
        # CLAP under audio-classification: a dual encoder classifies a clip zero-shot, against candidate labels
        return "audio-contrastive", (f"text and audio towers of a dual encoder: {task} is zero-shot, a clip "
                                     "against candidate label texts")
    if family == "text-encoder" and looks_like_audio(config):
        if task in ("feature-extraction", "sentence-similarity"):
            return "speech-encoder", "audio config: waveform inputs"
        return "speech-ctc", "audio config: waveform inputs"
    if family == "text-encoder" and looks_like_vision(config):
        return "vision", "vision config: image inputs"
    if family == "text-encoder" and mm:
        return None, f"multimodal model ({mm} towers) for task {task!r} is not supported"
    if family == "causal-lm" and enc_dec:
        return "seq2seq", "encoder-decoder config: seq2seq inputs"
    if family == "seq2seq" and not enc_dec:
        return "causal-lm", "decoder-only config: causal LM inputs"
    if family == "vlm" and mm == "audio":
        return "audio-lm", "audio tower: audio inputs"
    if family == "document" and model_type == "vision-encoder-decoder":
        return "vlm", "vision encoder-decoder: image inputs"
    if family == "table-qa" and model_type != "tapas":  # an encoder-decoder (config_refusal let it through)
        return "seq2seq", "encoder-decoder table model: seq2seq inputs"
    return family, ""


def task_support(pipeline_tag: str | None, library_name: str | None, architectures=None, config=None) -> dict:
    """Whether the harness covers a listing entry: {supported, task, family, reason, note}."""
    cfg = dict(config or {})
    if architectures is not None:
        cfg.setdefault("architectures", architectures)
    lib = (library_name or "").strip()
    if not library_supported(lib, cfg):
        return {"supported": False, "task": pipeline_tag, "family": None, "reason": "unsupported_library",
                "note": f"library {lib!r}" + (" and no config.json model_type" if lib in LIBRARIES else "")}
    why = needs_remote_code(cfg)
    if why:
        return {"supported": False, "task": pipeline_tag, "family": None, "reason": "remote_code", "note": why}
    task, family, note = resolve_family(pipeline_tag or None, cfg)
    if family is None:
        return {"supported": False, "task": task, "family": None, "reason": "unsupported_task", "note": note}
    return {"supported": True, "task": task, "family": family, "reason": None, "note": note}


def support_table() -> dict[str, dict]:
    """The task-support table: pipeline tag -> {families, generate}."""
    out = {}
    for tag, fam in TASK_FAMILIES.items():
        fams = ["speech-seq2seq", "speech-ctc"] if fam == "speech" else [fam]
        out[tag] = {"families": fams, "generate": any(f in GENERATIVE_FAMILIES for f in fams)}
    return out


def coverage(entries: list[dict]) -> dict:
    """Coverage of a Hub listing: counts and download-weighted shares, plus per-reason misses.

    share and download_share are over every entry; transformers_share over the entries whose
    library is transformers' (the scanner's coverage figure)."""
    total = covered = backed = 0
    dl_total = dl_covered = dl_backed = 0
    reasons: dict[str, int] = {}
    rows = []
    for e in entries:
        cfg = e.get("config") or {}
        archs = cfg.get("architectures") if isinstance(cfg, dict) else None
        if archs is None:
            archs = e.get("architectures")
        tag = e.get("pipeline_tag") or e.get("task") or ""
        lib = e.get("library_name") or e.get("library") or ""
        sup = task_support(tag, lib, archs, cfg if isinstance(cfg, dict) else None)
        dls = int(e.get("downloads") or 0)
        total += 1
        dl_total += dls
        if sup["reason"] != "unsupported_library":
            backed += 1
            dl_backed += dls
        if sup["supported"]:
            covered += 1
            dl_covered += dls
        else:
            reasons[sup["reason"]] = reasons.get(sup["reason"], 0) + 1
        rows.append({"id": e.get("id") or e.get("modelId"), "task": sup["task"], "family": sup["family"],
                     "supported": sup["supported"], "reason": sup["reason"]})
    return {
        "models": total,
        "covered": covered,
        "share": (covered / total) if total else None,
        "download_share": (dl_covered / dl_total) if dl_total else None,
        "transformers_models": backed,
        "transformers_share": (covered / backed) if backed else None,
        "transformers_download_share": (dl_covered / dl_backed) if dl_backed else None,
        "missed_by_reason": reasons,
        "rows": rows,
    }


def make_deterministic(config) -> list[str]:
    """Switch off the config fields that make a forward random (tasks.json "deterministic": VITS's
    sampling noise, SpeechT5's always-on prenet dropout), in config and its sub-configs; the changes."""
    knobs = {k: v for k, v in TABLE["deterministic"].items() if k != "about"}
    changes: list[str] = []
    _set_knobs(config, knobs, changes, "", set())
    return changes


PLACEHOLDER_KEYS = ("image_token_id", "image_token_index", "video_token_id", "video_token_index", "audio_token_id",
                    "audio_token_index")


def legacy_text_vocab(config) -> list[str]:
    """Give a composite config's text tower the vocabulary its placeholder tokens need, where the config keeps it at
    the top level (the layout of configs written for transformers 4, e.g. a top-level vocab_size 32064 and a
    text_config without one, which transformers 5 reads as its text model's default, 32000): when an image, video or
    audio placeholder id lies beyond text_config.vocab_size and the top-level vocab_size covers every placeholder,
    text_config.vocab_size becomes the top-level one. Without it the model cannot embed its own placeholders on any
    device (and a checkpoint of that vocabulary does not load). The changes, for the config stage's note."""
    if not hasattr(config, "get_text_config"):
        return []
    try:
        text = config.get_text_config(decoder=True)
    except Exception:  # noqa: BLE001
        return []
    top = _config_attrs(config).get("vocab_size")
    vocab = getattr(text, "vocab_size", None)
    ids = [v for k in PLACEHOLDER_KEYS for v in [_config_attrs(config).get(k)] if isinstance(v, int) and v >= 0]
    if text is config or not ids or not isinstance(vocab, int) or not isinstance(top, int) or isinstance(top, bool):
        return []
    if max(ids) < vocab or max(ids) >= top or top <= vocab:
        return []
    text.vocab_size = top
    return [f"text vocab_size {vocab}->{top} (the config's top-level vocab_size: its placeholder id {max(ids)} lies "
            f"beyond {vocab})"]


def _set_knobs(config, knobs, changes, prefix, seen):
    if id(config) in seen:
        return
    seen.add(id(config))
    attrs = _config_attrs(config)
    for key, val in knobs.items():
        if isinstance(attrs.get(key), (int, float)) and attrs[key] != val:
            changes.append(f"{prefix}{key} {attrs[key]}->{val}")
            setattr(config, key, val)
    for key, val in attrs.items():
        if _is_config(val):
            _set_knobs(val, knobs, changes, f"{prefix}{key}.", seen)


def check_subconfigs(raw: dict) -> str | None:
    """Why config.json's sub-configs are malformed, naming the field; None when they are fine.

    A text_config, vision_config or audio_config that is present must be a JSON object (or null);
    an empty object stands for the sub-config class's defaults. Fields the family's inputs need
    and that the loaded config leaves empty are checked after loading (check_inputs)."""
    for key in SUB_CONFIGS:
        if key not in raw or raw[key] is None:
            continue
        sub = raw[key]
        if not isinstance(sub, dict):
            return f"config.json: {key} is a {type(sub).__name__}, not an object"
    return None


def name_config_field(raw: dict, message: str) -> str | None:
    """The field of config.json that transformers' config validation refused, with the sub-config
    that holds it ("text_config.vocab_size is missing"); None when the message names no field or
    the field is in no sub-config nor at the top level. message is the validation error's text."""
    import re

    m = re.search(r"field '([A-Za-z_][A-Za-z0-9_]*)'", message)
    if not m:
        return None
    field = m.group(1)
    places = [(key, raw[key]) for key in SUB_CONFIGS if isinstance(raw.get(key), dict)] + [("", raw)]
    for where, obj in places:
        if field in obj:
            name = f"{where}.{field}" if where else field
            if obj[field] is None:
                return f"config.json: {name} is missing (null)"
            return f"config.json: {name} is {obj[field]!r}, which transformers refuses"
    return None


# --- config shaping (arch mode) -------------------------------------------

def reduce_layers(config, layers: int) -> list[str]:
    """Cut every layer count in config (and nested sub-configs) down to `layers`.

    Lists whose length equalled the old count (layer_types, ...) are truncated
    with it, per-stage `depths` are clamped, and MoE knobs are adjusted so that
    at least one sparse layer remains. A list of a sub-config's layers kept by its
    parent (TOWER_INDEX_KEYS: CLIPSeg's extract_layers) keeps as many distinct
    layers, the last ones of the cut tower. Returns a list of changes for the note."""
    changes: list[str] = []
    floors = _reduce_tower_indices(config, layers, changes)
    _reduce(config, layers, changes, "", set(), floors)
    return changes


def _reduce_tower_indices(config, layers: int, changes: list[str]) -> dict[int, int]:
    """Re-index config's lists of a sub-config's layers (TOWER_INDEX_KEYS) for the cut; returns the layers each
    such sub-config keeps at least (by id), for _reduce."""
    floors: dict[int, int] = {}
    attrs = _config_attrs(config)
    for key, sub_key in TOWER_INDEX_KEYS.items():
        val, sub = attrs.get(key), attrs.get(sub_key)
        if not _int_list(val) or not _is_config(sub):
            continue
        sub_attrs = _config_attrs(sub)
        count_key = next(
            (k for k in LAYER_KEYS if isinstance(sub_attrs.get(k), int) and not isinstance(sub_attrs.get(k), bool)),
            None,
        )
        if count_key is None:
            continue
        keep = min(sub_attrs[count_key], max(layers, len(val)))
        floors[id(sub)] = keep
        new = list(range(keep - len(val), keep))
        if max(val) > keep - 1:
            setattr(config, key, type(val)(new))
            changes.append(f"{key} {list(val)}->{new}")
    return floors


def _reduce(config, layers, changes, prefix, seen, floors):
    if id(config) in seen:
        return
    seen.add(id(config))
    attrs = _config_attrs(config)
    for key in FEATURE_INDEX_KEYS:  # backbones keep out_indices behind a property
        if key not in attrs and f"_{key}" in attrs:
            attrs[key] = attrs[f"_{key}"]
    # staged backbones (Swin, ResNet, ...) count stages in num_layers: their depths are cut instead
    stages = len(attrs["depths"]) if _int_list(attrs.get("depths")) else None
    # a backbone that exposes k layers' features (out_indices, ...) keeps k distinct layers; a staged
    # one's out_indices count stages, which are all kept
    wanted = [len(v) for k, v in attrs.items() if k in FEATURE_INDEX_KEYS and _int_list(v)] if stages is None else []
    if id(config) in floors:  # its parent keeps this many of its layers (TOWER_INDEX_KEYS)
        wanted.append(floors[id(config)])
    layers_here = max([layers] + wanted)
    old_counts = {}
    for key in LAYER_KEYS:
        val = attrs.get(key)
        if stages is not None and val == stages:
            continue
        if isinstance(val, int) and not isinstance(val, bool) and val > layers_here:
            setattr(config, key, layers_here)
            old_counts[key] = val
            changes.append(f"{prefix}{key} {val}->{layers_here}")
    olds = set(old_counts.values())
    if olds:
        _reindex(config, attrs, layers_here, changes, prefix)
    layers = layers_here
    for key, val in attrs.items():
        if key in LAYER_KEYS or key.startswith("_"):
            continue
        if isinstance(val, (list, tuple)) and olds and len(val) in olds and key not in ("architectures",):
            setattr(config, key, type(val)(val[:layers]))
            changes.append(f"{prefix}{key} truncated to {layers}")
        elif key == "depths" and isinstance(val, (list, tuple)) and all(isinstance(d, int) for d in val):
            new = [min(d, layers) for d in val]
            if list(new) != list(val):
                setattr(config, key, type(val)(new))
                changes.append(f"{prefix}depths {list(val)}->{new}")
    if olds:
        fk = attrs.get("first_k_dense_replace")
        if isinstance(fk, int) and fk >= layers:
            config.first_k_dense_replace = max(0, layers - 1)
            changes.append(f"{prefix}first_k_dense_replace {fk}->{max(0, layers - 1)}")
        mol = attrs.get("mlp_only_layers")
        if isinstance(mol, (list, tuple)):
            config.mlp_only_layers = [i for i in mol if i < layers]
    for key, val in attrs.items():
        if _is_config(val):
            _reduce(val, layers, changes, f"{prefix}{key}.", seen, floors)


# index lists over a model's layers that must stay distinct and in range: key -> first index
FEATURE_INDEX_KEYS = {"out_indices": 1, "backbone_out_indices": 0, "deepstack_visual_indexes": 0}
# index lists of a config over the layers of one of its sub-configs: key -> the sub-config (CLIPSeg's decoder
# reads extract_layers of its vision tower: hidden_states[i + 1] for each i)
TOWER_INDEX_KEYS = {"extract_layers": "vision_config"}
# index lists of layers that get special treatment (global attention, ...): kept where in range
LAYER_SUBSET_KEYS = ("global_attn_indexes", "fullatt_block_indexes")


def _int_list(val) -> bool:
    return (
        isinstance(val, (list, tuple))
        and bool(val)
        and all(isinstance(i, int) and not isinstance(i, bool) for i in val)
    )


def _reindex(config, attrs, layers, changes, prefix):
    """Keep layer index lists valid after a layer cut: feature indices become the last k layers,
    special-layer subsets keep their entries in range (else the last layer)."""
    for key, first in FEATURE_INDEX_KEYS.items():
        val = attrs.get(key)
        if _int_list(val) and max(val) > layers - 1 + first:
            new = list(range(layers - len(val) + first, layers + first))
            changes.append(f"{prefix}{key} {list(val)}->{new}")
            if key == "out_indices" and isinstance(attrs.get("stage_names"), (list, tuple)):
                # a backbone: its stage names follow its layers, its out_features its out_indices
                config.stage_names = ["stem"] + [f"stage{i}" for i in range(1, layers + 1)]
                if hasattr(config, "set_output_features_output_indices"):
                    config.set_output_features_output_indices(out_features=None, out_indices=new)
                    continue
            setattr(config, key, type(val)(new))
    for key in LAYER_SUBSET_KEYS:
        val = attrs.get(key)
        if _int_list(val) and max(val) >= layers:
            new = [i for i in val if i < layers] or [layers - 1]
            setattr(config, key, type(val)(new))
            changes.append(f"{prefix}{key} {list(val)}->{new}")


def _is_config(val) -> bool:
    return hasattr(val, "to_dict") and hasattr(val, "model_type") and not isinstance(val, type)


def _config_attrs(config) -> dict:
    try:
        return dict(vars(config))
    except TypeError:
        return {}


def _main(argv: list[str]) -> int:
    if len(argv) >= 1 and argv[0] == "table":
        json.dump(support_table(), sys.stdout, indent=2)
        print()
        return 0
    if len(argv) >= 1 and argv[0] == "mapped":  # tasks.json "mapped_architectures" for the transformers installed
        json.dump(mapped_architectures(), sys.stdout, indent=2)
        print()
        return 0
    if len(argv) != 2 or argv[0] != "coverage":
        print("usage: harness_tasks.py coverage LISTING.json | harness_tasks.py table | harness_tasks.py mapped",
              file=sys.stderr)
        return 2
    with open(argv[1]) if argv[1] != "-" else sys.stdin as fh:
        data = json.load(fh)
    if isinstance(data, dict):
        data = data.get("models") or data.get("entries") or []
    rep = coverage(data)
    share = rep["share"]
    print(f"covered {rep['covered']}/{rep['models']} models" + (f" ({share:.1%})" if share is not None else ""))
    if rep["download_share"] is not None:
        print(f"download-weighted coverage {rep['download_share']:.1%}")
    if rep["transformers_share"] is not None:
        print(f"covered {rep['covered']}/{rep['transformers_models']} transformers-backed models "
              f"({rep['transformers_share']:.1%}, {rep['transformers_download_share']:.1%} of their downloads)")
    for reason, n in sorted(rep["missed_by_reason"].items(), key=lambda kv: -kv[1]):
        print(f"  missed {reason}: {n}")
    json.dump({k: v for k, v in rep.items() if k != "rows"}, sys.stderr)
    print(file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
