"""Real inputs for a full-mode probe: the model's own tokenizer and image processor.

In full mode the harness builds its inputs the way a user of the model would:

* text-only models (causal LMs, encoders, seq2seq): a fixed English passage, PASSAGE (the
  Gettysburg Address, public domain), tokenized by the model's own tokenizer and truncated to
  the same static length the synthetic inputs have (harness_tasks.build_inputs). A causal LM is
  then scored on it: perplexity on the device and on the float32 CPU reference, and a pass needs
  the device's below PASSAGE_PPL_MAX (100, as TorchTPU's own Hugging Face coverage tests require:
  tests/compile/model_coverage_hf_test.py) and within PASSAGE_PPL_RTOL of the reference's. Its
  greedy continuation of the fixed PROMPT is reported with the result.
* image-only models: a fixed synthetic picture (synthetic_image: computed, no file) through the
  model's own image processor.

Everything else (arch mode; audio, video and multimodal inputs; a model without the files) keeps
the synthetic inputs of harness_tasks.build_inputs, and the forward stage's note says which
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

PASSAGE_PPL_MAX = 100.0  # a pass needs the device's perplexity on the passage below this
# The device's passage perplexity may differ from the float32 CPU reference's by this fraction.
PASSAGE_PPL_RTOL = {"float32": 1e-3, "float16": 0.05, "bfloat16": 0.1}
CONTINUATION_MAX_CHARS = 2000  # a guard on the result file; the scanner keeps 2048 bytes

TEXT_KEYS = frozenset({"input_ids", "token_type_ids", "attention_mask", "decoder_input_ids"})
IMAGE_KEYS = frozenset({"pixel_values", "pixel_mask"})
# Input files that are not the tokenizer's: a problem with one of them leaves the tokenizer alone.
IMAGE_FILES = frozenset({"preprocessor_config.json", "processor_config.json"})
NOT_TOKENIZER = IMAGE_FILES | {"generation_config.json", "chat_template.json", "chat_template.jinja"}

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
    source: str = "synthetic"  # "passage", "image" or "synthetic"
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
    try:
        import transformers

        with _quiet_transformers(transformers):
            return transformers.AutoImageProcessor.from_pretrained(vetted.dir, local_files_only=True,
                                                                   trust_remote_code=False)
    except ImportError as e:
        raise InputProblem(f"the image processor needs a package this environment lacks: {short(e, 160)}") from e
    except Exception as e:  # noqa: BLE001
        raise InputProblem(f"image processor not loadable: {short(e)}") from e


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
    vocab = text_vocab_size(config)
    if vocab is not None and (max(ids) >= vocab or min(ids) < 0):
        raise InputProblem(f"the tokenizer's ids reach {max(ids)}, outside the model's vocab_size {vocab}")
    return ids


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
    syn = synthetic["pixel_values"]
    if not hasattr(pv, "dim") or pv.dim() != syn.dim() or pv.shape[0] != 1 or pv.shape[1] != syn.shape[1]:
        shape = list(pv.shape) if hasattr(pv, "shape") else type(pv).__name__
        raise InputProblem(f"the image processor made pixel_values {shape}; the model takes {list(syn.shape)}")
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


def tensor_keys(inputs: dict) -> set[str]:
    return {k for k, v in inputs.items() if hasattr(v, "shape")}


def build(torch, family: str, config, model_dir: str, mode: str, synthetic: dict, info: dict) -> Inputs:
    """The forward inputs: real ones in full mode where the model's files allow, else the synthetic ones.

    synthetic/info are harness_tasks.build_inputs' answer for this model; the real inputs keep
    its keys and static shapes (the passage truncated to its length)."""
    if mode != "full":
        return Inputs(synthetic, info, "synthetic (arch mode)")
    keys = tensor_keys(synthetic)
    if "input_ids" in keys and keys <= TEXT_KEYS:
        kind = "text"
    elif "pixel_values" in keys and keys <= IMAGE_KEYS:
        kind = "image"
    else:
        return Inputs(synthetic, info, f"synthetic (inputs {', '.join(sorted(keys))}: real inputs are built for "
                                       "text-only and image-only models)")
    vetted = Vetted(model_dir)
    try:
        if kind == "text":
            tok = load_tokenizer(vetted)
            tensors, new_info, note = passage_inputs(torch, tok, config, synthetic, info)
            return Inputs(tensors, new_info, note, "passage", tok)
        proc = load_image_processor(vetted)
        tensors, new_info, note = image_inputs(torch, proc, synthetic, info)
        return Inputs(tensors, new_info, note, "image")
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
                           "predict English text"), "passage perplexity of the model itself"
        return False, (f"perplexity {_g(ppl)} on the passage is not below {PASSAGE_PPL_MAX:g} (float32 cpu reference "
                       f"{_g(ref)})"), "passage perplexity"
    if ref is not None and math.isfinite(ref) and abs(ppl - ref) > rtol * ref:
        return False, (f"perplexity {_g(ppl)} on the passage is off the float32 cpu reference's {_g(ref)} by more "
                       f"than {rtol:g}"), "passage perplexity vs reference"
    return True, "", ""


def _g(x) -> str:
    return "n/a" if x is None else f"{x:.4g}"
