"""The real forward inputs of a full-mode probe (build): the model's own tokenizer and image processor.

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
the synthetic inputs of harness_synthetic_inputs.build_inputs, and the forward stage's note says which
inputs ran and why. The tokenizer and processor files are the ones of input_files.json (the
table the scanner downloads by, with the same size caps): only those, within their caps, are
shown to transformers (linked into a private folder), always with trust_remote_code=False and
local files only. A file that is missing, over its cap or malformed never fails the model: the
probe falls back to the synthetic inputs and says so.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass, field

from harness_inputs import max_positions, placeholder, text_config

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
    source: str = (
        "synthetic"  # "passage", "image", "contrastive", "prompted-image", "audio-text", "vlm", "audio" or "synthetic"
    )
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
    ids = label_ids(
        text.get("input_ids"), len(AUDIO_LABELS), n, config, "the tokenizer made input_ids {} of the labels"
    )
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
        return (
            "audio-text" if {"input_ids", "input_features"} <= keys <= TEXT_KEYS | AUDIO_KEYS | {"is_longer"} else None
        )
    if (
        family in ("segmentation", "detection", "depth")
        and {"input_ids", "pixel_values"} <= keys <= TEXT_KEYS | IMAGE_KEYS
    ):
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
