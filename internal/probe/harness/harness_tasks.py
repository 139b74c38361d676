"""Which Hub tasks the harness can smoke-test, and how to build their inputs.

Task families (inputs are built from config.json alone: no tokenizer, no
processor, no downloaded data):

| family          | pipeline tags                                                | inputs                                   | generate |
|-----------------|--------------------------------------------------------------|------------------------------------------|----------|
| causal-lm       | text-generation                                              | input_ids [1, S] (no padding, no mask)   | yes      |
| text-encoder    | feature-extraction, fill-mask, sentence-similarity,          | input_ids [1, S] (+ token_type_ids)      | no       |
|                 | text-classification, token-classification,                   |                                          |          |
|                 | question-answering, zero-shot-classification, text-ranking   |                                          |          |
| seq2seq         | text2text-generation, translation, summarization             | input_ids [1, S], decoder_input_ids      | yes      |
| vision          | image-classification, image-feature-extraction               | pixel_values [1, C, H, W] from config    | no       |
| speech-seq2seq  | automatic-speech-recognition (Whisper-style, num_mel_bins)   | input_features [1, mel, 3000]            | yes      |
| speech-ctc      | automatic-speech-recognition (CTC), audio-classification     | input_values [1, 16000] (1 s @ 16 kHz)   | no       |

Everything else is skipped with reason ``unsupported_task``. Text inputs are a
seeded random chunk of token ids repeated twice to fill exactly S tokens (so a
trained LM can be checked for a sane perplexity on the repeated half, without a
tokenizer).

Run ``python harness_tasks.py coverage LISTING.json`` to print which share of a
Hub listing (a JSON list of entries with pipeline_tag, library_name and
config.architectures, optionally downloads) the harness covers.
"""

from __future__ import annotations

import json
import sys

# pipeline tag -> family. "speech" is resolved to speech-seq2seq or speech-ctc from the config.
TASK_FAMILIES: dict[str, str] = {
    "text-generation": "causal-lm",
    "feature-extraction": "text-encoder",
    "fill-mask": "text-encoder",
    "sentence-similarity": "text-encoder",
    "text-classification": "text-encoder",
    "token-classification": "text-encoder",
    "question-answering": "text-encoder",
    "zero-shot-classification": "text-encoder",
    "text-ranking": "text-encoder",
    "text2text-generation": "seq2seq",
    "translation": "seq2seq",
    "summarization": "seq2seq",
    "image-classification": "vision",
    "image-feature-extraction": "vision",
    "automatic-speech-recognition": "speech",
    "audio-classification": "speech-ctc",
}

GENERATIVE_FAMILIES = {"causal-lm", "seq2seq", "speech-seq2seq"}

# Libraries whose checkpoints are plain transformers models (config.json + safetensors).
SUPPORTED_LIBRARIES = {"transformers", "sentence-transformers", ""}

LAYER_KEYS = (
    "num_hidden_layers", "n_layer", "n_layers", "num_layers", "encoder_layers", "decoder_layers",
    "num_encoder_layers", "num_decoder_layers",
)

# Auto classes per family, tried when config.architectures names no transformers class.
AUTO_CLASSES = {
    "causal-lm": ("AutoModelForCausalLM",),
    "text-encoder": ("AutoModel",),
    "seq2seq": ("AutoModelForSeq2SeqLM",),
    "vision": ("AutoModelForImageClassification", "AutoModel"),
    "speech-seq2seq": ("AutoModelForSpeechSeq2Seq",),
    "speech-ctc": ("AutoModelForCTC", "AutoModelForAudioClassification", "AutoModel"),
}
TASK_AUTO_CLASSES = {
    "fill-mask": ("AutoModelForMaskedLM",),
    "text-classification": ("AutoModelForSequenceClassification",),
    "zero-shot-classification": ("AutoModelForSequenceClassification",),
    "text-ranking": ("AutoModelForSequenceClassification",),
    "token-classification": ("AutoModelForTokenClassification",),
    "question-answering": ("AutoModelForQuestionAnswering",),
    "image-feature-extraction": ("AutoModel",),
    "audio-classification": ("AutoModelForAudioClassification",),
}


def _cfg_get(config, key, default=None):
    if isinstance(config, dict):
        return config.get(key, default)
    return getattr(config, key, default)


def looks_like_vision(config) -> bool:
    return (_cfg_get(config, "num_channels") is not None and _cfg_get(config, "max_position_embeddings") is None
            and (_cfg_get(config, "vocab_size") is None or _cfg_get(config, "image_size") is not None))


def looks_like_audio(config) -> bool:
    return _cfg_get(config, "feat_extract_norm") is not None or _cfg_get(config, "conv_dim") is not None


