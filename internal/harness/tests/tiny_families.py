"""Tiny configs, one or more per task family, built from transformers' own config classes.

Sizes are the smallest the classes accept (hidden 16-32, one or two layers, small images), so
that a model builds and runs in well under a second on CPU. TINY maps a name to (pipeline tag,
factory); the factory returns the config (or, where the file's own layout matters, the
config.json dict). test_families.py runs each through the harness.
"""

from __future__ import annotations

TXT = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
           vocab_size=256, max_position_embeddings=256)
BERT = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64, vocab_size=256,
            max_position_embeddings=128)
CLIP_VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, image_size=32,
                   patch_size=8)
CLIP_TEXT = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, vocab_size=256,
                 max_position_embeddings=32)


def _tf():
    import transformers

    return transformers


def clip():
    return _tf().CLIPConfig(text_config=CLIP_TEXT, vision_config=CLIP_VISION, projection_dim=16,
                            architectures=["CLIPModel"])


def siglip():
    return _tf().SiglipConfig(text_config=dict(CLIP_TEXT, max_position_embeddings=16), vision_config=CLIP_VISION,
                              architectures=["SiglipModel"])


def owlvit():
    return _tf().OwlViTConfig(text_config=dict(CLIP_TEXT, max_position_embeddings=16),
                              vision_config=dict(CLIP_VISION, image_size=32), projection_dim=32,
                              architectures=["OwlViTForObjectDetection"])


def _resnet(out=("stage1", "stage2", "stage3", "stage4")):
    return dict(model_type="resnet", embedding_size=8, hidden_sizes=[8, 8, 16, 16], depths=[1, 1, 1, 1],
                out_features=list(out), layer_type="basic")


def detr():
    return _tf().DetrConfig(use_timm_backbone=False, backbone_config=_resnet(), d_model=32, encoder_layers=1,
                            decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
                            encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=8, num_labels=4,
                            architectures=["DetrForObjectDetection"])


def detr_timm():
    """facebook/detr-resnet-50's config.json layout (use_timm_backbone, a timm backbone by name,
    use_pretrained_backbone true, no backbone_config), as a dict (the file as written; transformers 5 would save
    it as a backbone_config), with a timm resnet18 for speed: transformers builds a TimmBackbone, which needs timm."""
    return dict(model_type="detr", use_timm_backbone=True, backbone="resnet18", use_pretrained_backbone=True,
                num_channels=3, dilation=False, backbone_config=None, d_model=32, encoder_layers=1, decoder_layers=1,
                encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                num_queries=8, id2label={str(i): f"L{i}" for i in range(4)}, architectures=["DetrForObjectDetection"])


def clipseg():
    """CIDAS/clipseg-rd64-refined's layout: a CLIP text and vision tower, a decoder reading vision layers
    extract_layers [3, 6, 9] of 12 (arch mode cuts the tower: the harness keeps 3 layers and re-indexes)."""
    return _tf().CLIPSegConfig(
        text_config=dict(CLIP_TEXT, max_position_embeddings=77),
        vision_config=dict(CLIP_VISION, num_hidden_layers=12), projection_dim=16, reduce_dim=16,
        extract_layers=[3, 6, 9], decoder_num_attention_heads=2, decoder_intermediate_size=32,
        architectures=["CLIPSegForImageSegmentation"])


def clap(fusion=True):
    """laion/clap-htsat-fused's layout: a HTSAT (Swin) audio tower with fusion, a RoBERTa text tower."""
    return _tf().ClapConfig(
        audio_config=dict(spec_size=64, num_mel_bins=16, window_size=4, patch_size=4, patch_stride=[4, 4],
                          depths=[1, 1], num_attention_heads=[1, 2], patch_embeds_hidden_size=16, hidden_size=32,
                          projection_hidden_size=32, enable_fusion=fusion, projection_dim=16),
        text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                         vocab_size=256, max_position_embeddings=64, projection_hidden_size=32),
        projection_dim=16, architectures=["ClapModel"])


def segformer():
    return _tf().SegformerConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
                                 num_attention_heads=[1, 2], patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2],
                                 decoder_hidden_size=32, num_labels=3, image_size=32,
                                 architectures=["SegformerForSemanticSegmentation"])


