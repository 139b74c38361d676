"""Task-support table, coverage of a listing, and config shaping for arch mode."""

import json
import os
import subprocess
import sys

import harness_tasks as ht
from conftest import HARNESS_DIR, tiny_config


def test_support_table_covers_the_issue_tasks():
    table = ht.support_table()
    for tag in ("text-generation", "feature-extraction", "fill-mask", "sentence-similarity", "text-classification",
                "token-classification", "text2text-generation", "translation", "summarization",
                "image-classification", "image-feature-extraction", "automatic-speech-recognition"):
        assert tag in table, tag
    assert table["text-generation"]["generate"] is True
    assert table["fill-mask"]["generate"] is False
    assert set(table["automatic-speech-recognition"]["families"]) == {"speech-seq2seq", "speech-ctc"}


def test_task_support_entries():
    assert ht.task_support("text-generation", "transformers", ["LlamaForCausalLM"])["supported"]
    assert ht.task_support("sentence-similarity", "sentence-transformers", ["BertModel"])["family"] == "text-encoder"
    assert ht.task_support("text-to-image", "diffusers", None)["reason"] == "unsupported_library"
    assert ht.task_support("image-text-to-text", "transformers", ["LlavaForConditionalGeneration"])["reason"] == \
        "unsupported_task"
    # no pipeline tag: inferred from the architecture
    assert ht.task_support("", "transformers", ["GPT2LMHeadModel"])["task"] == "text-generation"
    assert ht.task_support(None, "transformers", ["ViTForImageClassification"])["task"] == "image-classification"
    whisper = ht.task_support("automatic-speech-recognition", "transformers", ["WhisperForConditionalGeneration"],
                              {"is_encoder_decoder": True, "num_mel_bins": 80})
    assert whisper["family"] == "speech-seq2seq"
    assert ht.task_support("automatic-speech-recognition", "transformers", ["Wav2Vec2ForCTC"])["family"] == "speech-ctc"


def test_coverage_share_and_script(tmp_path):
    listing = [
        {"id": "a/llm", "pipeline_tag": "text-generation", "library_name": "transformers",
         "config": {"architectures": ["LlamaForCausalLM"]}, "downloads": 700},
        {"id": "b/emb", "pipeline_tag": "sentence-similarity", "library_name": "sentence-transformers",
         "config": {"architectures": ["BertModel"]}, "downloads": 200},
        {"id": "c/sd", "pipeline_tag": "text-to-image", "library_name": "diffusers", "downloads": 50},
        {"id": "d/vlm", "pipeline_tag": "image-text-to-text", "library_name": "transformers",
         "config": {"architectures": ["Qwen2VLForConditionalGeneration"]}, "downloads": 50},
    ]
    rep = ht.coverage(listing)
    assert (rep["models"], rep["covered"]) == (4, 2)
    assert rep["share"] == 0.5
    assert abs(rep["download_share"] - 0.9) < 1e-9
    assert rep["missed_by_reason"] == {"unsupported_library": 1, "unsupported_task": 1}
    path = tmp_path / "listing.json"
    path.write_text(json.dumps(listing))
    out = subprocess.run([sys.executable, os.path.join(HARNESS_DIR, "harness_tasks.py"), "coverage", str(path)],
                         capture_output=True, text=True, check=True)
    assert "covered 2/4 models (50.0%)" in out.stdout
    assert "download-weighted coverage 90.0%" in out.stdout


def test_reduce_layers_cuts_counts_and_per_layer_lists():
    import transformers as tf

    cfg = tf.Qwen2Config(num_hidden_layers=6, hidden_size=64, num_attention_heads=4, intermediate_size=128,
                         layer_types=["full_attention"] * 6)
    changes = ht.reduce_layers(cfg, 2)
    assert cfg.num_hidden_layers == 2
    assert len(cfg.layer_types) == 2
    assert any("num_hidden_layers 6->2" in c for c in changes)

    t5 = tiny_config("t5")
    t5.num_layers, t5.num_decoder_layers = 8, 6
    ht.reduce_layers(t5, 1)
    assert (t5.num_layers, t5.num_decoder_layers) == (1, 1)

    whisper = tiny_config("whisper")
    whisper.encoder_layers, whisper.decoder_layers = 12, 12
    ht.reduce_layers(whisper, 2)
    assert (whisper.encoder_layers, whisper.decoder_layers) == (2, 2)


def test_reduce_layers_reaches_nested_configs():
    import transformers as tf

    cfg = tf.LlavaConfig(text_config={"model_type": "llama", "num_hidden_layers": 8},
                         vision_config={"model_type": "clip_vision_model", "num_hidden_layers": 8})
    ht.reduce_layers(cfg, 2)
    assert cfg.text_config.num_hidden_layers == 2
    assert cfg.vision_config.num_hidden_layers == 2


def test_inputs_are_static_and_follow_the_config():
    import torch

    cfg = tiny_config("llama")
    inputs, info = ht.build_inputs(torch, "causal-lm", cfg, {"input_ids", "attention_mask", "use_cache"}, 64, 16, 0)
    assert list(inputs["input_ids"].shape) == [1, 64]
    assert inputs["use_cache"] is False
    assert info["copy_from"] == 32 and torch.equal(inputs["input_ids"][0, :32], inputs["input_ids"][0, 32:64])
    # the position table (128) leaves room for the generated tokens
    inputs, _ = ht.build_inputs(torch, "causal-lm", cfg, set(), 500, 16, 0)
    assert inputs["input_ids"].shape[1] == 112
    vit = tiny_config("vit")
    inputs, _ = ht.build_inputs(torch, "vision", vit, set(), 128, 16, 0)
    assert list(inputs["pixel_values"].shape) == [1, 3, 32, 32]
    whisper = tiny_config("whisper")
    inputs, _ = ht.build_inputs(torch, "speech-seq2seq", whisper, set(), 128, 4, 0)
    assert list(inputs["input_features"].shape) == [1, 16, 128]
    inputs, _ = ht.build_inputs(torch, "speech-ctc", tiny_config("wav2vec2"), set(), 128, 4, 0)
    assert list(inputs["input_values"].shape) == [1, 16000]