def looks_like_whisper(config) -> bool:
    return bool(_cfg_get(config, "is_encoder_decoder")) and _cfg_get(config, "num_mel_bins") is not None


def infer_task(architectures, config=None) -> str | None:
    """A pipeline tag from config.architectures when the listing gave none."""
    arch = (architectures or [None])[0] or ""
    enc_dec = bool(_cfg_get(config, "is_encoder_decoder")) if config is not None else False
    if arch.endswith("ForCTC"):
        return "automatic-speech-recognition"
    if arch.endswith("ForAudioClassification") or (
            arch.endswith("ForSequenceClassification") and config is not None and looks_like_audio(config)):
        return "audio-classification"
    if arch.endswith("ForSpeechSeq2Seq") or (arch.endswith("ForConditionalGeneration") and config is not None and looks_like_whisper(config)):
        return "automatic-speech-recognition"
    if arch.endswith("ForCausalLM") or arch.endswith("LMHeadModel"):
        return "text2text-generation" if enc_dec else "text-generation"
    if arch.endswith("ForConditionalGeneration"):
        # T5/BART/Marian style; multimodal *ForConditionalGeneration (Llava, Qwen-VL) are not encoder-decoder.
        return "text2text-generation" if enc_dec else None
    if arch.endswith("ForMaskedLM"):
        return "fill-mask"
    if arch.endswith("ForPreTraining"):  # BERT/ELECTRA pre-training heads: a text encoder with extra heads
        return "feature-extraction"
    if arch.endswith("ForSequenceClassification"):
        return "text-classification"
    if arch.endswith("ForTokenClassification"):
        return "token-classification"
    if arch.endswith("ForQuestionAnswering"):
        return "question-answering"
    if arch.endswith("ForImageClassification"):
        return "image-classification"
    if arch.endswith("MTModel") and enc_dec:  # MarianMTModel
        return "translation"
    if arch.endswith("Model") or arch.endswith("EncoderModel"):
        if config is not None and looks_like_vision(config):
            return "image-feature-extraction"
        return "feature-extraction"
    return None


def resolve_family(task: str | None, config) -> tuple[str | None, str | None, str]:
    """(task, family, note) for a pipeline tag and a config (object or dict).

    family None means unsupported. The note explains any adjustment."""
    note = ""
    architectures = _cfg_get(config, "architectures") or []
    if not task:
        task = infer_task(architectures, config)
        if task is None:
            return None, None, f"no pipeline tag and architectures {architectures} name no supported task"
        note = f"task inferred from architectures: {task}"
    family = TASK_FAMILIES.get(task)
    if family is None:
        return task, None, f"task {task!r} is not supported"
    if family != "causal-lm" and _cfg_get(config, "text_config") is not None and (
            _cfg_get(config, "vision_config") is not None or _cfg_get(config, "audio_config") is not None):
        # CLIP/SigLIP-style dual encoders need paired text and image inputs
        return task, None, f"multimodal model (text and vision/audio towers) for task {task!r} is not supported"
    if family == "speech":
        if looks_like_whisper(config):
            family = "speech-seq2seq"
        elif _cfg_get(config, "is_encoder_decoder"):
            return task, None, "encoder-decoder speech model without num_mel_bins is not supported"
        else:
            family = "speech-ctc"
    elif family == "text-encoder" and looks_like_audio(config):
        family = "speech-ctc"
        note = (note + "; " if note else "") + "audio config: waveform inputs"
    elif family == "text-encoder" and looks_like_vision(config):
        family = "vision"
        note = (note + "; " if note else "") + "vision config: image inputs"
    elif family == "causal-lm" and _cfg_get(config, "is_encoder_decoder"):
        family = "seq2seq"
        note = (note + "; " if note else "") + "encoder-decoder config: seq2seq inputs"
    elif family in ("seq2seq",) and not _cfg_get(config, "is_encoder_decoder"):
        family = "causal-lm"
        note = (note + "; " if note else "") + "decoder-only config: causal LM inputs"
    return task, family, note


def task_support(pipeline_tag: str | None, library_name: str | None, architectures=None, config=None) -> dict:
    """Whether the harness covers a listing entry: {supported, task, family, reason, note}."""
    cfg = dict(config or {})
    if architectures is not None:
        cfg.setdefault("architectures", architectures)
    lib = (library_name or "").strip()
    if lib not in SUPPORTED_LIBRARIES:
        return {"supported": False, "task": pipeline_tag, "family": None, "reason": "unsupported_library",
                "note": f"library {lib!r}"}
    if cfg.get("auto_map") and not cfg.get("model_type"):
        return {"supported": False, "task": pipeline_tag, "family": None, "reason": "remote_code", "note": "auto_map"}
    task, family, note = resolve_family(pipeline_tag or None, cfg)
    if family is None:
        return {"supported": False, "task": task, "family": None, "reason": "unsupported_task", "note": note}
    return {"supported": True, "task": task, "family": family, "reason": None, "note": note}