def sam():
    return _tf().SamConfig(
        vision_config=dict(hidden_size=32, output_channels=16, num_hidden_layers=1, num_attention_heads=2,
                           image_size=64, patch_size=8, window_size=4, global_attn_indexes=[0], mlp_dim=64,
                           num_pos_feats=8),
        prompt_encoder_config=dict(hidden_size=16, image_size=64, patch_size=8, mask_input_channels=4),
        mask_decoder_config=dict(hidden_size=16, mlp_dim=32, num_hidden_layers=1, num_attention_heads=2,
                                 iou_head_hidden_dim=16),
        architectures=["SamModel"])


def dpt():
    return _tf().DPTConfig(
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=64,
        image_size=32,
        patch_size=8,
        backbone_out_indices=[0, 1, 2, 3],
        neck_hidden_sizes=[8, 8, 16, 16],
        fusion_hidden_size=16,
        head_in_index=-1,
        architectures=["DPTForDepthEstimation"],
    )


def superpoint():
    return _tf().SuperPointConfig(encoder_hidden_sizes=[8, 8, 16, 16], decoder_hidden_size=32, keypoint_decoder_dim=65,
                                  descriptor_decoder_dim=32, max_keypoints=16,
                                  architectures=["SuperPointForKeypointDetection"])


def swin2sr():
    return _tf().Swin2SRConfig(image_size=16, patch_size=1, embed_dim=16, depths=[1], num_heads=[2], window_size=4,
                               upscale=2, architectures=["Swin2SRForImageSuperResolution"])


def videomae():
    return _tf().VideoMAEConfig(image_size=32, patch_size=8, num_frames=4, tubelet_size=2, hidden_size=32,
                                num_hidden_layers=1, num_attention_heads=4, intermediate_size=64, num_labels=3,
                                architectures=["VideoMAEForVideoClassification"])


def llava():
    return _tf().LlavaConfig(text_config=dict(model_type="llama", **TXT),
                             vision_config=dict(model_type="clip_vision_model", **CLIP_VISION), image_token_id=250,
                             architectures=["LlavaForConditionalGeneration"])


def qwen2_vl():
    return _tf().Qwen2VLConfig(
        text_config=dict(TXT, model_type="qwen2_vl_text", rope_scaling={"type": "mrope", "mrope_section": [1, 1, 2]},
                         bos_token_id=0, eos_token_id=1),
        vision_config=dict(depth=1, embed_dim=32, hidden_size=32, num_heads=4, mlp_ratio=2, patch_size=4,
                           spatial_merge_size=2, temporal_patch_size=2, image_size=16),
        image_token_id=250, video_token_id=251, vision_start_token_id=252, vision_end_token_id=253,
        architectures=["Qwen2VLForConditionalGeneration"])


def blip():
    return _tf().BlipConfig(text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                             num_attention_heads=4, vocab_size=256, max_position_embeddings=64,
                                             encoder_hidden_size=32, bos_token_id=1, pad_token_id=0,
                                             sep_token_id=2, eos_token_id=2),
                            vision_config=dict(CLIP_VISION), projection_dim=16,
                            architectures=["BlipForConditionalGeneration"])


def vilt():
    return _tf().ViltConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                            vocab_size=256, max_position_embeddings=40, image_size=32, patch_size=8,
                            max_image_length=-1, num_labels=5, architectures=["ViltForQuestionAnswering"])


def layoutlmv3():
    return _tf().LayoutLMv3Config(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                                  vocab_size=256, max_position_embeddings=130, input_size=32, patch_size=8,
                                  max_2d_position_embeddings=1024, coordinate_size=4, shape_size=8,
                                  architectures=["LayoutLMv3ForQuestionAnswering"])


def colpali():
    pali = dict(model_type="paligemma", text_config=dict(model_type="gemma", hidden_size=32, intermediate_size=64,
                                                        num_hidden_layers=1, num_attention_heads=4,
                                                        num_key_value_heads=1, head_dim=8, vocab_size=256),
                vision_config=dict(model_type="siglip_vision_model", **CLIP_VISION), image_token_id=250,
                projection_dim=32)
    return _tf().ColPaliConfig(vlm_config=pali, embedding_dim=16, architectures=["ColPaliForRetrieval"])


