"""Every way a user runs the model: the verdict matrix of a probe (result.modes).

A probe's status stays its inference verdict (load, eager forward, numerics, compile, generate). Beside
it, in the same process, sharing the load, the float32 CPU reference and the tokenised inputs,
``result.modes`` holds one small verdict per way of running the model, each
``{"status", "stage", "signature", "message", "metrics"}`` (plus ``failure_class``, ``op``, ``reason``
and ``note`` where they apply):

* ``eager`` (cpu, cuda): the inference's eager forward and its numerics. There is one eager mode off
  TorchTPU, and the verdict's note says so.
* ``eager_defer_and_fuse`` and ``eager_defer_never`` (tpu): the forward under each of TorchTPU's eager
  modes, through the public ``torch.tpu.set_eager_mode(torch.tpu.EagerMode.X)`` (DEFER_AND_FUSE is the
  default: ops are deferred and fused into executables; DEFER_NEVER dispatches each op at once); each
  warmed up until TorchTPU's executable cache settles, then timed as the forward stage is (median of
  --steps), and held to the reference like the inference forward (numerics.json).
* ``compiled``: the compile stage (torch.compile), with its graphs, graph breaks (dynamo's counters,
  the first three reasons, shortened) and recompiles, on every target.
* ``train``: three steps of forward + backward + AdamW against the reference's (harness_train.py).

Precision (tpu): numerics are measured at the backend's default float32 matmul precision and at
``torch.tpu.Precision.HIGHEST`` (TorchTPU's default runs float32 matmuls as one bfloat16 pass). The run's
own forward is one of the two (HIGHEST for a float32 run, the default otherwise); the other is one more
forward. A model that passes only at HIGHEST passes, with ``precision_sensitive: true`` (its page says to
run it at HIGHEST); ``metrics.precision`` is the precision the forward's figures were measured at,
``metrics.numerics_precision`` that of the numerics figures (the one that decided), and
``metrics.precision_checks`` both comparisons. Off tpu there is one precision and these are null.

Only torch_tpu 0.2.0's public API is used (tests/test_tpu_api.py reads its registry): EagerMode,
set_eager_mode, precision and Precision, all exported (experimental).

``--no-modes`` runs none of the extra work (the train step, the eager modes, the second precision):
``make bench`` compares a probe with and without it. The verdicts read from the inference stages
(``eager``, ``compiled``) cost nothing and stay.
"""

from __future__ import annotations

import statistics
import time

import harness_context
import harness_failures
import harness_numerics
import harness_train

# The eager modes of TorchTPU 0.2.0 the matrix times (torch.tpu.EagerMode members), by verdict key.
EAGER_MODES = (("eager_defer_and_fuse", "DEFER_AND_FUSE"), ("eager_defer_never", "DEFER_NEVER"))
ONE_EAGER_MODE = "{target} has one eager mode (TorchTPU's eager modes are tpu-only): this is the inference forward"
GRAPH_BREAK_REASONS = 3
REASON_CHARS = 160
PRECISION_HINT = ("passes the numerics only at torch.tpu.Precision.HIGHEST: run it under "
                  "torch.tpu.precision(torch.tpu.Precision.HIGHEST)")


def short_reason(reason: str) -> str:
    """A graph-break reason as dynamo words it, cut to its first line."""
    first = next((l.strip() for l in str(reason).splitlines() if l.strip()), "")
    return first if len(first) <= REASON_CHARS else first[:REASON_CHARS - 1] + "…"


def graph_breaks(counters, before: dict) -> tuple[int, list]:
    """(graph breaks since before, the first GRAPH_BREAK_REASONS reasons, shortened) from dynamo's
    counters["graph_break"] (reason -> count) and a copy of it taken earlier."""
    now = dict(counters.get("graph_break", {})) if hasattr(counters, "get") else {}
    new = {r: n - before.get(r, 0) for r, n in now.items() if n - before.get(r, 0) > 0}
    reasons = []
    for r in new:
        s = short_reason(r)
        if s and s not in reasons:
            reasons.append(s)
    return sum(new.values()), reasons[:GRAPH_BREAK_REASONS]


class TpuApi:
    """torch.tpu as the matrix uses it (public exports only: EagerMode, set_eager_mode, precision,
    Precision)."""

    def __init__(self, tpu):
        self.tpu = tpu

    def has_eager_modes(self) -> bool:
        return hasattr(self.tpu, "set_eager_mode") and hasattr(self.tpu, "EagerMode")

    def has_precision(self) -> bool:
        return hasattr(self.tpu, "precision") and hasattr(self.tpu, "Precision")

    def eager_mode(self, member: str):
        return self.tpu.set_eager_mode(getattr(self.tpu.EagerMode, member))

    def precision(self, highest: bool):
        return self.tpu.precision(self.tpu.Precision.HIGHEST if highest else self.tpu.Precision.DEFAULT)


