"""Task-support table, coverage of a listing, and config shaping for arch mode."""

import json
import os
import subprocess
import sys

import harness_inputs
import harness_synthetic_inputs
import harness_tasks
from conftest import HARNESS_DIR, tiny_config


def test_support_table_covers_the_issue_tasks():
    table = harness_tasks.support_table()
    for tag in ("text-generation", "feature-extraction", "fill-mask", "sentence-similarity", "text-classification",
                "token-classification", "text2text-generation", "translation", "summarization",
                "image-classification", "image-feature-extraction", "automatic-speech-recognition",
                # the issue's list: vision-language, contrastive and detection, audio and video, the rest of text
                "image-text-to-text", "image-to-text", "visual-question-answering", "document-question-answering",
                "video-text-to-text", "visual-document-retrieval", "zero-shot-image-classification",
                "zero-shot-object-detection", "object-detection", "image-segmentation", "mask-generation",
                "depth-estimation", "keypoint-detection", "image-to-image", "text-to-audio", "text-to-speech",
                "audio-text-to-text", "audio-to-audio", "video-classification", "multiple-choice",
                "table-question-answering", "text-ranking", "time-series-forecasting", "any-to-any"):
        assert tag in table, tag
    assert table["text-generation"]["generate"] is True
    assert table["image-text-to-text"]["generate"] is True
    assert table["fill-mask"]["generate"] is False
    assert table["object-detection"]["generate"] is False
    assert set(table["automatic-speech-recognition"]["families"]) == {"speech-seq2seq", "speech-ctc"}


def test_table_answers_for_every_transformers_pipeline_task():
    """Every task of transformers' own pipelines (and its aliases) is supported, or unsupported with a reason;
    every mapping the table names exists in modeling_auto, and every Auto class in transformers."""
    import transformers
    from transformers.models.auto import modeling_auto
    from transformers.pipelines import SUPPORTED_TASKS, TASK_ALIASES

    for task in list(SUPPORTED_TASKS) + list(TASK_ALIASES):
        assert task in harness_tasks.TASK_FAMILIES or harness_tasks.UNSUPPORTED.get(task), task
    for mapping, task in harness_tasks.TABLE["mappings"]:
        assert isinstance(getattr(modeling_auto, mapping, None), dict), mapping
        assert task in harness_tasks.TASK_FAMILIES, (mapping, task)
    autos = {a for spec in harness_tasks.FAMILIES.values() for a in spec["auto"]} | {
        a for spec in harness_tasks.TABLE["tasks"].values() for a in spec.get("auto", ())}
    for name in sorted(autos):
        assert hasattr(transformers, name), name
    assert not set(harness_tasks.TASK_FAMILIES) & set(harness_tasks.UNSUPPORTED)


def test_every_family_has_inputs_and_outputs():
    import harness_numerics

    for name, spec in harness_tasks.FAMILIES.items():
        if name == "speech":  # resolved to speech-seq2seq or speech-ctc by the config
            continue
        assert name in harness_synthetic_inputs.BUILDERS, name
        assert spec["outputs"] and all(kind in harness_numerics.KINDS for _, kind in spec["outputs"]), name


def test_remote_code_table_examples():
    """The harness applies remote_code.json as the scanner's preflight does (internal/harness/remotecode_test.go
    checks the same examples on the Go side)."""
    remote = plain = 0
    for ex in harness_tasks.REMOTE_CODE["examples"]:
        assert (harness_tasks.needs_remote_code(ex["config"], ex.get("tags") or ()) or "") == ex["remote"], ex
        remote, plain = remote + bool(ex["remote"]), plain + (not ex["remote"])
    assert remote and plain
    # written here independently of the file: auto_map beside a model_type transformers implements natively
    assert (
        harness_tasks.needs_remote_code({"model_type": "llama", "auto_map": {"AutoModel": "m.M"}})
        == "config.json has auto_map"
    )
    llama = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "auto_map": {"AutoModel": "m.M"}}
    assert harness_tasks.task_support("text-generation", "transformers", config=llama)["reason"] == "remote_code"