def llava_next_video():
    return _tf().LlavaNextVideoConfig(text_config=dict(model_type="llama", **TXT),
                                      vision_config=dict(model_type="clip_vision_model", **CLIP_VISION),
                                      image_token_id=250, video_token_id=251, image_grid_pinpoints=[[32, 32]],
                                      spatial_pool_stride=2, architectures=["LlavaNextVideoForConditionalGeneration"])


def llava_next_video_legacy():
    """llava-hf/LLaVA-NeXT-Video-7B-hf's layout for transformers 4: the vocabulary (32064) at the top level, a
    text_config without one (transformers 5 reads 32000, its llama default) and placeholders 32000 (video) and
    32001 (image): beyond the text embedding unless the top-level vocab_size is applied."""
    cfg = _tf().LlavaNextVideoConfig(
        text_config=dict(model_type="llama", **{k: v for k, v in TXT.items() if k != "vocab_size"}),
        vision_config=dict(model_type="clip_vision_model", **CLIP_VISION),
        image_token_id=32001,
        video_token_id=32000,
        image_grid_pinpoints=[[32, 32]],
        spatial_pool_stride=2,
        architectures=["LlavaNextVideoForConditionalGeneration"],
    )
    cfg.vocab_size = 32064
    return cfg


def vits():
    return _tf().VitsConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, ffn_dim=32,
                            flow_size=8, spectrogram_bins=9, upsample_initial_channel=16, upsample_rates=[4, 4],
                            upsample_kernel_sizes=[8, 8], resblock_kernel_sizes=[3], resblock_dilation_sizes=[[1]],
                            prior_encoder_num_flows=1, prior_encoder_num_wavenet_layers=1,
                            posterior_encoder_num_wavenet_layers=1, duration_predictor_num_flows=1,
                            duration_predictor_filter_channels=16, depth_separable_num_layers=1,
                            architectures=["VitsModel"])  # sampling noise on: the harness turns it off


def speecht5_tts():
    return _tf().SpeechT5Config(vocab_size=64, hidden_size=32, encoder_layers=1, encoder_attention_heads=2,
                                encoder_ffn_dim=64, decoder_layers=1, decoder_attention_heads=2, decoder_ffn_dim=64,
                                num_mel_bins=8, speech_decoder_prenet_units=16, speaker_embedding_dim=16,
                                speech_decoder_postnet_units=16, speech_decoder_postnet_layers=2,
                                max_speech_positions=64, max_text_positions=64,
                                architectures=["SpeechT5ForTextToSpeech"])  # prenet dropout on in eval: turned off


def qwen2_audio():
    return _tf().Qwen2AudioConfig(
        audio_config=dict(d_model=32, encoder_layers=1, encoder_attention_heads=4, encoder_ffn_dim=64,
                          num_mel_bins=16, max_source_positions=32),
        text_config=dict(model_type="qwen2", **TXT), audio_token_id=250,
        architectures=["Qwen2AudioForConditionalGeneration"])


def encodec():
    return _tf().EncodecConfig(hidden_size=16, num_filters=4, num_residual_layers=1, upsampling_ratios=[8, 5, 4, 2],
                               codebook_size=32, codebook_dim=16, num_lstm_layers=1, sampling_rate=8000,
                               target_bandwidths=[1.5], architectures=["EncodecModel"])


def bert_multiple_choice():
    return _tf().BertConfig(**BERT, architectures=["BertForMultipleChoice"])


def tapas():
    return _tf().TapasConfig(**BERT, architectures=["TapasForQuestionAnswering"])


def patchtst():
    return _tf().PatchTSTConfig(num_input_channels=2, context_length=32, patch_length=8, patch_stride=8,
                                prediction_length=8, d_model=16, num_attention_heads=2, num_hidden_layers=1,
                                ffn_dim=32, architectures=["PatchTSTForPrediction"])


def decision_transformer():
    return _tf().DecisionTransformerConfig(state_dim=4, act_dim=2, hidden_size=32, max_ep_len=64, n_layer=1, n_head=2,
                                           n_inner=64, n_positions=128, architectures=["DecisionTransformerModel"])


