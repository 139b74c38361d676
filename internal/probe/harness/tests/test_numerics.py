"""The numerics verdict: tolerance per dtype, tie-aware top-1, non-finite outputs."""

import torch

import harness


def _probe():
    p = harness.Probe(harness.parse_args(["--model-dir", "x", "--result-file", "r.json"]))
    p.torch = torch
    p.is_scores = True
    return p


def test_fp32_like_with_like_is_tight():
    p = _probe()
    ref = torch.randn(1, 8, 50)
    cmp = p.compare(ref, ref.clone(), "float32")
    assert cmp["max_abs_diff"] == 0.0 and cmp["top1"] == 1.0
    assert p.verdict(cmp, "x")[0]
    cmp = p.compare(ref, ref + 0.01, "float32")  # 1e-2 is far outside the fp32 bound
    ok, why, key = p.verdict(cmp, "x")
    assert not ok and key == "max_abs_diff"


def test_bf16_near_tie_flip_passes_decisive_flip_fails():
    p = _probe()
    ref = torch.tensor([[[5.0, 4.999, 0.0], [5.0, 4.5, 0.0]]])
    tie = ref.clone()
    tie[0, 0, 1] = 5.001  # flips a near-tie: within bf16 rounding
    cmp = p.compare(ref, tie, "bfloat16")
    assert cmp["top1"] == 0.5 and cmp["decisive"] == 1 and cmp["top1_decisive"] == 1.0
    assert p.verdict(cmp, "x")[0]
    flip = ref.clone()
    flip[0, 1, 1] = 5.2  # the decisive position flips, though max_abs_diff (0.7) is inside the bound
    cmp = p.compare(ref, flip, "bfloat16")
    assert cmp["max_abs_diff"] <= cmp["tolerance"]
    ok, why, key = p.verdict(cmp, "x")
    assert not ok and key == "top1" and "decisive" in why


def test_non_finite_output_fails():
    p = _probe()
    ref = torch.randn(1, 4, 10)
    bad = ref.clone()
    bad[0, 0, 0] = float("nan")
    cmp = p.compare(ref, bad, "bfloat16")
    assert cmp["max_abs_diff"] is None
    ok, why, key = p.verdict(cmp, "x")
    assert not ok and key == "non_finite"


def test_hidden_states_have_no_top1():
    p = _probe()
    p.is_scores = False
    ref = torch.randn(1, 4, 16)
    cmp = p.compare(ref, ref.clone(), "float32")
    assert cmp["top1"] is None and p.verdict(cmp, "x")[0]