def support_table() -> dict[str, dict]:
    """The task-support table: pipeline tag -> {family, generate}."""
    out = {}
    for tag, fam in TASK_FAMILIES.items():
        fams = ["speech-seq2seq", "speech-ctc"] if fam == "speech" else [fam]
        out[tag] = {"families": fams, "generate": any(f in GENERATIVE_FAMILIES for f in fams)}
    return out


def coverage(entries: list[dict]) -> dict:
    """Coverage of a Hub listing: counts and download-weighted shares, plus per-reason misses."""
    total = len(entries)
    covered = 0
    dl_total = 0
    dl_covered = 0
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
        dl_total += dls
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
        "missed_by_reason": reasons,
        "rows": rows,
    }


# --- config shaping (arch mode) -------------------------------------------

def reduce_layers(config, layers: int) -> list[str]:
    """Cut every layer count in config (and nested sub-configs) down to `layers`.

    Lists whose length equalled the old count (layer_types, ...) are truncated
    with it, per-stage `depths` are clamped, and MoE knobs are adjusted so that
    at least one sparse layer remains. Returns a list of changes for the note."""
    changes: list[str] = []
    _reduce(config, layers, changes, "", set())
    return changes


def _reduce(config, layers, changes, prefix, seen):
    if id(config) in seen:
        return
    seen.add(id(config))
    attrs = _config_attrs(config)
    old_counts = {}
    for key in LAYER_KEYS:
        val = attrs.get(key)
        if isinstance(val, int) and not isinstance(val, bool) and val > layers:
            setattr(config, key, layers)
            old_counts[key] = val
            changes.append(f"{prefix}{key} {val}->{layers}")
    olds = set(old_counts.values())
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
            setattr(config, "first_k_dense_replace", max(0, layers - 1))
            changes.append(f"{prefix}first_k_dense_replace {fk}->{max(0, layers - 1)}")
        mol = attrs.get("mlp_only_layers")
        if isinstance(mol, (list, tuple)):
            setattr(config, "mlp_only_layers", [i for i in mol if i < layers])
    for key, val in attrs.items():
        if _is_config(val):
            _reduce(val, layers, changes, f"{prefix}{key}.", seen)


def _is_config(val) -> bool:
    return hasattr(val, "to_dict") and hasattr(val, "model_type") and not isinstance(val, type)


def _config_attrs(config) -> dict:
    try:
        return dict(vars(config))
    except TypeError:
        return {}


# --- inputs --------------------------------------------------------------------

def max_positions(config) -> int | None:
    for key in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "n_ctx", "max_sequence_length"):
        val = _cfg_get(config, key)
        if isinstance(val, int) and val > 0:
            return val
    return None


def text_length(config, seq_len: int, reserve: int = 0) -> int:
    """The static text length: --seq-len, clamped so that seq + reserve fits the position table."""
    mp = max_positions(config)
    n = seq_len
    if mp:
        n = min(n, mp - reserve)
        # BERT-style learned positions with a padding offset (RoBERTa: padding_idx + 1)
        if _cfg_get(config, "model_type") in ("roberta", "xlm-roberta", "camembert", "longformer", "mpnet", "ibert"):
            n = min(n, mp - 2 - reserve)
    return max(2, n)


def token_range(config) -> tuple[int, int]:
    vocab = _cfg_get(config, "vocab_size") or 32000
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


def image_size(config) -> tuple[int, int]:
    size = _cfg_get(config, "image_size") or 224
    if isinstance(size, dict):
        size = (size.get("height", 224), size.get("width", 224))
    if isinstance(size, (list, tuple)):
        return int(size[0]), int(size[-1])
    return int(size), int(size)


def decoder_start(config) -> int:
    for key in ("decoder_start_token_id", "bos_token_id", "pad_token_id"):
        val = _cfg_get(config, key)
        if isinstance(val, int):
            return val
    return 0


def _special(config, *keys):
    for key in keys:
        val = _cfg_get(config, key)
        if isinstance(val, (list, tuple)) and val:
            val = val[0]
        if isinstance(val, int) and not isinstance(val, bool) and 0 <= val < (_cfg_get(config, "vocab_size") or 0):
            return val
    return None