def wavlm():
    return _tf().WavLMConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                             conv_dim=(16, 16), conv_stride=(5, 4), conv_kernel=(10, 8), num_feat_extract_layers=2,
                             num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, num_buckets=8,
                             max_bucket_distance=16, architectures=["WavLMModel"])


def w2v_bert():
    return _tf().Wav2Vec2BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                                    feature_projection_input_dim=16, conv_depthwise_kernel_size=3,
                                    output_hidden_size=32, architectures=["Wav2Vec2BertModel"])


def vitpose():
    return _tf().VitPoseConfig(
        backbone_config=dict(
            model_type="vitpose_backbone",
            image_size=[64, 48],
            patch_size=[16, 16],
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            out_indices=[2],
        ),
        num_labels=4,
        architectures=["VitPoseForPoseEstimation"],
    )


def bert_cross_encoder():
    return _tf().BertConfig(**BERT, num_labels=1, architectures=["BertForSequenceClassification"])


def gemma4():
    """google/gemma-4-12B-it's layout (model_type gemma4_unified, transformers' defaults are that checkpoint's):
    an encoder-free vision embedder (raw 48-pixel patches, patch_size 16 x pooling_kernel_size 3, factorized
    positions), an audio embedder of raw waveform frames, a Gemma 4 text model with sliding and global layers
    and its own placeholder ids, beyond a 256-token text vocabulary unless it is the real size; sizes reduced."""
    text = dict(model_type="gemma4_unified_text", vocab_size=262_144, hidden_size=32, intermediate_size=64,
                num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=16, global_head_dim=16,
                max_position_embeddings=512, sliding_window=16, layer_types=["sliding_attention", "full_attention"])
    return _tf().Gemma4UnifiedConfig(
        text_config=text,
        vision_config=dict(model_type="gemma4_unified_vision", patch_size=16, pooling_kernel_size=3,
                           mm_embed_dim=32, mm_posemb_size=64, output_proj_dims=32),
        audio_config=dict(model_type="gemma4_unified_audio", audio_embed_dim=640),
        architectures=["Gemma4UnifiedForConditionalGeneration"])


def parakeet_ctc():
    """nvidia/parakeet-ctc-1.1b's layout: a FastConformer encoder (its sub-config holds num_mel_bins) whose forward
    takes filter-bank input_features, not a waveform."""
    return _tf().ParakeetCTCConfig(
        encoder_config=dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                            num_mel_bins=16, subsampling_conv_channels=8),
        vocab_size=32, pad_token_id=31, architectures=["ParakeetForCTC"])


def whisper_audio_classification():
    """A Whisper encoder classifying audio (WhisperForAudioClassification): log-mel input_features
    [1, mel, 2 x max_source_positions]."""
    return _tf().WhisperConfig(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                               decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=16,
                               max_source_positions=32, max_target_positions=32, vocab_size=64, num_labels=3,
                               pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=3,
                               architectures=["WhisperForAudioClassification"])


def grounding_dino():
    """IDEA-Research/grounding-dino-tiny's layout: a Swin backbone, a BERT text tower (its vocabulary), logits over
    max_text_len text slots, -inf past the text (the model's own mask). Two decoder layers: one breaks
    transformers' own bbox_embed weight tying (a load error on the reference too)."""
    return _tf().GroundingDinoConfig(
        backbone_config=dict(model_type="swin", embed_dim=16, depths=[1, 1, 1, 1], num_heads=[1, 1, 2, 2],
                             window_size=4, image_size=64, out_indices=[2, 3, 4]),
        text_config=dict(model_type="bert", **dict(BERT, vocab_size=30522, max_position_embeddings=64)), d_model=32,
        encoder_layers=1, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
        decoder_ffn_dim=64, num_queries=8, max_text_len=32, num_feature_levels=3, encoder_n_points=2,
        decoder_n_points=2, architectures=["GroundingDinoForObjectDetection"])


