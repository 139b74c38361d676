"""How well a passing probe used the device: MFU and MBU, from the peak table devices.json.

Model FLOPs of one forward pass, batch 1 (PaLM, Chowdhery et al. 2022, appendix B, forward only):

    flops = 2 * N * T + 2 * L * h * (d_qk + d_v) * T^2

T is the tokens of the forward's input sequence; N the parameters that multiply each token: every
weight matrix except embedding tables a token only looks a row up in (an LM head counts, tied to the
embeddings or not), with a mixture-of-experts layer's experts counted at k/E of their size (a token
goes through k of the E experts); L the attention layers, h the query heads, d_qk and d_v the query/key
and value head dimensions (both head_dim outside MLA). The second term is QK^T and PV over the full
T x T scores (causal masking is not discounted, as in PaLM). flops / T is the FLOPs per token.

    mfu = flops / forward_s / peak_bf16_flops

forward_s is the faster of the eager (forward_ms) and compiled (compiled_step_ms) medians.

Bytes of weights read per decoded token: every weight tensor once, at its stored size (the device
dtype), except embedding tables used only for lookups, experts at k/E. The KV cache read is not counted.

    mbu = weight_bytes_per_token * tokens_per_s / peak_hbm_bytes_per_s

A sharded probe over D devices is measured as a group: the model's whole FLOPs and weight bytes (a sharded
parameter counts at its full size), the group's step time and tokens/s (its slowest rank's), against D
devices' peaks (efficiency.devices says D).

Both are null (never guessed) on cpu, on a device whose runtime name is not in the table, for a
device dtype other than bfloat16 (the peaks are bf16), for runs that did not pass, for families
without a plain token sequence (encoder-decoders, vision, audio: T is not defined the same way), when
the timing they need was not measured, and when a value above 1 shows the timing cannot be trusted.
In arch mode the figures are the reduced model's (fewer layers, random weights): efficiency.model
says "reduced". metrics.efficiency records the peak used and the inputs, or why they are null.
"""

from __future__ import annotations

import json
import os

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "devices.json")
TOKEN_FAMILIES = ("causal-lm", "text-encoder")


def normalize(name) -> str:
    """A runtime device name as the table's names are written (as Go's NormalizeDeviceName)."""
    return " ".join(str(name).lower().split())


def load_table(path: str = TABLE) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)["devices"]


def match_device(target: str, name: str, table: list[dict]) -> dict | None:
    """The entry whose names include the normalised runtime name, on the same target; else None."""
    n = normalize(name)
    for d in table:
        if d.get("target") == target and n in d.get("names", ()):
            return d
    return None


def _expert_scale(name: str, config) -> float:
    """k/E for parameters of a mixture-of-experts layer's experts, else 1."""
    if "experts" not in name.split("."):
        return 1.0
    e = _cfg(config, "num_local_experts", "num_experts", "n_routed_experts")
    k = _cfg(config, "num_experts_per_tok")
    return k / e if e and k and 0 < k <= e else 1.0


def _cfg(config, *keys):
    for k in keys:
        v = getattr(config, k, None)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return None


def weight_stats(model, config) -> dict:
    """matmul_params (N above) and weight_bytes (per decoded token) of a loaded model."""
    import torch

    lookup_only: dict[int, bool] = {}
    owners = {}
    for mod_name, mod in model.named_modules():
        for p_name, _ in mod.named_parameters(recurse=False):
            full = f"{mod_name}.{p_name}" if mod_name else p_name
            owners.setdefault(full, mod)
    n = 0.0
    for full, p in model.named_parameters(remove_duplicate=False):
        is_embedding = isinstance(owners.get(full), torch.nn.Embedding)
        lookup_only[id(p)] = lookup_only.get(id(p), True) and is_embedding
        if p.dim() >= 2 and not is_embedding:
            n += p.numel() * _expert_scale(full, config)
    nbytes = 0.0
    for full, p in model.named_parameters():  # each tensor once
        if not lookup_only.get(id(p), False):
            nbytes += p.numel() * p.element_size() * _expert_scale(full, config)
    return {"matmul_params": n, "weight_bytes": nbytes}


