"""MFU and MBU (harness_efficiency.py): computed against a device table entry, null where they cannot be.

Expected numbers are worked out by hand from the tiny configs in conftest.tiny_config, in the comments.
"""

from types import SimpleNamespace

import pytest
import torch

import harness_efficiency
import harness_result
from conftest import build_model_dir, tiny_config

FAKE_TABLE = [{"key": "fake-x1", "label": "Fake X1", "target": "cuda", "names": ["fake accelerator x1"],
               "bf16_flops": 1e12, "hbm_bytes_per_s": 1e9, "source": "test"}]


def tiny_model(kind, dtype=torch.bfloat16, **overrides):
    import transformers as tf

    cfg = tiny_config(kind)
    for k, v in overrides.items():
        setattr(cfg, k, v)
    torch.manual_seed(0)
    return getattr(tf, cfg.architectures[0])(cfg).eval().to(dtype)


def fake_probe(model, *, mode="full", family="causal-lm", dtype=torch.bfloat16, seq_len=32):
    return SimpleNamespace(model=model, mode=mode, family=family, dtype=dtype, input_info={"seq_len": seq_len})


def passing(device="Fake  Accelerator X1", target="cuda", **metrics):
    m = {"forward_ms": 2.0, "compiled_step_ms": 1.0, "tokens_per_s": 100.0}
    m.update(metrics)
    return harness_result.Result(status="pass", target=target, runtime=harness_result.Runtime(device=device),
                                 metrics=harness_result.Metrics(**m))


# Tiny llama: hidden 64, intermediate 128, 2 layers, 4 heads (head_dim 16), 2 K/V heads, vocab 512, untied.
# Matmul weights per layer: q 64·64 = 4096, k and v 32·64 = 2048 each, o 4096, gate/up/down 3·64·128 = 24576
# → 36864; × 2 = 73728; lm_head 512·64 = 32768 → N = 106496 (the embedding table is a lookup).
# FLOPs at T = 32: 2·106496·32 = 6815744 + 2·L·h·(16+16)·T² = 2·2·4·32·1024 = 524288 → 7340032 (229376/token).
# Weight bytes per decoded token (bf16): layers 2·(36864 + 2·64 norms) = 73984, final norm 64, lm_head 32768
# → 106816 elements × 2 = 213632 (the untied embedding table is only looked up).
LLAMA_FLOPS = 7340032
LLAMA_BYTES = 213632


def test_mfu_mbu_with_a_fake_device_entry():
    res = passing()
    harness_efficiency.annotate(fake_probe(tiny_model("llama")), res, table=FAKE_TABLE)
    eff = res.metrics.efficiency
    # the faster timing is the compiled 1.0 ms: 7340032 / 0.001 s / 1e12 = 0.007340032
    assert res.metrics.mfu == pytest.approx(0.00734, abs=1e-6)
    # 213632 B × 100 tokens/s / 1e9 B/s = 0.0213632
    assert res.metrics.mbu == pytest.approx(0.021363, abs=1e-6)
    assert eff["device"] == "fake-x1" and eff["peak_bf16_flops"] == 1e12 and eff["peak_hbm_bytes_per_s"] == 1e9
    assert eff["flops_per_token"] == LLAMA_FLOPS // 32
    assert eff["weight_bytes_per_token"] == LLAMA_BYTES and eff["tokens"] == 32
    assert eff["forward_timing"] == "compiled" and eff["model"] == "full" and "note" not in eff


def test_eager_timing_when_not_compiled():
    res = passing(compiled_step_ms=None)
    harness_efficiency.annotate(fake_probe(tiny_model("llama")), res, table=FAKE_TABLE)
    # 7340032 / 0.002 s / 1e12
    assert res.metrics.mfu == pytest.approx(0.00367, abs=1e-6)
    assert res.metrics.efficiency["forward_timing"] == "eager"


def test_arch_mode_figures_are_marked_as_the_reduced_models():
    res = passing()
    harness_efficiency.annotate(fake_probe(tiny_model("llama"), mode="arch"), res, table=FAKE_TABLE)
    assert res.metrics.mfu is not None
    assert (
        res.metrics.efficiency["model"] == "reduced" and "reduced model" in res.metrics.efficiency["note"]
    )