def xcodec2():
    """HKUSTAudio/xcodec2's layout (model_type xcodec2): an acoustic encoder of the waveform and a w2v-BERT semantic
    tower of filter-bank features, joined and quantized by finite scalar quantization (quantization_levels, no
    codebook_size): quantization_dim is the two towers' widths together, as 2048 = 1024 + 1024 is in the real one."""
    return _tf().Xcodec2Config(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
        head_dim=16, encoder_hidden_size=8, quantization_dim=64, sampling_rate=16000,
        semantic_model_config=dict(model_type="wav2vec2-bert", hidden_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, intermediate_size=64, feature_projection_input_dim=16,
                                   conv_depthwise_kernel_size=3, output_hidden_size=32),
        architectures=["Xcodec2Model"])


def gemma4_pooled():
    """google/gemma-4-31B-it's layout (model_type gemma4): a vision tower reading 16-pixel patches with their
    positions and pooling 3 x 3 of them into one token, no audio tower; sizes reduced (the per-layer input
    embeddings too)."""
    text = dict(model_type="gemma4_text", vocab_size=262_144, vocab_size_per_layer_input=262_144,
                hidden_size_per_layer_input=2, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=1, head_dim=16, global_head_dim=16,
                max_position_embeddings=512, sliding_window=16, layer_types=["sliding_attention", "full_attention"])
    return _tf().Gemma4Config(
        text_config=text,
        vision_config=dict(model_type="gemma4_vision", hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                           num_attention_heads=2, num_key_value_heads=2, head_dim=16, patch_size=16,
                           pooling_kernel_size=3, position_embedding_size=64),
        audio_config=None, architectures=["Gemma4ForConditionalGeneration"])


# name -> (pipeline tag, config factory)
TINY = {
    "clip": ("zero-shot-image-classification", clip),
    "siglip": ("zero-shot-image-classification", siglip),
    "owlvit": ("zero-shot-object-detection", owlvit),
    "detr": ("object-detection", detr),
    "detr_timm": ("object-detection", detr_timm),
    "clipseg": ("image-segmentation", clipseg),
    "clap": ("feature-extraction", clap),
    "clap_audio_classification": ("audio-classification", clap),  # laion/clap-htsat-fused's tag in Google's sweep
    "parakeet_ctc": ("automatic-speech-recognition", parakeet_ctc),
    "whisper_audio_classification": ("audio-classification", whisper_audio_classification),
    "segformer": ("image-segmentation", segformer),
    "sam": ("mask-generation", sam),
    "dpt": ("depth-estimation", dpt),
    "superpoint": ("keypoint-detection", superpoint),
    "vitpose": ("keypoint-detection", vitpose),
    "swin2sr": ("image-to-image", swin2sr),
    "videomae": ("video-classification", videomae),
    "llava": ("image-text-to-text", llava),
    "qwen2_vl": ("image-text-to-text", qwen2_vl),
    "blip": ("image-to-text", blip),
    "vilt": ("visual-question-answering", vilt),
    "layoutlmv3": ("document-question-answering", layoutlmv3),
    "colpali": ("visual-document-retrieval", colpali),
    "llava_next_video": ("video-text-to-text", llava_next_video),
    "llava_next_video_legacy": ("video-text-to-text", llava_next_video_legacy),
    "qwen2_vl_video": ("video-text-to-text", qwen2_vl),
    "llava_any": ("any-to-any", llava),
    "gemma4": ("any-to-any", gemma4),
    "gemma4_pooled": ("image-text-to-text", gemma4_pooled),
    "vits": ("text-to-speech", vits),
    "speecht5_tts": ("text-to-speech", speecht5_tts),
    "qwen2_audio": ("audio-text-to-text", qwen2_audio),
    "encodec": ("audio-to-audio", encodec),
    "xcodec2": ("audio-to-audio", xcodec2),  # issue 41: the task table refused it (no codebook_size)
    "bert_multiple_choice": ("multiple-choice", bert_multiple_choice),
    "bert_cross_encoder": ("text-ranking", bert_cross_encoder),
    "tapas": ("table-question-answering", tapas),
    "patchtst": ("time-series-forecasting", patchtst),
    "decision_transformer": ("reinforcement-learning", decision_transformer),
    "wavlm": ("feature-extraction", wavlm),
    "w2v_bert": ("feature-extraction", w2v_bert),
}