class Modes(harness_context.Stage):
    """The matrix's stages (see the module docstring), composed by harness.Probe: its verdicts are the context's
    modes, compiled_metrics and precision_checks."""

    def __init__(self, ctx, stage, skip_stage, output_tensors, tolerance_row, forward_kwargs):
        super().__init__(ctx, stage, skip_stage)
        self.output_tensors = output_tensors  # (harness.Probe)
        self.tolerance_row = tolerance_row
        self.forward_kwargs = forward_kwargs
        self.precision_sensitive = False
        self.peak_before_train = None
        self.train_ran_on_device = False

    # --- tpu ---

    def tpu_api(self) -> TpuApi | None:
        if self.target != "tpu" or self.dev is None or self.dev.mod is None:
            return None
        return TpuApi(self.dev.mod)

    def precision_name(self) -> str | None:
        """The matmul precision device steps run at: tpu only."""
        if self.target != "tpu" or self.dev is None:
            return None
        return "highest" if self.dev.highest else "default"

    # --- numerics at both precisions (tpu) ---

    def precision_verdict(self, refs: dict, dtype_name: str, ok: bool, why: str, key: str, notes: list):
        """The numerics verdict (ok, why, key) once both precisions are measured (tpu with torch.tpu.precision):
        a pass at either precision passes; a pass only at HIGHEST is precision_sensitive. Elsewhere, or with
        --no-modes, the verdict as it was."""
        api = self.tpu_api()
        if api is None or not api.has_precision() or self.args.no_modes or getattr(self, "world", 1) > 1:
            return ok, why, key
        here = self.precision_name()
        other = "default" if here == "highest" else "highest"
        torch = self.torch
        with api.precision(other == "highest"), torch.no_grad():
            out = self.model(**self.dev_inputs)
            self.dev.sync()
        outs = self.output_tensors(out)
        cmps = harness_numerics.compare_all(torch, refs, outs, self.out_kinds, self.tolerance_row(dtype_name),
                              f"device at {other} precision vs reference")
        other_ok = cmps["ok"]
        self.precision_checks = {
            here: {"ok": ok, "max_abs_diff": self.metrics.max_abs_diff,
                   "top1_agreement": self.metrics.top1_agreement, "why": why or None},
            other: {"ok": other_ok, "max_abs_diff": finite_or_none(cmps["primary"]["max_abs_diff"]),
                    "top1_agreement": finite_or_none(cmps["primary"]["top1"]), "why": cmps["why"] or None},
        }
        notes.append(f"numerics at {other} precision: {'pass' if other_ok else 'fail'}")
        default_ok = self.precision_checks["default"]["ok"]
        highest_ok = self.precision_checks["highest"]["ok"]
        self.metrics.numerics_precision = here
        if ok or not other_ok:
            return ok, why, key
        # the run's own precision failed, the other passed: the other decides
        cmp = cmps["primary"]
        m = self.metrics
        m.max_abs_diff, m.top1_agreement = finite_or_none(cmp["max_abs_diff"]), finite_or_none(cmp["top1"])
        m.tolerance, m.rel_error = finite_or_none(cmp["tolerance"]), finite_or_none(cmps["rel_error"])
        m.cosine_similarity, m.numerics_precision = finite_or_none(cmps["cosine"]), other
        if highest_ok and not default_ok:
            self.precision_sensitive = True
            notes.append(PRECISION_HINT)
        return True, "", ""

    # --- the matrix's own stages, after numerics ---

    def stage_modes(self) -> None:
        """The eager modes (tpu) and the train step, after numerics (which kept the reference and its outputs,
        self.ref_outputs); then the reference is released (the train step trained it: a later stage that fails
        builds it again). Never raises for the model: each mode has its own verdict."""
        try:
            if getattr(self, "world", 1) > 1:  # a sharded probe: each rank holds a part of the model
                self.modes["train"] = harness_train.skipped("sharded", "the train step runs on one device only: this "
                                                  f"probe is sharded over {self.world}")
            elif not self.args.no_modes:
                self.run_eager_modes()
                self.run_train()
        finally:
            self.reference.release()

    def run_eager_modes(self) -> None:
        api = self.tpu_api()
        if api is None:
            return
        if not api.has_eager_modes():
            for key, _ in EAGER_MODES:
                self.modes[key] = harness_train.skipped("unsupported", "this torch_tpu has no torch.tpu.set_eager_mode")
            return
        for key, member in EAGER_MODES:
            log(f"stage=modes {key} start")
            self.modes[key] = self.eager_verdict(api, member)
            log(f"stage=modes {key} {self.modes[key]['status']}")

    def eager_verdict(self, api: TpuApi, member: str) -> dict:
        torch, dev, args = self.torch, self.dev, self.args
        dtype_name = str(self.dtype).replace("torch.", "")
        metrics = {"forward_ms": None, "first_forward_s": None, "max_abs_diff": None, "top1_agreement": None,
                   "precision": self.precision_name()}
        stage = "forward"
        try:
            with api.eager_mode(member), torch.no_grad():
                dev.sync()
                t = time.perf_counter()
                out = self.model(**self.dev_inputs)
                dev.sync()
                metrics["first_forward_s"] = round(time.perf_counter() - t, 4)
                dev.warm(lambda: self.model(**self.dev_inputs), self.warmup_max_extra)
                out, times = timed_calls(lambda: self.model(**self.dev_inputs), dev.sync, args.steps)
            metrics["forward_ms"] = round(statistics.median(times) * 1000, 4)
            stage = "numerics"
            cmps = harness_numerics.compare_all(torch, self.ref_outputs, self.output_tensors(out), self.out_kinds,
                                  self.tolerance_row(dtype_name), f"device ({member}) vs reference")
            metrics["max_abs_diff"] = finite_or_none(cmps["primary"]["max_abs_diff"])
            metrics["top1_agreement"] = finite_or_none(cmps["primary"]["top1"])
            if not cmps["ok"]:
                raise harness_failures.NumericsMismatch(cmps["why"], f"{member} {cmps['key']}")
        except Exception as e:  # noqa: BLE001 - the mode's verdict; the reference passed this forward already
            c = harness_failures.classify(e, "forward")
            return harness_train.verdict_of(c["status"], stage, failure_class=c["failure_class"], op=c["op"],
                                  signature=c["signature"], message=c["message"], metrics=metrics,
                                  note="the float32 cpu reference passed this forward (numerics stage)")
        return harness_train.verdict_of(
            "pass", stage, metrics=metrics, note=f"torch.tpu.set_eager_mode(EagerMode.{member})"
        )

    # --- train ---

    def train_inputs(self, model) -> tuple[dict, str]:
        """(the target's and the reference's inputs with labels, on the CPU; the note) of the train step."""
        return harness_train.labels_for(self.torch, model, self.inputs_cpu)

    def train_target_model(self):
        """The model the target trains (harness_testing wraps it to inject a failure)."""
        return self.model

    def run_train(self) -> None:
        args = self.args
        if args.no_train:
            self.modes["train"] = harness_train.skipped("too_large", f"the scanner's plan: {args.no_train}")
            return
        log("stage=train start")
        t0 = time.perf_counter()
        v = self.train_verdict()
        log(f"stage=train {v['status']} {time.perf_counter() - t0:.2f}s" + (f" {v.get('message')}" if v.get("message")
                                                                            else ""))
        self.modes["train"] = v

    def train_verdict(self) -> dict:
        torch, dev = self.torch, self.dev
        dtype_name = str(self.dtype).replace("torch.", "")
        row_name = self.tolerance_row(dtype_name)
        row = harness_numerics.TOLERANCES[row_name]
        try:
            inputs, note = self.train_inputs(self.model)
        except harness_train.NoLoss as e:
            return harness_train.skipped("no_loss", str(e))
        except Exception as e:  # noqa: BLE001 - the harness's labels: its own error
            c = harness_failures.classify(e, "forward")
            return harness_train.verdict_of("error", harness_train.STAGE_LABELS, failure_class=c["failure_class"],
                                  signature=f"{harness_failures.INPUTS_ORIGIN}:train labels", message=c["message"])
        notes = [note, "eval mode (dropout off) so that target and reference compute the same function"]
        metrics = {
            "losses": None,
            "reference_losses": None,
            "step_ms": None,
            "tokens_per_s": None,
            "samples_per_s": None,
            "peak_mem_bytes": None,
            "peak_mem_source": None,
            "params_changed": None,
            "max_loss_diff": None,
            "loss_tolerance": None,
            "lr": harness_train.LR,
            "precision": self.precision_name(),
        }
        # the target: its own copy of the weights is kept on the host, and put back after the steps
        model = self.train_target_model()
        snap = harness_train.snapshot(torch, self.model)
        self.peak_before_train = dev.peak_bytes()
        resettable = dev.peak_scope != "process"
        if resettable:
            dev.reset_peak()
        cpu_peak = harness_train.CpuPeak(torch) if self.target == "cpu" else None
        dev_inputs = self.forward_kwargs(inputs)
        base = harness_train.tensor_bytes(self.model) + sum(v.numel() * v.element_size() for v in dev_inputs.values()
                                                   if hasattr(v, "numel"))
        try:
            tr = harness_train.run_steps(
                torch,
                model,
                dev_inputs,
                dev.sync,
                watch=cpu_peak.window if cpu_peak else None,
                before_step=self.before_train_step,
                trace=lambda: self.ops.trace("train"),
            )
        finally:
            self.train_ran_on_device = True
            if cpu_peak is not None:
                extra = cpu_peak.bytes()
                if extra is not None:
                    metrics["peak_mem_bytes"] = base + extra
                    metrics["peak_mem_source"] = ("the model's bytes and the most torch's cpu allocator held above "
                                                  "them in steps 1-2 (torch.profiler memory events)")
            else:
                metrics["peak_mem_bytes"] = dev.peak_bytes()
                if metrics["peak_mem_bytes"] is not None:
                    metrics["peak_mem_source"] = dev.peak_name + (" (the process's peak)" if not resettable else "")
            if resettable:
                dev.reset_peak()
            harness_train.restore(self.model, snap)
            del snap
        metrics["losses"] = [finite_or_none(x) for x in tr["losses"]] or None
        if tr["times"] and len(tr["times"]) == harness_train.STEPS:
            step = tr["times"][-1]
            metrics["step_ms"] = round(step * 1000, 4)
            batch = next((v.shape[0] for v in inputs.values() if hasattr(v, "shape") and v.dim() > 0), 1)
            metrics["samples_per_s"] = round(batch / step, 4) if step > 0 else None
            tokens = harness_train.tokens_of(inputs)
            metrics["tokens_per_s"] = round(tokens / step, 4) if tokens and step > 0 else None
        if tr["changed"] is not None and tr["tensors"]:
            metrics["params_changed"] = round(tr["changed"] / tr["tensors"], 4)
        # the reference: the same steps, float32 on the CPU
        log("stage=train the same steps on the float32 cpu reference")
        ref_exc, ref = None, None
        try:
            ref_model = self.reference.model()
            ref = harness_train.run_steps(torch, ref_model, inputs, lambda: None)
            ref_exc = ref["exc"]
        except Exception as e:  # noqa: BLE001 - building the reference failed
            ref_exc = e
        if ref is not None and ref["losses"]:
            metrics["reference_losses"] = [finite_or_none(x) for x in ref["losses"]]
        if tr["exc"] is not None:
            if isinstance(tr["exc"], harness_train.NoLoss):
                return harness_train.skipped("no_loss", str(tr["exc"]))
            c = harness_failures.classify(tr["exc"], "train")
            ref_c = harness_failures.classify(ref_exc, "train") if ref_exc is not None else None
            out, arb = harness_failures.arbitrate("train", c, ref_c, True)
            return harness_train.verdict_of(
                out["status"],
                tr["stage"],
                failure_class=out["failure_class"],
                op=out["op"],
                signature=out["signature"],
                message=out["message"],
                metrics=metrics,
                note="; ".join(n for n in notes + [arb] if n),
            )
        if ref_exc is not None:
            c = harness_failures.classify(ref_exc, "train")
            return harness_train.verdict_of(
                "error",
                harness_train.STAGE_NUMERICS,
                failure_class=c["failure_class"],
                signature=f"{harness_failures.REFERENCE_ORIGIN}:train {c['signature']}"[
                    : harness_failures.SIGNATURE_LIMIT
                ],
                message=f"the float32 cpu reference failed the train step where the target passed: {c['message']}",
                metrics=metrics,
                note="; ".join(notes),
            )
        ok, why, detail, worst, bound = harness_train.judge_losses(tr, ref, row)
        metrics["max_loss_diff"] = finite_or_none(worst)
        metrics["loss_tolerance"] = finite_or_none(bound)
        notes.append(f"losses held to the {row_name} train-loss bound")
        if not ok:
            problem = harness_train.reference_problem(ref)
            if problem:
                return harness_train.verdict_of(
                    "error",
                    harness_train.STAGE_NUMERICS,
                    failure_class="numerics_mismatch",
                    signature=f"{harness_failures.INPUTS_ORIGIN}:{detail}",
                    message=f"not a verdict on the model: the float32 cpu reference fails the train "
                    f"step too ({problem}); on the target: {why}",
                    metrics=metrics,
                    note="; ".join(notes),
                )
            return harness_train.verdict_of("fail", harness_train.STAGE_NUMERICS, failure_class="numerics_mismatch",
                                  signature=f"numerics_mismatch:{detail}", message=why, metrics=metrics,
                                  note="; ".join(notes))
        return harness_train.verdict_of("pass", harness_train.STAGE_NUMERICS, metrics=metrics, note="; ".join(notes))

    def before_train_step(self, i: int) -> None:
        """Called before each of the target's train steps (harness_testing injects faults here)."""

    # --- graph breaks (compile stage) ---

    def graph_break_counts(self):
        """dynamo's graph-break counter as it stands (copied), for graph_breaks() to diff against."""
        from torch._dynamo.utils import counters

        return dict(counters.get("graph_break", {}))

    def record_graph_breaks(self, before: dict, graphs: int) -> None:
        from torch._dynamo.utils import counters

        n, reasons = graph_breaks(counters, before)
        self.metrics.graph_breaks = n
        self.metrics.graph_break_reasons = reasons
        self.compiled_metrics.update(graphs=graphs, graph_breaks=n, graph_break_reasons=reasons)

    # --- the result ---

    def inference_peak(self):
        """The inference's peak_mem_bytes: the train step's memory is not the inference's. Resettable
        allocators (cuda) were reset after it, so the peak is the larger of before and after; on tpu
        (never reset) the peak before the train step, when it ran."""
        if self.dev is None:
            return None
        now = self.dev.peak_bytes()
        if not self.train_ran_on_device:
            return now
        if self.dev.peak_scope == "process":
            return self.peak_before_train
        vals = [v for v in (self.peak_before_train, now) if v is not None]
        return max(vals) if vals else None

    def finish_modes(self, res) -> None:
        """res.modes (the verdicts read from the inference stages, and those the matrix ran),
        res.precision_sensitive and metrics.precision / precision_checks, of res, a harness_result.Result."""
        ran = {s.stage: s for s in self.stages}
        failed_at = res.stage if res.status not in ("pass", "skipped") else None
        inference = {k: getattr(res, k) for k in ("status", "failure_class", "op", "signature", "message")}
        if self.target in ("cpu", "cuda") and "forward" in ran:
            m = {"forward_ms": self.metrics.forward_ms, "first_forward_s": self.metrics.first_forward_s,
                 "max_abs_diff": self.metrics.max_abs_diff, "top1_agreement": self.metrics.top1_agreement}
            note = ONE_EAGER_MODE.format(target=self.target)
            if "numerics" in ran and ran["numerics"].ok:
                self.modes["eager"] = harness_train.verdict_of("pass", "numerics", metrics=m, note=note)
            elif failed_at in ("forward", "numerics"):
                self.modes["eager"] = harness_train.verdict_of(stage=failed_at, metrics=m, note=note, **inference)
        comp = ran.get("compile")
        if comp is not None and comp.skipped is not True:
            m = {"compile_s": self.metrics.compile_s, "compiled_step_ms": self.metrics.compiled_step_ms,
                 "graphs": None, "graph_breaks": None, "graph_break_reasons": None, "recompiles": None,
                 "precision": self.precision_name()}
            m.update(self.compiled_metrics)
            if comp.ok:
                self.modes["compiled"] = harness_train.verdict_of("pass", "compile", metrics=m, note=comp.note_text())
            elif failed_at == "compile":
                self.modes["compiled"] = harness_train.verdict_of(stage="compile", metrics=m, note=comp.note_text(),
                                                                  **inference)
        if self.modes:
            res.modes = {k: clean(v) for k, v in self.modes.items()}
        if self.precision_sensitive:
            res.precision_sensitive = True
        res.metrics.precision = self.precision_name()
        if self.precision_checks is not None:
            res.metrics.precision_checks = self.precision_checks


def timed_calls(call, sync, steps: int) -> tuple:
    """(the last call's output, the seconds of each of max(1, steps) calls, each synced)."""
    out, times = None, []
    for _ in range(max(1, steps)):
        t = time.perf_counter()
        out = call()
        sync()
        times.append(time.perf_counter() - t)
    return out, times


def clean(v: dict) -> dict:
    """A verdict with every float finite or null (the result file is strict JSON)."""
    out = dict(v)
    m = {}
    for k, x in (v.get("metrics") or {}).items():
        if isinstance(x, float):
            x = finite_or_none(x)
        elif isinstance(x, list):
            x = [finite_or_none(y) if isinstance(y, float) else y for y in x]
        m[k] = x
    out["metrics"] = m
    return out


def finite_or_none(x):
    """A float, or None when x is not one or not finite (the result file is strict JSON)."""
    import math

    if x is None:
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def log(msg: str) -> None:
    import sys

    print(msg, file=sys.stderr, flush=True)
