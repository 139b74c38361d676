"""The numerics verdict: tolerance per dtype, tie-aware top-1, non-finite outputs."""

import os

import torch

import harness


def _probe():
    p = harness.Probe(harness.parse_args(["--model-dir", "x", "--mode", "arch", "--result-file", "r.json"]))
    p.torch = torch
    p.is_scores = True
    return p.numerics_stage  # the numerics stage Probe composes; its fields are the probe's context


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


def test_the_models_own_mask_is_read_around():
    """Issue 41: Grounding DINO scores the text slots past the text -inf (its own mask). The same infinities on the
    device are no failure: the checks read the finite rest; an infinity the device does not share, or a finite
    entry the device makes infinite, fails as non-finite."""
    p = _probe()
    ref = torch.randn(1, 4, 10)
    ref[..., 6:] = float("-inf")
    dev = ref.clone()
    dev[..., :6] += 0.001
    cmp = p.compare(ref, dev, "bfloat16")
    assert cmp["masked"] == 16 and cmp["finite"]
    assert 0.0009 < cmp["max_abs_diff"] < 0.0011 and cmp["top1"] == 1.0
    assert p.verdict(cmp, "x")[0]
    unmasked = ref.clone()
    unmasked[0, 0, 7] = 0.0  # the device scores a slot the model masks
    ok, why, key = p.verdict(p.compare(ref, unmasked, "bfloat16"), "x")
    assert not ok and key == "non_finite" and "masked" in why
    wider = ref.clone()
    wider[0, 0, 0] = float("-inf")  # the device masks a slot the reference scores
    ok, _, key = p.verdict(p.compare(ref, wider, "bfloat16"), "x")
    assert not ok and key == "non_finite"


def test_hidden_states_have_no_top1():
    p = _probe()
    p.is_scores = False
    ref = torch.randn(1, 4, 16)
    cmp = p.compare(ref, ref.clone(), "float32")
    assert cmp["top1"] is None and p.verdict(cmp, "x")[0]


def test_readme_table_is_numerics_json():
    """The tolerance table in the harness's README.md states numerics.json's bounds."""
    import re

    import harness_numerics

    with open(os.path.join(os.path.dirname(os.path.abspath(harness.__file__)), "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| (float32|float16|bfloat16) .*$", readme, re.M)}
    assert set(rows) == set(harness_numerics.TOLERANCES)
    for dtype, row in rows.items():
        cells = [c.strip() for c in row.strip("|").split("|")]
        b = harness_numerics.TOLERANCES[dtype]
        nums = [float(x) for x in re.findall(r"\d+(?:\.\d+)?(?:e-?\d+)?", " ".join(cells[1:]))]
        assert nums == [b["atol"], b["rtol"], b["top1"], b["atol"], b["tie_rtol"], b["rel_error"], b["cosine"]], (
            dtype,
            nums,
        )


def test_dense_outputs_are_held_to_a_relative_error():
    import harness_numerics

    ref = torch.rand(1, 8, 4)  # boxes in [0, 1]
    cmp = harness_numerics.compare(torch, ref, ref.clone(), "bfloat16", "boxes")
    assert cmp["rel_error"] == 0.0 and cmp["top1"] is None and harness_numerics.verdict(cmp, "x")[0]
    # within max_abs (0.05 + 0.2 * max|ref|) everywhere, but wrong as a whole: every box shifted
    shifted = ref + 0.12
    cmp = harness_numerics.compare(torch, ref, shifted, "bfloat16", "boxes")
    assert cmp["max_abs_diff"] <= cmp["tolerance"]
    ok, why, key = harness_numerics.verdict(cmp, "x")
    assert not ok and key == "rel_error" and "relative error" in why


def test_embeddings_are_held_to_a_cosine_similarity():
    import harness_numerics

    g = torch.Generator().manual_seed(0)
    ref = torch.randn(1, 4, 64, generator=g)
    cmp = harness_numerics.compare(torch, ref, ref * 1.001, "bfloat16", "embeddings")
    assert cmp["cosine"] > 0.9999 and harness_numerics.verdict(cmp, "x")[0]
    ref[0, 0] *= 20  # a large vector sets a wide max_abs bound ...
    ref[0, 2] = torch.randn(64, generator=g) * 0.1
    turned = ref.clone()
    turned[0, 2] = torch.randn(64, generator=g) * 0.1  # ... inside which a small one points elsewhere
    cmp = harness_numerics.compare(torch, ref, turned, "bfloat16", "embeddings")
    assert cmp["max_abs_diff"] <= cmp["tolerance"]
    ok, why, key = harness_numerics.verdict(cmp, "x")
    assert not ok and key == "cosine", (cmp, why)


def test_compare_all_names_the_failing_output():
    import harness_numerics

    refs = {"logits": torch.randn(1, 5, 10), "pred_boxes": torch.rand(1, 5, 4)}
    devs = {"logits": refs["logits"].clone(), "pred_boxes": refs["pred_boxes"] + 0.5}
    out = harness_numerics.compare_all(
        torch, refs, devs, {"logits": "logits", "pred_boxes": "boxes"}, "float32", "dev vs ref"
    )
    assert not out["ok"] and out["key"] == "pred_boxes max_abs_diff" and "(pred_boxes)" in out["why"]
    assert out["primary"]["max_abs_diff"] == 0.0 and out["rel_error"] > 0.1