def test_library_rule_answers_the_shared_examples():
    """tasks.json "libraries" is the scanner's table too: Go's TestTransformersModel checks the same worked
    examples against TransformersModel, so the harness and preflight cannot disagree."""
    examples = harness_tasks.TABLE["library_examples"]
    assert len(examples) >= 4
    for e in examples:
        cfg = {"model_type": "bert"} if e["model_type"] else {}
        assert harness_tasks.library_supported(e["library"], cfg) is e["supported"], e
        assert (harness_tasks.task_support("feature-extraction", e["library"], ["BertModel"], cfg)["reason"]
                == "unsupported_library") is (not e["supported"]), e


def test_task_rule_answers_the_shared_examples():
    """tasks.json "task_examples" are Go's too (TestTaskExamples: SupportedTask, then ConfigRefusal), so the
    scanner's preflight and the harness say the same of each; a family's "requires" is one rule for both."""
    examples = harness_tasks.TABLE["task_examples"]
    refused = 0
    for e in examples:
        sup = harness_tasks.task_support(e["tag"], "transformers", e["architectures"], e["config"])
        assert sup["supported"] is e["supported"], (e, sup)
        family = harness_tasks.TASK_FAMILIES.get(e["tag"])
        if family is not None and harness_tasks.config_refusal(e["tag"], family, e["config"]):
            refused += 1
            assert sup["reason"] == "unsupported_task", (e, sup)
    assert len(examples) >= 10 and refused >= 2


def test_mapped_architectures_are_what_transformers_maps():
    """tasks.json "mapped_architectures" is how preflight, which cannot ask transformers, knows what the harness's
    first rule (transformers' own mappings) says of a model without a pipeline tag: it must be exactly the
    architectures of the installed transformers whose task the suffixes alone would not give. When transformers
    is upgraded, paste ``python harness_tasks.py mapped`` into tasks.json."""
    want = harness_tasks.mapped_architectures()
    table = harness_tasks.TABLE["mapped_architectures"]
    assert table == want, sorted(set(want.items()) ^ set(table.items()))
    # it holds both kinds: no suffix at all, and a ...ForConditionalGeneration the config rule would refuse
    assert any(harness_tasks._suffix_task(a) is None for a in want)
    assert any(a.endswith("ForConditionalGeneration") for a in want)
    for arch, task in want.items():
        assert harness_tasks.infer_task([arch], {"model_type": "x"}) == task, arch


def test_a_decoder_only_conditional_generation_needs_a_mapping_or_towers():
    # the disagreement the shared examples settle: preflight accepted it, the harness refused it
    assert harness_tasks.infer_task(["OddLMForConditionalGeneration"], {"model_type": "odd"}) is None
    enc_dec = harness_tasks.infer_task(["OddLMForConditionalGeneration"], {"is_encoder_decoder": True})
    assert enc_dec == "text2text-generation"
    assert harness_tasks.infer_task(["OddLMForConditionalGeneration"], {"vision_config": {}}) == "image-text-to-text"
    assert harness_tasks.infer_task(["LlavaForConditionalGeneration"], {"model_type": "llava"}) == "image-text-to-text"


def test_sentence_transformers_without_model_type_is_refused():
    # the disagreement of issue 39: the harness accepted it, the scanner's preflight refused it
    sup = harness_tasks.task_support("sentence-similarity", "sentence-transformers", ["BertModel"], {})
    assert sup["reason"] == "unsupported_library" and "model_type" in sup["note"], sup
    assert harness_tasks.task_support("sentence-similarity", "sentence-transformers", ["BertModel"],
                           {"model_type": "bert"})["supported"]


def test_task_support_entries():
    assert harness_tasks.task_support("text-generation", "transformers", ["LlamaForCausalLM"])["supported"]
    assert harness_tasks.task_support("sentence-similarity", "sentence-transformers", ["BertModel"],
                           {"model_type": "bert"})["family"] == "text-encoder"
    assert harness_tasks.task_support("text-to-image", "diffusers", None)["reason"] == "unsupported_library"
    vlm = harness_tasks.task_support("image-text-to-text", "transformers", ["LlavaForConditionalGeneration"])
    assert vlm["family"] == "vlm"
    assert harness_tasks.task_support("text-to-image", "transformers", None)["reason"] == "unsupported_task"
    assert "diffusers" in harness_tasks.task_support("text-to-image", "transformers", None)["note"]
    # no library name: transformers' only with a config.json model_type (as preflight)
    assert harness_tasks.task_support("fill-mask", "", ["BertForMaskedLM"])["reason"] == "unsupported_library"
    assert harness_tasks.task_support("fill-mask", "", ["BertForMaskedLM"], {"model_type": "bert"})["supported"]
    # no pipeline tag: inferred from the architecture
    assert harness_tasks.task_support("", "transformers", ["GPT2LMHeadModel"])["task"] == "text-generation"
    assert (
        harness_tasks.task_support(None, "transformers", ["ViTForImageClassification"])["task"]
        == "image-classification"
    )
    whisper = harness_tasks.task_support(
        "automatic-speech-recognition",
        "transformers",
        ["WhisperForConditionalGeneration"],
        {"is_encoder_decoder": True, "num_mel_bins": 80},
    )
    assert whisper["family"] == "speech-seq2seq"
    assert (
        harness_tasks.task_support("automatic-speech-recognition", "transformers", ["Wav2Vec2ForCTC"])["family"]
        == "speech-ctc"
    )


