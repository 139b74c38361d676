"""The compile stage of a probe (harness.py): torch.compile(model, backend, dynamic=False) on the forward inputs.

The backend is tpu on tpu, inductor on cuda and cpu (aot_eager on a cpu host without a C++ compiler, and for a
sharded probe on cpu), or --compile-backend. The first call is compile_s; the second, with the same shapes,
must not make a new dynamo graph (recompile); on tpu TorchTPU's executable cache may still miss for up to
harness.WARMUP_MAX_EXTRA (20) more calls but must then settle; the median of --steps calls is
compiled_step_ms, during which nothing may compile. The compiled outputs are held to the eager ones with the
numerics checks. Graph breaks and recompiles go to result.modes.compiled (harness_modes.py).

The stage is bounded by the probe's wall-clock limit (--deadline-s, the scanner's probe timeout from the harness's
start): compile_budget leaves a reserve for generate and the result, and a compile that runs past what is left is
stopped (SIGALRM): the stage is skipped, result.modes.compiled is timeout at compile with the bound in its message,
and the probe goes on, so the eager verdict stands instead of the whole probe timing out without one. With no time
left at all the stage is skipped before it starts.

CompileStage is a stage harness.Probe composes (harness_context.py); harness_testing overrides compile_model in a
subclass.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import statistics
import time

import harness_context
import harness_failures
import harness_modes
import harness_numerics

# What the stages after compile (generate, writing the result) keep of the probe's time limit: a quarter of it, at
# least 30 s.
RESERVE_SHARE = 0.25
RESERVE_MIN_S = 30.0


class OverBudget(BaseException):
    """The compile stage ran past its bound. A BaseException, so that dynamo and inductor, which wrap the
    Exceptions raised inside them, pass it through."""


def compile_budget(deadline_s: float | None, elapsed_s: float) -> float | None:
    """Seconds the compile stage may take: what is left of the probe's limit (deadline_s from the harness's start,
    elapsed_s of it gone) less the reserve of the stages after it; None without a limit."""
    if not deadline_s or deadline_s <= 0:
        return None
    return deadline_s - elapsed_s - max(RESERVE_MIN_S, RESERVE_SHARE * deadline_s)


@contextlib.contextmanager
def bounded(seconds: float | None):
    """Raise OverBudget in the main thread once seconds have passed (no bound for None)."""
    if seconds is None:
        yield
        return

    def ring(signum, frame):
        raise OverBudget(f"compile ran past its {seconds:.1f} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def dynamo_graphs() -> int:
    """Dynamo's count of the graphs it compiled so far."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def toolchain_problem(e: BaseException) -> bool:
    """Whether e is inductor's C++ toolchain failing on this host (not the model)."""
    text = "\n".join(str(x) for x in harness_failures.exception_chain(e))
    names = {type(x).__name__ for x in harness_failures.exception_chain(e)}
    return bool(names & {"CppCompileError", "InvalidCxxCompiler"}) or any(
        s in text for s in ("InvalidCxxCompiler", "No working C compiler", "Python.h: No such file",
                            "fatal error: ", "c++: not found", "g++: not found", "cannot find -l"))


