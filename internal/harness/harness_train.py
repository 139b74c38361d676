"""The train step: does the model fine-tune on the target as it does on the float32 CPU reference?

Three steps of forward + backward + AdamW, from the same initial weights, on the target's model (in
its dtype, on its device) and on the float32 CPU reference (harness_reference.py, the one the numerics
stage built; this step trains it, so it is released afterwards and built again if a later stage needs
it). Labels come from the forward inputs (``labels_for``); the run is in eval mode (dropout off, batch
norm on its running statistics), so that target and reference compute the same function: the step
tests forward, backward and the optimizer on the device, not learning. Between steps:
``optimizer.zero_grad(set_to_none=True)``. The target's weights are restored afterwards (a copy on the
host), so that the compile and generate stages run the model the inference stages ran.

A pass needs, on the target:

* every step's loss finite and within the train-loss bound of numerics.json (per device dtype:
  |loss - reference loss| <= train_loss_atol + train_loss_rtol * |reference loss|);
* the gradients finite after every backward (their global norm);
* the weights changed (at least one parameter tensor; the share is recorded: a 16-bit weight whose
  update is below its rounding step does not move, which is the dtype's nature, not a failure).

Whose failure it is follows the inference rule (harness_failures.arbitrate): the reference runs the same
three steps with the same inputs; a failure it shares is the scanner's error (``harness_inputs:…``),
never a verdict; a reference that fails where the target passed leaves nothing to compare with
(``reference:…``). Out of memory is ``oom``.

Metrics (``modes.train.metrics``): ``losses`` and ``reference_losses`` (the three steps),
``step_ms`` (the third step: the first compiles on tpu and allocates the optimizer state, the second
may still compile the optimizer's update), ``tokens_per_s`` (input tokens, with the decoder's for
seq2seq, per second of that step; null without token inputs), ``samples_per_s``, ``peak_mem_bytes``
and ``peak_mem_source`` (accelerators: the allocator's peak, as the inference stages read it; cpu,
which has no allocator statistics: the model's own bytes plus the most torch's CPU allocator held above
them during the first two steps, from torch.profiler's memory events), ``params_changed`` (the share
of parameter tensors that moved), ``max_loss_diff`` and ``loss_tolerance`` (the bound of the worst
step), ``lr``, ``precision`` (tpu: the matmul precision the steps ran at).

Families without a loss (a forward that takes no labels: feature extraction, embeddings, ...) are
``skipped`` with the reason; so is a full-mode model whose weights, gradients and AdamW state do not fit
(the scanner's plan decides, internal/scan/plan.go, with fit.json's train_state_factor, and says so
with --no-train).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import time

import harness_failures

STEPS = 3
# AdamW's learning rate: large enough that a bfloat16 weight of ordinary size moves in one step (the
# update of Adam's first steps is about lr per element; bfloat16's rounding step at 0.02 is 1.2e-4).
LR = 1e-3

# The train verdict's stages: where a train step ended.
STAGE_LABELS, STAGE_FORWARD, STAGE_BACKWARD, STAGE_OPTIMIZER, STAGE_NUMERICS = (
    "labels", "forward", "backward", "optimizer", "numerics")

_CLASS_LABELS = ("ForSequenceClassification", "ForImageClassification", "ForAudioClassification",
                 "ForVideoClassification", "ForMultipleChoice")
_LM_LABELS = ("ForCausalLM", "LMHeadModel", "ForMaskedLM", "ForConditionalGeneration", "ForImageTextToText",
              "ForVision2Seq")


class NoLoss(Exception):
    """The model computes no loss the harness can ask for: the train step is skipped with this reason."""


def forward_params(model) -> set:
    try:
        return set(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        return set()


def labels_for(torch, model, inputs: dict) -> tuple[dict, str]:
    """(the inputs with the labels the loss needs, a note saying which), from the forward inputs (CPU).

    The rule, by the forward's parameters and the model class (transformers' own loss conventions):
    decoder inputs given (seq2seq, speech-seq2seq): the decoder ids become the labels (the model shifts
    them right itself); a CTC head: four token ids other than the blank (pad) id; a classification head
    (sequence, image, audio, video, multiple choice): class 0 for each sample (0.0 for a regression head
    of one label); a token classification head: class 0 at every position; a language-model head
    (causal, masked, conditional generation over input_ids): the input ids; a question-answering head:
    start 0, end 1; a contrastive model (return_loss): its own loss. Anything else is NoLoss."""
    params = forward_params(model)
    name = type(model).__name__
    cfg = model.config
    batch = next((v.shape[0] for v in inputs.values() if hasattr(v, "shape") and v.dim() > 0), 1)
    out = dict(inputs)
    if "labels" in params:
        if "decoder_input_ids" in inputs:
            out["labels"] = inputs["decoder_input_ids"].clone()
            out.pop("decoder_input_ids")
            out.pop("decoder_attention_mask", None)
            return out, "labels: the decoder ids (the model shifts them right)"
        if name.endswith("ForCTC"):
            text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
            vocab, blank = int(getattr(text, "vocab_size", 0) or 0), getattr(text, "pad_token_id", 0)
            ids = [i for i in range(1, vocab) if i != blank][:4]
            if not ids:
                raise NoLoss(f"{name}: no CTC label id besides the blank in a vocabulary of {vocab}")
            out["labels"] = torch.tensor([ids] * batch, dtype=torch.long)
            return out, f"labels: CTC ids {ids}"
        if name.endswith(_CLASS_LABELS):
            if int(getattr(cfg, "num_labels", 2) or 2) == 1 or getattr(cfg, "problem_type", None) == "regression":
                out["labels"] = torch.zeros(batch, dtype=torch.float32)
                return out, "labels: 0.0 per sample (regression head)"
            out["labels"] = torch.zeros(batch, dtype=torch.long)
            return out, "labels: class 0 per sample"
        if name.endswith("ForTokenClassification") and "input_ids" in inputs:
            out["labels"] = torch.zeros_like(inputs["input_ids"])
            return out, "labels: class 0 at every token"
        if name.endswith(_LM_LABELS) and "input_ids" in inputs:
            out["labels"] = inputs["input_ids"].clone()
            return out, "labels: the input ids"
        raise NoLoss(f"{name} takes labels, but the harness has no rule for their form")
    if "start_positions" in params and "end_positions" in params:
        out["start_positions"] = torch.zeros(batch, dtype=torch.long)
        out["end_positions"] = torch.ones(batch, dtype=torch.long)
        return out, "labels: answer span 0..1"
    if "return_loss" in params:
        out["return_loss"] = True
        return out, "the model's own contrastive loss (return_loss=True)"
    raise NoLoss(f"{name}'s forward takes no labels: the model computes no loss")


def tokens_of(inputs: dict) -> int | None:
    """Input tokens one step processes: input_ids, and the decoder's (labels given in place of decoder ids)."""
    n = 0
    for key in ("input_ids", "decoder_input_ids"):
        if key in inputs and hasattr(inputs[key], "numel"):
            n += int(inputs[key].numel())
    if n and "decoder_input_ids" not in inputs and "labels" in inputs and hasattr(inputs["labels"], "dim") \
            and inputs["labels"].dim() == 2 and "input_ids" in inputs \
            and inputs["labels"].shape != inputs["input_ids"].shape:
        n += int(inputs["labels"].numel())
    return n or None