def test_coverage_share_and_script(tmp_path):
    listing = [
        {"id": "a/llm", "pipeline_tag": "text-generation", "library_name": "transformers",
         "config": {"architectures": ["LlamaForCausalLM"]}, "downloads": 700},
        {"id": "b/emb", "pipeline_tag": "sentence-similarity", "library_name": "sentence-transformers",
         "config": {"architectures": ["BertModel"], "model_type": "bert"}, "downloads": 200},
        {"id": "c/sd", "pipeline_tag": "text-to-image", "library_name": "diffusers", "downloads": 50},
        {"id": "d/gen", "pipeline_tag": "text-to-3d", "library_name": "transformers", "downloads": 50},
    ]
    rep = harness_tasks.coverage(listing)
    assert (rep["models"], rep["covered"]) == (4, 2)
    assert rep["share"] == 0.5
    assert abs(rep["download_share"] - 0.9) < 1e-9
    assert rep["missed_by_reason"] == {"unsupported_library": 1, "unsupported_task": 1}
    assert rep["transformers_models"] == 3 and rep["transformers_share"] == 2 / 3
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
    changes = harness_tasks.reduce_layers(cfg, 2)
    assert cfg.num_hidden_layers == 2
    assert len(cfg.layer_types) == 2
    assert any("num_hidden_layers 6->2" in c for c in changes)

    t5 = tiny_config("t5")
    t5.num_layers, t5.num_decoder_layers = 8, 6
    harness_tasks.reduce_layers(t5, 1)
    assert (t5.num_layers, t5.num_decoder_layers) == (1, 1)

    whisper = tiny_config("whisper")
    whisper.encoder_layers, whisper.decoder_layers = 12, 12
    harness_tasks.reduce_layers(whisper, 2)
    assert (whisper.encoder_layers, whisper.decoder_layers) == (2, 2)


def test_reduce_layers_reaches_nested_configs():
    import transformers as tf

    cfg = tf.LlavaConfig(text_config={"model_type": "llama", "num_hidden_layers": 8},
                         vision_config={"model_type": "clip_vision_model", "num_hidden_layers": 8})
    harness_tasks.reduce_layers(cfg, 2)
    assert cfg.text_config.num_hidden_layers == 2
    assert cfg.vision_config.num_hidden_layers == 2


def test_inputs_are_static_and_follow_the_config():
    import torch

    cfg = tiny_config("llama")
    inputs, info = harness_synthetic_inputs.build_inputs(
        torch, "causal-lm", cfg, {"input_ids", "attention_mask", "use_cache"}, 64, 16, 0
    )
    assert list(inputs["input_ids"].shape) == [1, 64]
    assert inputs["use_cache"] is False
    assert info["copy_from"] == 32 and torch.equal(inputs["input_ids"][0, :32], inputs["input_ids"][0, 32:64])
    # the position table (128) leaves room for the generated tokens
    inputs, _ = harness_synthetic_inputs.build_inputs(torch, "causal-lm", cfg, set(), 500, 16, 0)
    assert inputs["input_ids"].shape[1] == 112
    vit = tiny_config("vit")
    inputs, _ = harness_synthetic_inputs.build_inputs(torch, "vision", vit, set(), 128, 16, 0)
    assert list(inputs["pixel_values"].shape) == [1, 3, 32, 32]
    whisper = tiny_config("whisper")
    inputs, _ = harness_synthetic_inputs.build_inputs(torch, "speech-seq2seq", whisper, set(), 128, 4, 0)
    assert list(inputs["input_features"].shape) == [1, 16, 128]
    inputs, _ = harness_synthetic_inputs.build_inputs(torch, "speech-ctc", tiny_config("wav2vec2"), set(), 128, 4, 0)
    assert list(inputs["input_values"].shape) == [1, 16000]


