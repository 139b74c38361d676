"""The ops a model needs on TorchTPU, traced during a probe that does not run on a TPU (result.ops_traced).

A host without a chip can still say which aten ops a model's run dispatches: a TorchDispatchMode sees every op
after autograd, where the dispatcher picks a backend's kernel. The probe traces, on its own device (cpu, cuda):

* ``forward``:  the float32 CPU reference's forward of the numerics stage, which every probe runs (the same model and
                inputs in float32 on the CPU: the op names are the run's; no timed call is traced);
* ``generate``: one more eager generate() of two tokens with the stage's settings, after the measured one;
* ``train``:    the first of the train step's three steps (forward with labels, backward, AdamW's step, its
                optimizer step as on the TPU: below); the third is the one timed.

The names are then renamed to what the TPU reaches (tpu_ops.json "map", which the scanner reads too:
internal/harness/tpuops.go): the CPU's own choices (scaled_dot_product_attention's ``*_for_cpu`` kernels,
``_fused_sdp_choice``, oneDNN's ``mkldnn_*``, ``*_cpu`` variants) become the op torch routes a PrivateUse1 tensor
to, or nothing where the TPU reaches none. Ops the CPU decomposes but the TPU implements whole (aten::linear,
aten::rms_norm, aten::cross_entropy_loss: torch_tpu registers their AutogradPrivateUse1 kernels) show as their
CPU pieces (aten::addmm, aten::_log_softmax, ...), which the TPU implements too: nothing is charged for them.

The optimizer's step is traced as the TPU would dispatch it (optimizer_as_on_tpu): torch's optimizers leave
``foreach=None`` to torch.optim.optimizer._default_to_fused_or_foreach, which picks the multi-tensor path for
the devices of torch.utils._foreach_utils._get_foreach_kernels_supported_devices() (cuda, xpu, mtia and the
PrivateUse1 backend, the TPU) and the per-tensor loop on the CPU. A loop's ops (aten::lerp_, aten::addcdiv_,
...) cannot be renamed one by one into the aten::_foreach_* op the TPU reaches, so for the traced step alone a
global step pre-hook turns ``foreach`` on in every group that left it to that choice (not fused, not
differentiable, plain tensors), and the post-hook puts it back: the trace names aten::_foreach_lerp_.Scalar,
aten::_foreach_addcdiv_.ScalarList, ... (torch_tpu 0.2.0 implements them all, and _fused_adam(w)_ too).

The scanner judges the names against the runtime's kernel table (harness_kernels.py, in a process of its own)
and records a prediction (result.tpu_ops), never a TPU result. A trace never fails a probe: an op the mode
cannot follow drops that part of the trace, with a note. ``--no-ops-trace`` turns it off (``make bench``
compares a probe with and without it).
"""

from __future__ import annotations

import contextlib
import json
import os

_HERE = os.path.dirname(os.path.abspath(__file__))

with open(os.path.join(_HERE, "tpu_ops.json"), encoding="utf-8") as _fh:
    TABLE = json.load(_fh)

KINDS = ("forward", "generate", "train")


def op_name(func) -> str:
    """An OpOverload's dispatcher name: aten::add.Tensor, aten::addmm (the default overload has no suffix); an
    operator without a schema (a higher-order operator) by its own name, in the namespace higher_order::."""
    s = getattr(func, "_schema", None)
    if s is None:
        return "higher_order::" + str(getattr(func, "__name__", None) or type(func).__name__)
    return s.name + ("." + s.overload_name if s.overload_name else "")


def to_tpu(name: str) -> str | None:
    """The op the TPU reaches for name (tpu_ops.json "map"; name itself when unmapped), None when it reaches
    none (a map entry of null, a skipped namespace such as profiler::)."""
    ns = name.split("::", 1)[0] if "::" in name else ""
    if ns in TABLE["skip_namespaces"]:
        return None
    entry = TABLE["map"].get(name)
    return name if entry is None else entry["tpu"]


def cpu_only(name: str) -> bool:
    """Whether a name says it is the CPU's own (tpu_ops.json "cpu_only_markers")."""
    return any(m in name for m in TABLE["cpu_only_markers"])


def renamed(funcs) -> list[str]:
    """The sorted TPU names of the ops (OpOverloads) a trace saw."""
    out = set()
    for f in funcs:
        n = to_tpu(op_name(f))
        if n is not None:
            out.add(n)
    return sorted(out)


def _mode_class():
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpRecorder(TorchDispatchMode):
        """Adds every op it sees to seen (the OpOverload itself: hashing it is cheaper than naming it)."""

        def __init__(self, seen: set):
            super().__init__()
            self.seen = seen

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.add(func)
            return func(*args, **(kwargs or {}))

    return OpRecorder


@contextlib.contextmanager
def optimizer_as_on_tpu():
    """Inside the block, every optimizer step takes the path torch takes for a PrivateUse1 device: ``foreach`` on
    in each param group that left it to torch (None), unless the group is fused or differentiable or holds a
    tensor type the multi-tensor kernels do not take (torch.optim.optimizer._default_to_fused_or_foreach's
    rule). Each group is put back after its step, and at the block's end whatever happens."""
    try:
        from torch.optim import optimizer as topt

        supported = tuple(topt._foreach_supported_types)
    except Exception:  # noqa: BLE001 - an older torch: the loop's ops are traced
        yield
        return
    flipped: list = []

    def restore(*_):
        while flipped:
            flipped.pop()["foreach"] = None

    def pre(opt, args, kwargs):
        for g in opt.param_groups:
            if g.get("foreach", False) is None and not g.get("fused") and not g.get("differentiable") and \
                    all(type(p) in supported for p in g["params"]):
                g["foreach"] = True
                flipped.append(g)

    hooks = [topt.register_optimizer_step_pre_hook(pre), topt.register_optimizer_step_post_hook(restore)]
    try:
        yield
    finally:
        for h in hooks:
            h.remove()
        restore()


class Tracer:
    """The trace of one probe: per kind, the ops seen; the kinds whose trace failed are dropped."""

    def __init__(self):
        self.enabled = False
        self.seen: dict[str, set] = {}
        self.notes: list[str] = []
        self._cls = None

    @contextlib.contextmanager
    def trace(self, kind: str):
        """Record the ops dispatched inside the block as kind's (nothing when the tracer is off). An exception of
        the block propagates: the caller decides whose it is."""
        if not self.enabled:
            yield
            return
        if self._cls is None:
            self._cls = _mode_class()
        seen = self.seen.setdefault(kind, set())
        with optimizer_as_on_tpu() if kind == "train" else contextlib.nullcontext(), self._cls(seen):
            yield

    def call(self, kind: str, fn) -> None:
        """Run fn under the trace of kind, for the trace alone: its failure drops kind's trace with a note and
        never reaches the probe."""
        if not self.enabled:
            return
        try:
            with self.trace(kind):
                fn()
        except Exception as e:  # noqa: BLE001 - a trace is never a verdict
            self.seen.pop(kind, None)
            self.notes.append(f"{kind} not traced: {type(e).__name__}: {str(e)[:160]}")

    def result(self) -> dict | None:
        """result.ops_traced: kind -> the sorted TPU names; None when nothing was traced (or the forward was
        not: a trace without the forward says too little to judge)."""
        if not self.enabled or "forward" not in self.seen:
            return None
        out = {k: renamed(self.seen[k]) for k in KINDS if k in self.seen}
        if self.notes:
            out["notes"] = self.notes[:3]
        return out
