"""Numerics: which outputs of a model are compared with the CPU float32 reference, and how.

The bounds are numerics.json (the /methodology page prints the same file); which outputs a family
compares, and their kinds, are tasks.json. Per output kind:

| kind                                 | checks                          |
|--------------------------------------|---------------------------------|
| logits                               | max_abs_diff, top-1 agreement   |
| embeddings                           | max_abs_diff, cosine similarity |
| boxes, masks, depth, image, audio, series | max_abs_diff, relative error |

max_abs_diff <= atol + rtol * max|reference|; top-1 agreement over the decisive positions (the
reference's best score leads its runner-up by more than atol + tie_rtol * max|reference|);
rel_error = ||device - reference||_2 / ||reference||_2; cosine similarity along the last dimension,
the smallest over the vectors (those whose reference norm is below 1e-6 of the largest are left out).
Every output must be finite and of the reference's shape, but for the model's own mask: entries the float32
reference makes infinite (Grounding DINO's -inf scores of the text slots past the text) must be the same infinity
on the device, and the checks read the rest (a nan in the reference is the harness's inputs' fault: error). The
first output present is the primary one (metrics.max_abs_diff, top1_agreement and tolerance are its);
metrics.rel_error is the largest over the dense outputs and metrics.cosine_similarity the smallest over the embeddings.
"""

from __future__ import annotations

import json
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_HERE, "numerics.json"), encoding="utf-8") as _fh:
    TABLE = json.load(_fh)
with open(os.path.join(_HERE, "tasks.json"), encoding="utf-8") as _fh:
    _FAMILIES = json.load(_fh)["families"]

TOLERANCES: dict[str, dict] = TABLE["dtypes"]
KINDS: dict[str, dict] = TABLE["kinds"]
_FALLBACK_KEYS = (("logits", "logits"), ("prediction_logits", "logits"), ("start_logits", "logits"),
                  ("last_hidden_state", "embeddings"), ("pooler_output", "embeddings"),
                  ("image_embeds", "embeddings"), ("text_embeds", "embeddings"))


def _field(out, key):
    if isinstance(out, dict):
        return out.get(key)
    try:
        return getattr(out, key, None)
    except Exception:  # noqa: BLE001 - a property that fails is no output
        return None


def _is_tensor(val) -> bool:
    return hasattr(val, "shape") and hasattr(val, "is_floating_point") and val.is_floating_point() and val.numel() > 0


def select(out, family: str | None) -> list[tuple[str, str, object]]:
    """[(name, kind, tensor)] of the outputs compared for this family; the first is the primary one."""
    specs = (_FAMILIES.get(family) or {}).get("outputs") or []
    found = [(name, kind, _field(out, name)) for name, kind in specs]
    found = [(n, k, v) for n, k, v in found if _is_tensor(v)]
    if found:
        return found
    for name, kind in _FALLBACK_KEYS:
        val = _field(out, name)
        if _is_tensor(val):
            return [(name, kind, val)]
    seq = out if isinstance(out, (tuple, list)) else (out.to_tuple() if hasattr(out, "to_tuple") else ())
    for i, val in enumerate(seq):
        if _is_tensor(val):
            return [(f"output[{i}]", "embeddings", val)]
    if _is_tensor(out):
        return [("output", "embeddings", out)]
    raise TypeError(f"cannot find a tensor output in {type(out).__name__}")


def compare(torch, ref, dev, dtype_name: str, kind: str) -> dict:
    """The checks of kind on dev against ref, with the dtype's bounds (see the module docstring)."""
    tol = TOLERANCES.get(dtype_name, TOLERANCES["float32"])
    checks = KINDS.get(kind, KINDS["embeddings"])["checks"]
    res = {"kind": kind, "finite": bool(torch.isfinite(dev).all()), "max_abs_diff": None, "top1": None,
           "rel_error": None, "cosine": None}
    masked = torch.isinf(ref) if ref.shape == dev.shape else None
    if masked is not None and bool(masked.any()):  # the model's own mask (-inf scores of padded text slots)
        res["masked"] = int(masked.sum())
        res["finite"] = bool(torch.isfinite(dev[~masked]).all()) and bool((dev[masked] == ref[masked]).all())
        if not bool((dev[masked] == ref[masked]).all()):
            res["mask_mismatch"] = True
        top_ref, top_dev = ref, dev  # argmax and top-2 read -inf as the model means it
        ref, dev = ref.masked_fill(masked, 0.0), dev.masked_fill(masked, 0.0)
    else:
        top_ref, top_dev = ref, dev
    scale = float(ref.abs().max()) if ref.numel() else 0.0
    res["tolerance"] = tol["atol"] + tol["rtol"] * scale
    res["min_top1"] = tol["top1"]
    res["max_rel_error"] = tol["rel_error"]
    res["min_cosine"] = tol["cosine"]
    if ref.shape != dev.shape:
        res["shape_mismatch"] = f"{list(dev.shape)} vs reference {list(ref.shape)}"
        return res
    if not res["finite"]:
        return res
    diff = dev - ref
    res["max_abs_diff"] = float(diff.abs().max()) if ref.numel() else 0.0
    if "top1" in checks and ref.dim() >= 1 and ref.shape[-1] > 1:
        agree = top_dev.argmax(-1) == top_ref.argmax(-1)
        res["top1"] = float(agree.float().mean())
        top2 = top_ref.topk(2, dim=-1).values
        gap = top2[..., 0] - top2[..., 1]  # inf where one score leads masked ones, nan where all are masked
        decisive = torch.nan_to_num(gap, nan=0.0) > tol["atol"] + tol["tie_rtol"] * scale
        res["decisive"] = int(decisive.sum())
        res["positions"] = int(decisive.numel())
        res["top1_decisive"] = float(agree[decisive].float().mean()) if res["decisive"] else None
    if "rel_error" in checks:
        norm = float(ref.double().norm())
        res["rel_error"] = (
            float(diff.double().norm()) / norm if norm > 0 else (0.0 if res["max_abs_diff"] == 0 else None)
        )
    if "cosine" in checks:
        res["cosine"] = _min_cosine(torch, ref, dev)
    return res