def attention_shape(config) -> tuple[int, int, int, int] | None:
    """(attention layers, query heads, d_qk, d_v) of a (text) config, or None."""
    layers = _cfg(config, "num_hidden_layers", "n_layer", "num_layers")
    heads = _cfg(config, "num_attention_heads", "n_head", "num_heads")
    if not layers or not heads:
        return None
    types = getattr(config, "layer_types", None)
    if isinstance(types, (list, tuple)) and len(types) == layers:
        layers = sum(1 for t in types if str(t).endswith("attention") and t != "linear_attention")
    hidden = _cfg(config, "hidden_size", "n_embd", "d_model")
    d = _cfg(config, "head_dim") or (hidden // heads if hidden else None)
    rope, nope = _cfg(config, "qk_rope_head_dim"), _cfg(config, "qk_nope_head_dim")
    d_qk = rope + nope if rope and nope else d
    d_v = _cfg(config, "v_head_dim") or d
    if not d_qk or not d_v:
        return None
    return layers, heads, d_qk, d_v


def forward_flops(stats: dict, shape: tuple[int, int, int, int], tokens: int) -> float:
    layers, heads, d_qk, d_v = shape
    return 2 * stats["matmul_params"] * tokens + 2 * layers * heads * (d_qk + d_v) * tokens * tokens


def compute(dev: dict, stats: dict, shape, tokens: int | None, forward_ms: float | None,
            tokens_per_s: float | None, devices: int = 1) -> tuple[float | None, float | None, dict]:
    """(mfu, mbu, details) for a device entry and a model's measurements on `devices` such devices. Pure."""
    peak_flops, peak_bw = dev["bf16_flops"] * devices, dev["hbm_bytes_per_s"] * devices
    info = {"device": dev["key"], "peak_bf16_flops": peak_flops, "peak_hbm_bytes_per_s": peak_bw,
            "weight_bytes_per_token": round(stats["weight_bytes"])}
    if devices > 1:
        info["devices"] = devices
    notes = []
    mfu = mbu = None
    if tokens and shape and forward_ms and forward_ms > 0:
        flops = forward_flops(stats, shape, tokens)
        info.update(tokens=tokens, flops_per_token=round(flops / tokens))
        mfu = flops / (forward_ms / 1000) / peak_flops
    elif not tokens:
        notes.append("mfu: no plain token sequence for this family")
    else:
        notes.append("mfu: no forward timing")
    if tokens_per_s and tokens_per_s > 0:
        mbu = stats["weight_bytes"] * tokens_per_s / peak_bw
    else:
        notes.append("mbu: no decode measured")
    if mfu is not None and mfu > 1:
        notes.append(f"mfu {mfu:.3g} > 1: the timing cannot be trusted")
        mfu = None
    if mbu is not None and mbu > 1:
        notes.append(f"mbu {mbu:.3g} > 1: the timing cannot be trusted")
        mbu = None
    if notes:
        info["note"] = "; ".join(notes)
    return (round(mfu, 6) if mfu is not None else None), (round(mbu, 6) if mbu is not None else None), info


def _why_not(probe, res, table) -> tuple[str | None, dict | None]:
    """(reason, device entry): a reason when MFU/MBU cannot be computed at all."""
    target = res.target
    if target == "cpu":
        return "cpu: MFU and MBU are measured against an accelerator's peak", None
    name = res.runtime.device
    dev = match_device(target, name, table)
    if dev is None:
        return f"device {name!r} ({target}) is not in the peak table (devices.json)", None
    if "bfloat16" not in str(probe.dtype):
        return f"the run used {str(probe.dtype).replace('torch.', '')}; the table's peaks are bf16", None
    return None, dev


def annotate(probe, res, table: list[dict] | None = None) -> None:
    """Set the metrics mfu, mbu (null unless computed) and efficiency (how, or why not) of res, a
    harness_result.Result."""
    metrics = res.metrics
    metrics.mfu = metrics.mbu = None
    scope = "reduced" if probe.mode == "arch" else "full"
    if res.status != "pass":  # only a passing run's speed says how well it used the chip
        return
    try:
        if table is None:
            table = load_table()
        why, dev = _why_not(probe, res, table)
        if why:
            metrics.efficiency = {"model": scope, "note": why}
            return
        config = probe.model.config
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        tokens = (getattr(probe, "input_info", None) or {}).get("seq_len") if probe.family in TOKEN_FAMILIES else None
        times = [t for t in (metrics.forward_ms, metrics.compiled_step_ms) if t]
        mfu, mbu, info = compute(dev, weight_stats(probe.model, text), attention_shape(text), tokens,
                                 min(times) if times else None, metrics.tokens_per_s,
                                 getattr(probe, "world", 1))
        if times:
            info["forward_timing"] = "compiled" if min(times) == metrics.compiled_step_ms else "eager"
        info["model"] = scope
        if scope == "reduced":
            info["note"] = "; ".join(x for x in ("arch mode: the reduced model's figures (fewer layers, random "
                                                 "weights), not the checkpoint's", info.get("note")) if x)
        metrics.mfu, metrics.mbu = mfu, mbu
        metrics.efficiency = info
    except Exception as e:  # noqa: BLE001 - efficiency must never turn a pass into an error
        metrics.efficiency = {"model": scope, "note": f"not computed: {type(e).__name__}: {str(e)[:200]}"}