@pytest.mark.parametrize("res, probe_kw, why", [
    (passing(target="cpu", device="Intel Xeon"), {}, "cpu"),
    (passing(device="Mystery GPU 9000"), {}, "not in the peak table"),
    (passing(device="fake accelerator x1", target="tpu"), {}, "not in the peak table"),  # the target must agree
    (passing(), {"dtype": torch.float32}, "float32"),
])
def test_null_where_not_computable(res, probe_kw, why):
    harness_efficiency.annotate(fake_probe(tiny_model("llama"), **probe_kw), res, table=FAKE_TABLE)
    assert res.metrics.mfu is None and res.metrics.mbu is None
    assert why in res.metrics.efficiency["note"]


def test_a_run_that_did_not_pass_gets_null_and_no_basis():
    res = passing()
    res.status = "fail"
    harness_efficiency.annotate(fake_probe(tiny_model("llama")), res, table=FAKE_TABLE)
    assert res.metrics.mfu is None and res.metrics.mbu is None
    assert "efficiency" not in res.to_dict()["metrics"]


def test_no_token_sequence_no_mfu_but_mbu():
    res = passing()
    harness_efficiency.annotate(fake_probe(tiny_model("llama"), family="seq2seq"), res, table=FAKE_TABLE)
    assert res.metrics.mfu is None and res.metrics.mbu is not None
    assert "no plain token sequence" in res.metrics.efficiency["note"]


def test_implausible_timing_is_dropped():
    res = passing(forward_ms=1e-6, compiled_step_ms=None, tokens_per_s=1e9)
    harness_efficiency.annotate(fake_probe(tiny_model("llama")), res, table=FAKE_TABLE)
    assert res.metrics.mfu is None and res.metrics.mbu is None
    assert "cannot be trusted" in res.metrics.efficiency["note"]


def test_tied_head_counts_in_flops_and_once_in_bytes():
    # Tiny GPT-2: n_embd 64, 2 layers, vocab 512, 128 positions, head tied to wte.
    # Conv1D weights per layer: c_attn 64·192 = 12288, attn c_proj 4096, c_fc 64·256 = 16384, mlp c_proj 16384
    # → 49152 × 2 = 98304; + the tied head 512·64 = 32768 → N = 131072.
    # Bytes (float32): wte 32768 once (the head reads it), layers 2·(49152 + biases 576 + 2 LayerNorms 256)
    # = 99968, ln_f 128; wpe is a lookup → 132864 × 4 = 531456.
    stats = harness_efficiency.weight_stats(tiny_model("gpt2", torch.float32), tiny_config("gpt2"))
    assert stats == {"matmul_params": 131072, "weight_bytes": 531456}


def test_experts_count_at_k_over_e():
    import transformers as tf

    cfg = tf.MixtralConfig(hidden_size=64, intermediate_size=32, num_hidden_layers=1, num_attention_heads=4,
                           num_key_value_heads=2, vocab_size=128, num_local_experts=4, num_experts_per_tok=2)
    model = tf.MixtralForCausalLM(cfg).eval()
    # attention 4096 + 2048 + 2048 + 4096 = 12288; router 4·64 = 256; experts (gate_up 4·64·64 = 16384,
    # down 4·64·32 = 8192) at 2/4 → 12288; lm_head 128·64 = 8192 → N = 33024.
    stats = harness_efficiency.weight_stats(model, cfg)
    assert stats["matmul_params"] == 33024


def test_match_device_normalises_like_go():
    assert harness_efficiency.match_device("cuda", "  FAKE accelerator   X1 ", FAKE_TABLE)["key"] == "fake-x1"
    assert harness_efficiency.match_device("tpu", "fake accelerator x1", FAKE_TABLE) is None
    table = harness_efficiency.load_table()
    assert harness_efficiency.match_device("tpu", "TPU v6e", table)["bf16_flops"] == 918e12
    assert harness_efficiency.match_device("cuda", "NVIDIA H200", table)["hbm_bytes_per_s"] == 4.8e12
    assert harness_efficiency.match_device("tpu", "TPU", table) is None


def test_cpu_run_reports_null_mfu_and_mbu(tmp_path, run_inproc):
    d = build_model_dir(tmp_path, "llama")
    code, res = run_inproc(d, task="text-generation", extra=["--no-compile"])
    assert code == 0 and res["status"] == "pass", res["message"]
    assert "mfu" in res["metrics"] and "mbu" in res["metrics"]
    assert res["metrics"]["mfu"] is None and res["metrics"]["mbu"] is None
    assert res["metrics"]["tokens_per_s"] > 0  # measured, yet no peak to divide by on cpu
    assert "cpu" in res["metrics"]["efficiency"]["note"]