def _min_cosine(torch, ref, dev) -> float | None:
    r = ref.double().reshape(-1, ref.shape[-1]) if ref.dim() else ref.double().reshape(1, 1)
    d = dev.double().reshape(-1, r.shape[-1])
    rn, dn = r.norm(dim=-1), d.norm(dim=-1)
    keep = rn > 1e-6 * float(rn.max()) if rn.numel() else rn > 0
    if not bool(keep.any()):
        return None
    cos = (r[keep] * d[keep]).sum(-1) / (rn[keep] * dn[keep]).clamp_min(1e-300)
    return float(cos.min())


def verdict(cmp: dict, what: str) -> tuple[bool, str, str]:
    """(ok, why, key) for one comparison."""
    if cmp.get("shape_mismatch"):
        return False, f"{what}: output shape {cmp['shape_mismatch']}", "shape"
    if cmp.get("mask_mismatch"):
        return False, (f"{what}: the device output is not infinite at exactly the reference's {cmp['masked']} "
                       "masked (infinite) entries"), "non_finite"
    if not cmp["finite"]:
        return False, f"{what}: non-finite values (nan/inf) in the device output", "non_finite"
    if cmp["max_abs_diff"] is not None and cmp["max_abs_diff"] > cmp["tolerance"]:
        return (
            False,
            f"{what}: max_abs_diff {cmp['max_abs_diff']:.4g} > tolerance {cmp['tolerance']:.4g}",
            "max_abs_diff",
        )
    if cmp.get("top1_decisive") is not None and cmp["top1_decisive"] < cmp["min_top1"]:
        return False, (f"{what}: top-1 agreement {cmp['top1_decisive']:.3f} < {cmp['min_top1']} on the "
                       f"{cmp['decisive']} decisive of {cmp['positions']} positions"), "top1"
    if cmp.get("rel_error") is not None and cmp["rel_error"] > cmp["max_rel_error"]:
        return False, f"{what}: relative error {cmp['rel_error']:.4g} > {cmp['max_rel_error']:.4g}", "rel_error"
    if cmp.get("cosine") is not None and cmp["cosine"] < cmp["min_cosine"]:
        return False, f"{what}: cosine similarity {cmp['cosine']:.6g} < {cmp['min_cosine']}", "cosine"
    return True, "", ""


def compare_all(torch, refs: dict, devs: dict, kinds: dict, dtype_name: str, what: str) -> dict:
    """Compare every output (refs/devs: name -> float CPU tensor, the primary first; kinds: name -> kind).

    Returns {"primary": cmp of the first, "outputs": {name: cmp}, "rel_error", "cosine", "ok", "why",
    "key", "notes"}: the first failing output decides ok/why/key."""
    outputs = {}
    summary = {"ok": True, "why": "", "key": "", "rel_error": None, "cosine": None, "notes": []}
    for i, (name, ref) in enumerate(refs.items()):
        dev = devs.get(name)
        if dev is None:
            cmp = {"kind": kinds.get(name), "finite": True, "max_abs_diff": None,
                   "shape_mismatch": "missing from the device output"}
        else:
            cmp = compare(torch, ref, dev, dtype_name, kinds.get(name, "embeddings"))
        outputs[name] = cmp
        label = what if i == 0 else f"{what} ({name})"
        ok, why, key = verdict(cmp, label)
        if not ok and summary["ok"]:
            summary.update(ok=False, why=why, key=key if i == 0 else f"{name} {key}")
        if cmp.get("rel_error") is not None:
            summary["rel_error"] = max(summary["rel_error"] or 0.0, cmp["rel_error"])
        if cmp.get("cosine") is not None:
            summary["cosine"] = cmp["cosine"] if summary["cosine"] is None else min(summary["cosine"], cmp["cosine"])
        if i > 0 or len(refs) > 1 or cmp.get("kind") != "logits":
            summary["notes"].append(note(name, cmp))
    summary["primary"] = next(iter(outputs.values())) if outputs else None
    summary["outputs"] = outputs
    return summary


def note(name: str, cmp: dict) -> str:
    parts = [f"{name} ({cmp.get('kind')})"]
    if cmp.get("max_abs_diff") is not None:
        parts.append(f"max_abs_diff {cmp['max_abs_diff']:.3g}")
    if cmp.get("rel_error") is not None:
        parts.append(f"rel_error {cmp['rel_error']:.3g}")
    if cmp.get("cosine") is not None:
        parts.append(f"cosine {cmp['cosine']:.6f}")
    if cmp.get("top1") is not None:
        parts.append(f"top-1 {cmp['top1']:.3f}")
    return " ".join(parts)