def loss_bound(row: dict, ref_loss: float) -> float:
    """The most a step's loss may differ from the reference's (numerics.json, per device dtype)."""
    return row["train_loss_atol"] + row["train_loss_rtol"] * abs(ref_loss)


class CpuPeak:
    """torch's CPU allocator, watched through torch.profiler's memory events: the most it held above what
    was allocated when the window opened (cpu has no allocator statistics of its own)."""

    def __init__(self, torch):
        self.torch = torch
        self.prof = None
        self.peak = None

    @contextlib.contextmanager
    def window(self):
        from torch.profiler import ProfilerActivity, profile

        os.environ.setdefault("KINETO_LOG_LEVEL", "5")
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
            yield
        self.prof = prof

    def bytes(self) -> int | None:
        if self.prof is None:
            return None
        try:
            events = [e for e in self.prof.profiler.kineto_results.events() if e.name() == "[memory]"]
            cur = peak = 0
            for e in sorted(events, key=lambda e: e.start_ns()):
                cur += int(e.nbytes())
                peak = max(peak, cur)
        except Exception:  # noqa: BLE001 - a profiler without these fields: not measured
            return None
        return peak if events else None


def tensor_bytes(model) -> int:
    seen, n = set(), 0
    for t in list(model.parameters()) + list(model.buffers()):
        key = (t.data_ptr(), t.numel())
        if key not in seen:
            seen.add(key)
            n += t.numel() * t.element_size()
    return n


def run_steps(torch, model, inputs: dict, sync, *, watch=None, before_step=None, trace=None) -> dict:
    """STEPS steps of forward + backward + AdamW on model with inputs (on the model's device).

    Returns {"losses", "grad_norms", "times", "changed", "tensors", "exc", "stage"}: exc is the
    exception that ended the steps (None when all ran), stage where it was raised. watch is a
    context-manager factory opened around the first two steps (cpu memory); before_step(i) runs before
    step i (tests inject faults there); trace, a context-manager factory, is opened around the first step
    alone (harness_ops.py: the ops of forward, backward and the optimizer's step)."""
    res = {"losses": [], "grad_norms": [], "times": [], "changed": None, "tensors": 0, "exc": None,
           "stage": STAGE_FORWARD}
    params = [p for p in model.parameters() if p.requires_grad]
    res["tensors"] = len(params)
    opt = None
    try:
        before = fingerprint(torch, params)
        opt = torch.optim.AdamW(params, lr=LR)
        with watch() if watch is not None else contextlib.nullcontext():
            for i in range(STEPS - 1 if watch is not None else 0):
                with trace() if trace is not None and i == 0 else contextlib.nullcontext():
                    _step(torch, model, opt, params, inputs, sync, res, before_step, i)
        for i in range(len(res["losses"]), STEPS):
            with trace() if trace is not None and i == 0 else contextlib.nullcontext():
                _step(torch, model, opt, params, inputs, sync, res, before_step, i)
        res["stage"] = STAGE_NUMERICS
        after = fingerprint(torch, params)
        res["changed"] = sum(1 for a, b in zip(before, after) if a != b)
    except Exception as e:  # noqa: BLE001 - the caller classifies it
        res["exc"] = e
    finally:
        if opt is not None:
            opt.zero_grad(set_to_none=True)
        del opt
    return res