def test_task_from_architectures_uses_transformers_mappings():
    cases = {
        "CLIPModel": "zero-shot-image-classification",
        "SamModel": "mask-generation",
        "DetrForObjectDetection": "object-detection",
        "OwlViTForObjectDetection": "zero-shot-object-detection",
        "LlavaForConditionalGeneration": "image-text-to-text",
        "VitsModel": "text-to-audio",
        "SegformerForSemanticSegmentation": "image-segmentation",
        "DPTForDepthEstimation": "depth-estimation",
        "TapasForQuestionAnswering": "table-question-answering",
        "LayoutLMv3ForQuestionAnswering": "document-question-answering",
        "PatchTSTForPrediction": "time-series-forecasting",
        "BertForMultipleChoice": "multiple-choice",
        "WhisperForConditionalGeneration": "automatic-speech-recognition",
        "BertForQuestionAnswering": "question-answering",
        "T5ForConditionalGeneration": "text2text-generation",
        "GPT2LMHeadModel": "text-generation",
    }
    for arch, task in cases.items():
        assert harness_tasks.infer_task([arch]) == task, arch
    # refined by the config: an audio-only multimodal LM, a bare vision backbone
    assert (
        harness_tasks.infer_task(["Qwen2AudioForConditionalGeneration"], {"audio_config": {}, "text_config": {}})
        == "audio-text-to-text"
    )
    assert harness_tasks.infer_task(["ViTModel"], {"num_channels": 3, "image_size": 224}) == "image-feature-extraction"
    assert harness_tasks.infer_task(["StableDiffusionSafetyChecker"]) is None


def test_families_follow_the_config():
    assert harness_tasks.resolve_family("feature-extraction", {"architectures": ["CLIPModel"], "text_config": {},
                                                    "vision_config": {}})[1] == "contrastive"
    assert (
        harness_tasks.resolve_family("feature-extraction", {"conv_dim": [8], "feat_extract_norm": "group"})[1]
        == "speech-encoder"
    )
    assert harness_tasks.resolve_family("audio-classification", {"conv_dim": [8]})[1] == "speech-ctc"
    assert (
        harness_tasks.resolve_family("table-question-answering", {"model_type": "bart", "is_encoder_decoder": True})[1]
        == "seq2seq"
    )
    assert (
        harness_tasks.resolve_family("document-question-answering", {"model_type": "vision-encoder-decoder"})[1]
        == "vlm"
    )
    task, family, note = harness_tasks.resolve_family("audio-to-audio", {"model_type": "speecht5"})
    assert family is None and "not an audio codec" in note
    # issue 41: X-Codec 2 quantizes by finite scalar quantization (quantization_levels), no codebook: a codec
    assert (
        harness_tasks.resolve_family("audio-to-audio", {"model_type": "xcodec2", "quantization_levels": [4] * 8})[1]
        == "codec"
    )
    # issue 41: an audio language model tagged automatic-speech-recognition (Qwen3-ASR, Granite Speech) gets audio and
    # text inputs, not a waveform
    asr_lm = {"model_type": "qwen3_asr", "text_config": {}, "audio_config": {"num_mel_bins": 128}, "audio_token_id": 7}
    assert harness_tasks.resolve_family("automatic-speech-recognition", asr_lm)[1] == "audio-lm"
    assert (
        harness_tasks.resolve_family(
            "automatic-speech-recognition",
            {"model_type": "granite_speech", "text_config": {}, "encoder_config": {}, "audio_token_index": 7},
        )[1]
        == "audio-lm"
    )
    assert (
        harness_tasks.resolve_family("automatic-speech-recognition", {"model_type": "wav2vec2", "conv_dim": [8]})[1]
        == "speech-ctc"
    )
    # CLAP under audio-classification is zero-shot against labels; a wav2vec2 classifier stays a speech model
    clap = {"model_type": "clap", "text_config": {}, "audio_config": {}, "projection_dim": 512}
    assert harness_tasks.resolve_family("audio-classification", clap)[1] == "audio-contrastive"
    assert harness_tasks.resolve_family("audio-classification", {"model_type": "qwen2_audio", "text_config": {},
                                                      "audio_config": {}})[1] == "speech-ctc"
    task, family, note = harness_tasks.resolve_family("text-to-image", {})
    assert family is None and "'text-to-image' is not supported" in note and "diffusers" in note


