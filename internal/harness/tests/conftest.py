"""Fixtures for the harness tests: tiny real transformers models in Hub-cache snapshot layout.

Everything runs on CPU with real torch/transformers. Models are built from small
configs (hidden 32-64, 1-2 layers) and, for full mode, saved with save_pretrained
(which writes safetensors in transformers 5.x). Most runs call harness.main()
in-process (imports are shared, so the suite stays fast); a few run the harness
as a subprocess the way the Go runner does (python -I -u -B harness.py ...).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS = os.path.join(HARNESS_DIR, "harness.py")
sys.path.insert(0, HARNESS_DIR)

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
# As in the harness (and its runner): torch must not load torch_tpu, which every environment now has,
# inside `import torch` below. Loaded, it makes this test process's first backward start libtpu, which
# on a host without the GCE metadata server retries its topology keys for many minutes
# (harness_tpu.py's docstring).
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"

import torch  # noqa: E402

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))

REVISION = "0123456789abcdef0123456789abcdef01234567"


def require(missing: str) -> None:
    """End a test that needs something the host lacks (a compiler, a package): a skip, or a
    failure under `make test`, which sets SCANNER_TEST_REQUIRE_ALL=1 (the Go tests read the same
    variable: internal/testenv)."""
    if os.environ.get("SCANNER_TEST_REQUIRE_ALL") == "1":
        pytest.fail(f"{missing} (SCANNER_TEST_REQUIRE_ALL=1: every test must run)")
    pytest.skip(missing)

# Fast flags for every run: few steps, short sequences.
FAST = ["--seq-len", "32", "--new-tokens", "4", "--steps", "2"]


def snapshot_layout(staging: str, root: str, revision: str = REVISION) -> str:
    """Move the files of staging into root/blobs and symlink them from root/snapshots/<revision>/."""
    snap = os.path.join(root, "snapshots", revision)
    blobs = os.path.join(root, "blobs")
    os.makedirs(snap, exist_ok=True)
    os.makedirs(blobs, exist_ok=True)
    for name in sorted(os.listdir(staging)):
        src = os.path.join(staging, name)
        if os.path.isdir(src):
            continue
        blob = os.path.join(blobs, f"blob-{name}")
        shutil.move(src, blob)
        os.symlink(os.path.join("..", "..", "blobs", f"blob-{name}"), os.path.join(snap, name))
    shutil.rmtree(staging, ignore_errors=True)
    return snap


def tiny_config(kind: str):
    import transformers as tf

    if kind == "llama":
        return tf.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                              num_key_value_heads=2, vocab_size=512, max_position_embeddings=128,
                              architectures=["LlamaForCausalLM"])
    if kind == "gpt2":
        return tf.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=512, n_positions=128, bos_token_id=0,
                             eos_token_id=0, architectures=["GPT2LMHeadModel"])
    if kind == "bert":
        return tf.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                             vocab_size=512, max_position_embeddings=128, architectures=["BertForMaskedLM"])
    if kind == "bert-base":
        return tf.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                             vocab_size=512, max_position_embeddings=128, architectures=["BertModel"])
    if kind == "t5":
        return tf.T5Config(d_model=64, d_ff=128, d_kv=16, num_layers=2, num_decoder_layers=2, num_heads=4,
                           vocab_size=512, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
                           architectures=["T5ForConditionalGeneration"])
    if kind == "vit":
        return tf.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                            image_size=32, patch_size=8, num_channels=3, num_labels=10,
                            architectures=["ViTForImageClassification"])
    if kind == "whisper":
        return tf.WhisperConfig(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                                decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=512,
                                num_mel_bins=16, max_source_positions=64, max_target_positions=64,
                                decoder_start_token_id=1, pad_token_id=0, eos_token_id=2, bos_token_id=1,
                                begin_suppress_tokens=None, suppress_tokens=None,
                                architectures=["WhisperForConditionalGeneration"])
    if kind == "wav2vec2":
        return tf.Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                 conv_dim=(16, 16), conv_stride=(5, 4), conv_kernel=(10, 8), num_feat_extract_layers=2,
                                 num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, vocab_size=32,
                                 do_stable_layer_norm=True, feat_extract_norm="layer", architectures=["Wav2Vec2ForCTC"])
    raise KeyError(kind)


def build_model_dir(base, kind: str, full: bool = True, seed: int = 0, mutate=None) -> str:
    """A snapshot dir for a tiny `kind` model: config.json, plus safetensors weights when full."""
    import transformers as tf

    cfg = tiny_config(kind)
    if mutate:
        mutate(cfg)
    staging = os.path.join(str(base), f"stage-{kind}")
    os.makedirs(staging, exist_ok=True)
    if full:
        torch.manual_seed(seed)
        cls = getattr(tf, cfg.architectures[0])
        model = cls(cfg).eval()
        model.save_pretrained(staging)
        assert any(n.endswith(".safetensors") for n in os.listdir(staging)), os.listdir(staging)
    else:
        cfg.save_pretrained(staging)
    return snapshot_layout(staging, os.path.join(str(base), f"models--test--{kind}"))


def write_config(base, name: str, cfg: dict) -> str:
    staging = os.path.join(str(base), f"stage-{name}")
    os.makedirs(staging, exist_ok=True)
    with open(os.path.join(staging, "config.json"), "w") as fh:
        json.dump(cfg, fh)
    return snapshot_layout(staging, os.path.join(str(base), f"models--test--{name}"))


def harness_args(model_dir, result_file, *, target="cpu", mode="full", task="", model_id="test/model", extra=()):
    return ["--model-dir", str(model_dir), "--model-id", model_id, "--revision", REVISION, "--target", target,
            "--mode", mode, "--task", task, "--result-file", str(result_file), *FAST, *extra]


@pytest.fixture
def run_inproc(tmp_path):
    """Run harness.main() in this process; returns (exit code, result dict)."""
    import harness

    counter = {"n": 0}

    def _run(model_dir, **kw):
        counter["n"] += 1
        out = tmp_path / f"result-{counter['n']}.json"
        code = harness.main(harness_args(model_dir, out, **kw))
        with open(out) as fh:
            return code, json.load(fh)

    return _run


@pytest.fixture
def run_subproc(tmp_path):
    """Run harness.py as the Go runner does: a fresh isolated interpreter."""
    counter = {"n": 0}

    def _run(model_dir, env=None, **kw):
        counter["n"] += 1
        out = tmp_path / f"result-sp-{counter['n']}.json"
        e = {k: v for k, v in os.environ.items() if k != "HARNESS_TEST_INJECT"}
        e.update(env or {})
        proc = subprocess.run([sys.executable, "-I", "-u", "-B", HARNESS, *harness_args(model_dir, out, **kw)],
                              env=e, capture_output=True, text=True, timeout=600)
        res = None
        if out.exists():
            with open(out) as fh:
                res = json.load(fh)
        return proc, res

    return _run


def assert_contract_shape(res: dict) -> None:
    """The Result JSON keys of shared/CONTRACT.md, with nulls for unmeasured metrics."""
    for key in ("target", "status", "stage", "failure_class", "op", "reason", "signature", "message", "mode",
                "revision", "tested_at", "duration_s", "runtime", "metrics", "repro"):
        assert key in res, key
    for key in ("python", "torch", "transformers", "torch_tpu", "harness", "device", "device_count"):
        assert key in res["runtime"], key
    for key in ("load_s", "first_forward_s", "forward_ms", "compile_s", "tokens_per_s", "peak_mem_bytes",
                "max_abs_diff", "top1_agreement"):
        assert key in res["metrics"], key
    assert res["status"] in ("pass", "fail", "oom", "timeout", "crash", "skipped", "error")
    stages = ("env", "config", "load", "forward", "numerics", "compile", "generate")
    assert res["stage"] is None or res["stage"] in stages
    for s in res.get("stages", []):
        assert s["stage"] in stages
    if res["status"] == "skipped":
        assert res["reason"]
    if res["status"] in ("fail", "oom", "error"):
        assert res["failure_class"] and res["signature"] and res["message"]