def fingerprint(torch, params) -> list:
    """Per parameter tensor: its sum and its norm (float32, read on the host): a tensor moved when either did."""
    with torch.no_grad():
        if not params:
            return []
        sums = torch.stack([p.detach().float().sum() for p in params]).cpu().tolist()
        norms = torch.stack([p.detach().float().norm() for p in params]).cpu().tolist()
    return list(zip(sums, norms))


def _step(torch, model, opt, params, inputs, sync, res, before_step, i) -> None:
    if before_step is not None:
        before_step(i)
    sync()
    t = time.perf_counter()
    res["stage"] = STAGE_FORWARD
    opt.zero_grad(set_to_none=True)
    out = model(**inputs)
    loss = out.loss if hasattr(out, "loss") else (out.get("loss") if isinstance(out, dict) else None)
    if loss is None:
        raise NoLoss(f"{type(model).__name__} returned no loss for the labels given")
    if loss.dim() > 0:
        loss = loss.mean()
    res["stage"] = STAGE_BACKWARD
    loss.backward()
    res["stage"] = STAGE_OPTIMIZER
    opt.step()
    sync()
    res["times"].append(time.perf_counter() - t)
    grads = [p.grad.detach().float().norm() for p in params if p.grad is not None]
    res["grad_norms"].append(float(torch.stack(grads).norm()) if grads else 0.0)
    res["losses"].append(float(loss.detach().float()))


def snapshot(torch, model) -> dict:
    """The model's weights and buffers, copied to the host (restore puts them back in place)."""
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def restore(model, snap: dict) -> None:
    model.load_state_dict(snap, strict=True)
    for p in model.parameters():
        p.grad = None


def verdict_of(status: str, stage: str | None, *, failure_class=None, signature=None, message=None, metrics=None,
               note="", reason=None, op=None) -> dict:
    v = {"status": status, "stage": stage, "failure_class": failure_class, "op": op, "signature": signature,
         "message": message, "metrics": metrics or {}}
    if reason:
        v["reason"] = reason
    if note:
        v["note"] = note[:1000]
    return v


def skipped(reason: str, message: str) -> dict:
    return verdict_of("skipped", None, reason=reason, message=harness_failures.truncate_bytes(message, 2048))


def judge_losses(dev: dict, ref: dict, row: dict) -> tuple[bool, str, str, float | None, float | None]:
    """(ok, why, signature detail, largest |loss - reference loss|, its bound) of the target's steps
    against the reference's (both ran all steps)."""
    worst, worst_bound = None, None
    for i, (d, r) in enumerate(zip(dev["losses"], ref["losses"])):
        if not math.isfinite(d):
            return False, f"train step {i + 1}: loss {d} is not finite (reference {r:.6g})", "train loss not finite", \
                worst, worst_bound
        bound = loss_bound(row, r)
        diff = abs(d - r)
        if worst is None or diff - bound > worst - worst_bound:
            worst, worst_bound = diff, bound
        if diff > bound:
            return False, (f"train step {i + 1}: loss {d:.6g} differs from the float32 cpu reference's {r:.6g} by "
                           f"{diff:.3g} > {bound:.3g}"), "train loss differs from the reference", worst, worst_bound
    for i, g in enumerate(dev["grad_norms"]):
        if not math.isfinite(g):
            return (
                False,
                f"train step {i + 1}: the gradients are not finite (norm {g})",
                "train gradients not finite",
                worst,
                worst_bound,
            )
    if not dev["changed"]:
        return False, f"train: no weight changed in {STEPS} AdamW steps (lr {LR})", "train weights unchanged", \
            worst, worst_bound
    return True, "", "", worst, worst_bound


def reference_problem(ref: dict) -> str:
    """Why the reference's own steps are no basis for a comparison ("" when they are)."""
    if any(not math.isfinite(x) for x in ref["losses"]):
        return "its loss is not finite"
    if any(not math.isfinite(x) for x in ref["grad_norms"]):
        return "its gradients are not finite"
    if not ref["changed"]:
        return "its weights did not change"
    return ""