def test_incomplete_subconfigs_are_named():
    assert (
        harness_tasks.check_subconfigs({"vision_config": {"model_type": "clip_vision_model"}, "text_config": None})
        is None
    )
    assert "vision_config is a str" in harness_tasks.check_subconfigs({"vision_config": "clip"})
    assert harness_tasks.check_subconfigs({"audio_config": {}}) is None  # the class's defaults
    assert "text_config is a list" in harness_tasks.check_subconfigs({"text_config": [1]})


def test_refused_config_fields_are_named():
    msg = "Validation error for field 'vocab_size':\n    TypeError: Field 'vocab_size' expected int, got NoneType"
    raw = {"vocab_size": 5, "text_config": {"vocab_size": None}, "vision_config": {"image_size": 32}}
    assert harness_tasks.name_config_field(raw, msg) == "config.json: text_config.vocab_size is missing (null)"
    assert (
        harness_tasks.name_config_field({"vocab_size": "x"}, msg)
        == "config.json: vocab_size is 'x', which transformers refuses"
    )
    assert harness_tasks.name_config_field({"hidden_size": 4}, msg) is None  # the field is nowhere in config.json
    assert harness_tasks.name_config_field(raw, "some other error") is None


def test_missing_input_fields_are_named():
    import torch
    import transformers as tf

    clip = tf.CLIPConfig(vision_config={"image_size": 32, "patch_size": 8})
    clip.vision_config.image_size = None
    try:
        harness_synthetic_inputs.check_inputs(torch, "contrastive", clip)
    except harness_inputs.IncompleteConfig as e:
        assert e.field == "vision_config.image_size" and "vision_config.image_size is missing" in str(e)
    else:
        raise AssertionError("no IncompleteConfig")
    ts = tf.TimeSeriesTransformerConfig(prediction_length=None)
    try:
        harness_synthetic_inputs.check_inputs(torch, "time-series", ts, accepted={"past_values", "past_time_features"})
    except harness_inputs.IncompleteConfig as e:
        assert e.field == "context_length"
    else:
        raise AssertionError("no IncompleteConfig")


def test_reduce_layers_keeps_backbone_features_valid():
    import transformers as tf

    # Depth Anything: a 12-layer DINOv2 backbone exposing layers 9-12 to a 4-stage neck
    cfg = tf.DepthAnythingConfig(backbone_config={"model_type": "dinov2", "num_hidden_layers": 12,
                                                  "out_indices": [9, 10, 11, 12], "hidden_size": 32,
                                                  "num_attention_heads": 2})
    changes = harness_tasks.reduce_layers(cfg, 2)
    bb = cfg.backbone_config
    assert bb.num_hidden_layers == 4 and bb.out_indices == [1, 2, 3, 4]
    assert bb.out_features == ["stage1", "stage2", "stage3", "stage4"]
    assert any("out_indices [9, 10, 11, 12]->[1, 2, 3, 4]" in c for c in changes)
    # a staged backbone (Swin) keeps its stages; its per-stage depths are cut
    swin = tf.SwinConfig(depths=[2, 2, 6, 2], out_features=["stage2", "stage3", "stage4"])
    harness_tasks.reduce_layers(swin, 1)
    assert swin.depths == [1, 1, 1, 1] and swin.num_layers == 4 and swin.out_features == ["stage2", "stage3", "stage4"]
    # SAM: global attention layers kept where they still exist
    sam = tf.SamVisionConfig(num_hidden_layers=12, global_attn_indexes=[2, 5, 8, 11])
    harness_tasks.reduce_layers(sam, 2)
    assert sam.num_hidden_layers == 2 and sam.global_attn_indexes == [1]


def test_random_forwards_are_made_deterministic():
    import transformers as tf

    vits = tf.VitsConfig()
    assert vits.noise_scale > 0
    changes = harness_tasks.make_deterministic(vits)
    assert vits.noise_scale == 0.0 and vits.noise_scale_duration == 0.0
    assert any(c.startswith("noise_scale ") for c in changes)
    assert harness_tasks.make_deterministic(tiny_config("llama")) == []