def build_inputs(torch, family: str, config, accepted: set[str], seq_len: int, new_tokens: int, seed: int,
                 class_name: str = "") -> tuple[dict, dict]:
    """CPU float32/int64 inputs for one static-shape forward, plus facts about them.

    accepted: the parameter names of model.forward (to add token_type_ids/use_cache only where taken);
    class_name: the model class (plain encoder-decoder *Model classes need decoder_input_ids)."""
    gen = torch.Generator().manual_seed(seed)
    info: dict = {}
    inputs: dict = {}
    if family in ("causal-lm", "text-encoder", "seq2seq"):
        # composite (multimodal) configs keep vocab and positions in their text config
        tcfg = config
        if not isinstance(config, dict) and hasattr(config, "get_text_config"):
            try:
                tcfg = config.get_text_config(decoder=True)
            except Exception:  # noqa: BLE001
                tcfg = config
        reserve = new_tokens if family == "causal-lm" else 0
        n = text_length(tcfg, seq_len, reserve)
        lo, hi = token_range(tcfg)
        ids, half = copy_pattern(torch, n, lo, hi, gen)
        if family == "text-encoder":
            # encoders expect [CLS] ... [SEP] (BART-style classifiers require the eos)
            first = _special(config, "cls_token_id", "bos_token_id")
            last = _special(config, "sep_token_id", "eos_token_id")
            if first is not None:
                ids[0, 0] = first
            if last is not None:
                ids[0, -1] = last
        inputs["input_ids"] = ids
        # No padding: every position is a real token, so the attention mask would be all ones. It is
        # left out (the model then builds its static causal / full mask itself), as TorchTPU's own
        # benchmarks do, which avoids data-dependent mask checks in compiled graphs.
        info.update(seq_len=n, copy_from=half)
        if family == "text-encoder" and "token_type_ids" in accepted and (_cfg_get(config, "type_vocab_size") or 0) > 0:
            inputs["token_type_ids"] = torch.zeros_like(ids)
        if family == "seq2seq" or (family == "text-encoder" and _cfg_get(config, "is_encoder_decoder")
                                   and "decoder_input_ids" in accepted and class_name.endswith("Model")):
            d = max(2, min(new_tokens, n))
            dec = torch.cat([torch.tensor([decoder_start(config)]), ids[0, : d - 1]]).unsqueeze(0)
            inputs["decoder_input_ids"] = dec
            info["decoder_len"] = d
    elif family == "vision":
        h, w = image_size(config)
        c = _cfg_get(config, "num_channels") or 3
        inputs["pixel_values"] = torch.randn(1, c, h, w, generator=gen)
        info.update(image=[c, h, w])
    elif family == "speech-seq2seq":
        mel = _cfg_get(config, "num_mel_bins") or 80
        frames = 2 * (_cfg_get(config, "max_source_positions") or 1500)
        inputs["input_features"] = (torch.randn(1, mel, frames, generator=gen) * 0.5).clamp(-1.5, 1.5)
        d = max(2, min(new_tokens, (_cfg_get(config, "max_target_positions") or 448) // 2))
        lo, hi = token_range(config)
        dec = torch.cat([torch.tensor([decoder_start(config)]), torch.randint(lo, hi, (d - 1,), generator=gen)])
        inputs["decoder_input_ids"] = dec.unsqueeze(0)
        info.update(mel=mel, frames=frames, decoder_len=d)
    elif family == "speech-ctc":
        samples = 16000
        inputs["input_values"] = torch.randn(1, samples, generator=gen)
        info.update(samples=samples)
    else:
        raise ValueError(f"unknown family {family}")
    if "use_cache" in accepted and family in ("causal-lm", "seq2seq", "speech-seq2seq"):
        inputs["use_cache"] = False
    return inputs, info


def generate_inputs(family: str, inputs: dict) -> dict:
    """The subset of forward inputs that generate() takes as the prompt."""
    if family in ("causal-lm", "seq2seq"):
        return {"input_ids": inputs["input_ids"]}
    if family == "speech-seq2seq":
        return {"input_features": inputs["input_features"]}
    return {}


def _main(argv: list[str]) -> int:
    if len(argv) >= 1 and argv[0] == "table":
        json.dump(support_table(), sys.stdout, indent=2)
        print()
        return 0
    if len(argv) != 2 or argv[0] != "coverage":
        print("usage: harness_tasks.py coverage LISTING.json | harness_tasks.py table", file=sys.stderr)
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
    for reason, n in sorted(rep["missed_by_reason"].items(), key=lambda kv: -kv[1]):
        print(f"  missed {reason}: {n}")
    json.dump({k: v for k, v in rep.items() if k != "rows"}, sys.stderr)
    print(file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