class CompileStage(harness_context.Stage):
    """The compile stage (see the module docstring), composed by harness.Probe."""

    def __init__(self, ctx, stage, skip_stage, output_tensors, tolerance_row, graph_break_counts, record_graph_breaks):
        super().__init__(ctx, stage, skip_stage)
        self.output_tensors = output_tensors  # the compared outputs of a model output (harness.Probe)
        self.tolerance_row = tolerance_row
        self.graph_break_counts = graph_break_counts  # dynamo's graph breaks, into the matrix (harness_modes.Modes)
        self.record_graph_breaks = record_graph_breaks

    def compile_model(self, backend: str):
        """torch.compile of the model with static shapes."""
        return self.torch.compile(self.model, backend=backend, dynamic=False)

    def compile_backend(self) -> tuple[str, str]:
        if self.args.compile_backend:
            return self.args.compile_backend, ""
        if self.target == "tpu":
            return "tpu", ""
        if self.target == "cpu" and self.world > 1:
            return "aot_eager", ("a sharded probe on cpu compiles with aot_eager (graph capture and AOT autograd, no "
                                 "code generation): inductor's C++ code generation of the sharded graphs takes minutes")
        if self.target == "cpu" and not any(
            shutil.which(c) for c in (os.environ.get("CXX", ""), "g++", "c++", "clang++") if c
        ):
            return "aot_eager", "inductor needs a C++ compiler and none was found: used aot_eager"
        return "inductor", ""

    def stage_compile(self) -> None:
        if self.args.no_compile:
            self.skip_stage("compile", "--no-compile")
            return
        # a sharded probe's ranks compile in step (collectives): one rank stopped alone would hang the others
        budget = compile_budget(getattr(self.args, "deadline_s", None), self.elapsed_s()) if self.world == 1 else None
        if budget is not None and budget <= 0:
            self.compile_not_measured(budget, "no time was left for it")
            return
        try:
            with bounded(budget):
                self.compile_stage()
        except OverBudget:
            self.torch._dynamo.reset()
            self.compile_not_measured(budget, f"it ran past its bound of {budget:.0f} s and was stopped")

    def elapsed_s(self) -> float:
        """Seconds since the harness started (the context's t0: harness.py's first line). Importing harness here would
        run it again as a module of that name, with a clock of its own, when harness.py is the program."""
        return time.monotonic() - self.t0

    def compile_not_measured(self, budget: float, why: str) -> None:
        """The compile stage skipped for the probe's time limit: result.modes.compiled is timeout at compile, the
        probe goes on (the eager verdict stands)."""
        import harness_train

        limit = getattr(self.args, "deadline_s", None)
        reserve = max(RESERVE_MIN_S, RESERVE_SHARE * limit)
        msg = (
            f"compile not measured: {why} (the probe's limit of {limit:g} s less {reserve:g} s "
            "kept for generate and the result); the eager verdict stands"
        )
        rec = self.stages[-1] if self.stages and self.stages[-1].stage == "compile" else None
        if rec is None:
            self.skip_stage("compile", msg)
        else:  # the stage that was stopped: skipped, not failed
            rec.ok, rec.skipped, rec.note = True, True, msg[:1000]
        self.metrics.compile_s = self.metrics.compiled_step_ms = None
        self.modes["compiled"] = harness_train.verdict_of("timeout", "compile", failure_class="timeout", message=msg,
                                                signature="timeout:compile",
                                                metrics={"compile_s": None, "compiled_step_ms": None})

    def compile_stage(self) -> None:
        torch = self.torch
        with self.stage("compile") as notes:
            backend, bnote = self.compile_backend()
            if bnote:
                notes.append(bnote)
            import torch._dynamo  # noqa: F401

            torch._dynamo.reset()
            breaks0 = self.graph_break_counts()
            with torch.no_grad():
                compiled, backend, g0 = self.first_compiled_call(backend, notes)
                g1 = dynamo_graphs()
                self.record_graph_breaks(breaks0, g1 - g0)
                out, times = self.settled_compiled_calls(compiled, backend, g1, notes)
            self.metrics.compiled_step_ms = round(statistics.median(times) * 1000, 4)
            notes.append(f"backend={backend} graphs={g1 - g0} graph_breaks={self.metrics.graph_breaks}"
                         + "".join(f"; break: {r}" for r in self.metrics.graph_break_reasons))
            self.check_compiled_outputs(out, notes)
            del compiled
            torch._dynamo.reset()

    def first_compiled_call(self, backend: str, notes: list):
        """The compiled model and its first call, timed (metrics.compile_s). Inductor on a cpu host whose C++
        toolchain fails falls back to aot_eager, unless --compile-backend asked for it. Returns (the compiled
        model, the backend that ran, dynamo's graph count before the call)."""
        compiled = self.compile_model(backend)
        dev = self.dev
        g0 = dynamo_graphs()
        dev.sync()
        t = time.perf_counter()
        try:
            compiled(**self.dev_inputs)
            dev.sync()
        except Exception as e:  # noqa: BLE001
            if not (backend == "inductor" and self.target == "cpu" and toolchain_problem(e)
                    and not self.args.compile_backend):
                raise
            notes.append(f"inductor unusable on this host ({harness_failures.short_message(e, 160)}): used aot_eager")
            backend = "aot_eager"
            self.torch._dynamo.reset()
            compiled = self.compile_model(backend)
            g0 = dynamo_graphs()
            t = time.perf_counter()
            compiled(**self.dev_inputs)
            dev.sync()
        self.metrics.compile_s = round(time.perf_counter() - t, 4)
        return compiled, backend, g0

    def settled_compiled_calls(self, compiled, backend: str, g1: int, notes: list) -> tuple:
        """After the first call: the second, with the same shapes, must make no new dynamo graph; TorchTPU may
        still build executables for several calls (its own benchmarks warm up for 10 to 20 steps until the cache
        stops missing, see harness.WARMUP_MAX_EXTRA) but must settle within warmup_max_extra calls; then the
        --steps timed calls must compile nothing. Each failure is a recompile. Returns (the last output, the
        timed calls' seconds)."""
        dev = self.dev
        compiled(**self.dev_inputs)
        dev.sync()
        g2 = dynamo_graphs()
        self.compiled_metrics["recompiles"] = g2 - g1
        if g2 > g1:
            raise harness_failures.RecompileDetected(
                f"second call with the same input shapes compiled {g2 - g1} new dynamo graph(s) "
                f"(backend={backend}, dynamic=False)", "second call with the same shapes recompiled")
        extra, settled = dev.warm(lambda: compiled(**self.dev_inputs), self.warmup_max_extra)
        c1 = dev.compile_count()
        if extra:
            notes.append(f"TorchTPU still compiled on {extra} call(s) after the second")
        if not settled:
            raise harness_failures.RecompileDetected(
                f"TorchTPU kept compiling executables on {self.warmup_max_extra} repeated calls with the same "
                "input shapes", "TorchTPU kept compiling on repeated calls")
        out, times = harness_modes.timed_calls(lambda: compiled(**self.dev_inputs), dev.sync, self.args.steps)
        self.compiled_metrics["recompiles"] = dynamo_graphs() - g1
        if dynamo_graphs() > g2 or (c1 is not None and dev.compile_count() != c1):
            raise harness_failures.RecompileDetected("repeated calls with the same input shapes recompiled during the "
                                       "timed steps", "repeated calls recompiled")
        return out, times

    def check_compiled_outputs(self, out, notes: list) -> None:
        """The compiled outputs against the eager ones, with the same checks and tolerance row as numerics."""
        compiled_outs = self.output_tensors(out)
        eager = {next(iter(compiled_outs)): self.dev_out, **(self.dev_extra or {})}
        row = self.tolerance_row(str(self.dtype).replace("torch.", ""))
        cmps = harness_numerics.compare_all(self.torch, eager, compiled_outs, self.out_kinds, row, "compiled vs eager")
        cmp = cmps["primary"]
        if cmp["max_abs_diff"] is not None:
            notes.append(f"compiled vs eager max_abs_diff {cmp['max_abs_diff']:.3g}")
        if not cmps["ok"]:
            raise harness_failures.NumericsMismatch(cmps["why"], f"compiled vs eager {cmps['key']}")
