"""The harness's test seam: injected failures and a simulated TPU, for tests only.

harness.new_probe() reads the environment variable HARNESS_TEST_INJECT once, at start-up.
Unset (always in production: the Go runner builds the harness's environment from an
allow-list and refuses this variable), the run uses harness.Probe and this module is never
imported. Set, the run uses with_faults(Probe, spec): a subclass of Probe, composing subclasses of its
stage classes (Probe.numerics_cls, modes_cls, compile_cls), whose overrides inject what the spec asks, so
that the real stages (harness.py and its stage modules) carry no test branches.

The spec is a list of items separated by ``;``:

``STAGE:EXCEPTION:MESSAGE``
    raise EXCEPTION(MESSAGE) in STAGE (env, config, load, numerics, compile, generate: as the
    stage starts; forward: from inside the model's forward, through a pre-hook on its first
    leaf module). EXCEPTION is one of INJECTABLE (else RuntimeError); MESSAGE defaults to
    "injected failure".
``numerics:perturb``
    the device output is shifted by 1.0 before the comparison with the reference.
``compile:recompile``
    the compiled model's second call gets one token fewer (2-d input_ids/masks), a real
    recompile.
``rankR:kill:STAGE`` / ``rankR:hang:STAGE``
    in a sharded probe, rank R SIGKILLs itself (as the kernel's OOM killer would) or hangs (sleeps
    for good) as STAGE starts; the other ranks run on.
``inputs:beyond-vocab``
    a stand-in for an input error of the harness's own: the forward inputs' last token id is the
    text vocabulary's size, one past the embedding (a placeholder id the model cannot embed). The
    target and the float32 CPU reference both get it (they share the forward inputs), so both fail.
``train:no-backward``
    a stand-in for an op without a backward on the target: the train step's model (the target's
    only; never the float32 CPU reference, nor the inference) passes the output of its first leaf
    module through ``harness_test::no_backward``, a custom op registered with no autograd formula, so
    that backward raises while forward, numerics and compile pass.
``compile:graph-break``
    a forced graph break: the compiled model calls ``torch._dynamo.graph_break()`` from a forward
    pre-hook on its first leaf module (the eager runs do not).
``tpu:precision-sensitive``
    with a simulated TPU: the target's output is off by 1.0 unless it runs under
    ``torch.tpu.precision(Precision.HIGHEST)`` (a model that passes only at HIGHEST).
``tpu:simulate`` / ``tpu:simulate-recompiling``
    a simulated TPU: SimulatedTpu stands in for Google's torch_tpu (as ``torch.tpu``, with
    SimulatedAccelerator as the device's ``torch.accelerator`` and a dynamo backend "tpu" that is
    aot_eager underneath) while tensors stay on the CPU. The
    second variant's executable cache misses on every call (a model that keeps compiling).
    Both are undone when the run ends.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import signal
import time

INJECTABLE = {
    "NotImplementedError": NotImplementedError,
    "RuntimeError": RuntimeError,
    "MemoryError": MemoryError,
    "ImportError": ImportError,
    "ValueError": ValueError,
    "OSError": OSError,
    "TypeError": TypeError,
    "KeyError": KeyError,
}

SIMULATED_TPU_VERSION = "0.1.0.dev-simulated"


@dataclasses.dataclass
class Faults:
    """What one HARNESS_TEST_INJECT spec asks for."""

    raises: dict = dataclasses.field(default_factory=dict)  # stage -> (exception type, message)
    perturb: bool = False
    recompile: bool = False
    beyond_vocab: bool = False
    no_backward: bool = False
    graph_break: bool = False
    precision_sensitive: bool = False
    tpu: str = ""  # "", "simulate" or "simulate-recompiling"
    ranks: dict = dataclasses.field(default_factory=dict)  # (rank, stage) -> "kill" or "hang"

    def act_in(self, rank: int, stage: str) -> None:
        """What a rank of a sharded probe was told to do as stage starts."""
        act = self.ranks.get((rank, stage))
        if act == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif act == "hang":
            while True:
                time.sleep(3600)

    def raise_in(self, stage: str) -> None:
        if stage in self.raises:
            exc_type, message = self.raises[stage]
            raise exc_type(message)


def parse(spec: str) -> Faults:
    """The Faults of a spec (grammar in the module docstring); any other item raises in its stage."""
    f = Faults()
    for item in filter(None, (s.strip() for s in spec.split(";"))):
        stage, _, rest = item.partition(":")
        if (stage, rest) == ("numerics", "perturb"):
            f.perturb = True
        elif (stage, rest) == ("compile", "recompile"):
            f.recompile = True
        elif (stage, rest) == ("inputs", "beyond-vocab"):
            f.beyond_vocab = True
        elif (stage, rest) == ("train", "no-backward"):
            f.no_backward = True
        elif (stage, rest) == ("compile", "graph-break"):
            f.graph_break = True
        elif (stage, rest) == ("tpu", "precision-sensitive"):
            f.precision_sensitive = True
        elif stage == "tpu" and rest in ("simulate", "simulate-recompiling"):
            f.tpu = rest
        elif stage.startswith("rank") and stage[4:].isdigit() and rest.partition(":")[0] in ("kill", "hang"):
            act, _, at = rest.partition(":")
            f.ranks[(int(stage[4:]), at)] = act
        else:
            exc_name, _, message = rest.partition(":")
            f.raises[stage] = (INJECTABLE.get(exc_name, RuntimeError), message or "injected failure")
    return f


def with_faults(probe_cls: type, spec: str) -> type:
    """probe_cls (harness.Probe) with the faults of spec injected: its own overrides (FaultInjection) and those of
    the stages it composes (NumericsFaults, TrainFaults, CompileFaults), each a subclass of probe_cls's."""
    faults = parse(spec)
    attrs = {"faults": faults}
    for attr, overrides in (("numerics_cls", NumericsFaults), ("modes_cls", TrainFaults),
                            ("compile_cls", CompileFaults)):
        base = getattr(probe_cls, attr)
        attrs[attr] = type(f"Faulty{base.__name__}", (overrides, base), {"faults": faults})
    if faults.tpu:
        attrs["device_cls"] = type("SimulatedTpuDevice", (OnSimulatedAccelerator, CpuTensors, probe_cls.device_cls), {})
    return type("FaultyProbe", (FaultInjection, probe_cls), attrs)


class FaultInjection:
    """Overrides of Probe's own methods; mixed in before Probe by with_faults."""

    faults: Faults

    def run(self):  # a harness_result.Result, or None (harness.Probe.run)
        with SimulatedTpu.installed(self.faults.tpu):
            return super().run()

    @contextlib.contextmanager
    def stage(self, name: str):
        with super().stage(name) as notes:
            self.faults.act_in(self.rank, name)
            if name != "forward":  # forward raises from inside the model, see stage_forward
                self.faults.raise_in(name)
            yield notes

    def probe_tpu(self, torch) -> dict:
        if not self.faults.tpu:
            return super().probe_tpu(torch)
        return {"installed": True, "google": True, "version": SIMULATED_TPU_VERSION, "available": True, "note": "",
                "chips": 4}

    def stage_forward(self) -> None:
        if "forward" not in self.faults.raises:
            return super().stage_forward()
        leaf = next((m for _, m in self.model.named_modules() if len(list(m.children())) == 0), self.model)

        def _raise(*_a, **_k):
            self.faults.raise_in("forward")

        hook = leaf.register_forward_pre_hook(_raise)
        try:
            return super().stage_forward()
        finally:
            hook.remove()

    def forward_inputs(self, model, to_device, notes):
        real = super().forward_inputs(model, to_device, notes)
        if self.faults.beyond_vocab:
            ids = real.tensors["input_ids"].clone()
            cfg = (
                model.config.get_text_config(decoder=True) if hasattr(model.config, "get_text_config") else model.config
            )
            ids.view(-1)[-1] = int(cfg.vocab_size)
            real.tensors = dict(real.tensors, input_ids=ids)
        return real

    def stage_load(self) -> None:
        super().stage_load()
        if self.faults.precision_sensitive:
            out = self.model.get_output_embeddings() if hasattr(self.model, "get_output_embeddings") else None
            (out if out is not None else first_leaf(self.model)).register_forward_hook(_off_unless_highest)


class NumericsFaults:
    """Overrides of harness_compare.NumericsStage; mixed in before it by with_faults."""

    faults: Faults

    def stage_numerics(self) -> None:
        if not self.faults.perturb:
            return super().stage_numerics()
        eager = self.dev_out
        self.dev_out = eager + 1.0
        try:
            return super().stage_numerics()
        finally:
            self.dev_out = eager


class TrainFaults:
    """Overrides of harness_modes.Modes (the train step); mixed in before it by with_faults."""

    faults: Faults

    def train_target_model(self):
        model = super().train_target_model()
        if self.faults.no_backward:
            op = no_backward_op()
            self._no_backward_hook = first_leaf(model).register_forward_hook(
                lambda _m, _i, out: op(out) if hasattr(out, "requires_grad") else out)
        return model

    def run_train(self) -> None:
        try:
            return super().run_train()
        finally:
            hook = getattr(self, "_no_backward_hook", None)
            if hook is not None:
                hook.remove()


class CompileFaults:
    """Overrides of harness_compile.CompileStage; mixed in before it by with_faults."""

    faults: Faults

    def compile_model(self, backend: str):
        if self.faults.graph_break:
            import torch._dynamo

            # outside torch.compile graph_break() does nothing: the eager calls after this one are unaffected
            first_leaf(self.model).register_forward_pre_hook(lambda *_a: torch._dynamo.graph_break())
        compiled = super().compile_model(backend)
        if not self.faults.recompile:
            return compiled
        calls = itertools.count(1)

        def second_call_one_token_fewer(**inputs):
            if next(calls) == 2:
                inputs = {k: (v[:, :-1] if hasattr(v, "dim") and v.dim() == 2 and k.endswith(("input_ids", "mask"))
                              else v) for k, v in inputs.items()}
            return compiled(**inputs)

        return second_call_one_token_fewer


def first_leaf(model):
    return next((m for _, m in model.named_modules() if len(list(m.children())) == 0), model)


_NO_BACKWARD = []


def no_backward_op():
    """harness_test::no_backward: the identity, registered with no autograd formula (defined once)."""
    if not _NO_BACKWARD:
        import torch

        @torch.library.custom_op("harness_test::no_backward", mutates_args=(), schema="(Tensor x) -> Tensor")
        def no_backward(x: torch.Tensor) -> torch.Tensor:
            return x.clone()

        @no_backward.register_fake
        def _(x):
            return torch.empty_like(x)

        _NO_BACKWARD.append(no_backward)
    return _NO_BACKWARD[0]


def _off_unless_highest(_module, _inputs, out):
    """A forward hook: the output off by 1.0 unless the simulated TPU runs at Precision.HIGHEST."""
    if SimulatedTpu.modes and SimulatedTpu.modes[-1] == SimulatedTpu.Precision.HIGHEST:
        return out
    return out + 1.0


class CpuTensors:
    """Mixed in before harness.Device for a simulated TPU: its tensors stay on the CPU."""

    def torch_device(self):
        if self.target == "tpu":
            return self.torch.device("cpu")
        return super().torch_device()


class _RecordingMeta(type):
    """Records every public or private name looked up on the class (SimulatedTpu.used), the way a
    test sees which torch.tpu attributes the harness touched."""

    def __getattribute__(cls, name):
        if not name.startswith("__") and name not in ("used", "reset", "installed", "backend", "misses",
                                                      "keep_compiling", "synced", "synced_at", "modes",
                                                      "compiled_graphs", "call", "compiling", "eager_modes",
                                                      "synced_eager"):
            type.__getattribute__(cls, "used").add(name)
        return type.__getattribute__(cls, name)


def _internal(name: str, prefer: str):
    """A torch.tpu function that torch_tpu 0.2.0 keeps internal with torch >= 2.11: calling it from
    user code raises (torch_tpu/_internal/utils/annotations.py internal_or_experimental, strict)."""

    def call(*_a, **_k):
        raise RuntimeError(f"{name} is internal to TorchTPU and can only be called by the PyTorch framework "
                           f"(torch and torch_tpu). Use {prefer} instead.")

    return staticmethod(call)


class OnSimulatedAccelerator:
    """Mixed in before harness.Device for a simulated TPU: its torch.accelerator is SimulatedAccelerator
    (torch's own stays as it is: dynamo asks it for devices), unless the real one is on "tpu"."""

    def accelerator(self):
        acc = super().accelerator()
        if acc is None and self.target == "tpu":
            return SimulatedAccelerator
        return acc


class SimulatedTpu(metaclass=_RecordingMeta):
    """A stand-in for ``torch.tpu`` with torch_tpu 0.2.0's surface (the exports the harness may use:
    get_device_name, get_device_properties, is_initialized, precision/Precision, and the private
    _get_cache_misses; device_count, synchronize, is_available and current_device raise as the real
    internal ones do), next to SimulatedAccelerator as the device's ``torch.accelerator``
    (device_count, synchronize; no memory statistics). Class-level state, reset by installed(); tests read it after
    a run, and ``used`` names every attribute the harness looked up."""

    class Precision:  # torch_tpu/_internal/precision/precision.py binds StableHLO's three modes
        DEFAULT, HIGH, HIGHEST = "DEFAULT", "HIGH", "HIGHEST"

    class EagerMode:  # torch_tpu/_internal/execution_mode: the public members
        DEFER_AND_FUSE, DEFER_NEVER, DEFER_NEVER_AND_LAUNCH_BLOCKING = (
            "DEFER_AND_FUSE", "DEFER_NEVER", "DEFER_NEVER_AND_LAUNCH_BLOCKING")

    used: set = set()
    misses = 0
    keep_compiling = False
    synced = 0
    synced_at: dict = {}  # precision mode in force -> synchronize() calls made under it
    modes: list = []  # the precision() stack
    eager_modes: list = []  # the set_eager_mode() stack
    synced_eager: dict = {}  # eager mode in force -> synchronize() calls made under it
    compiled_graphs: list = []  # node counts of the graphs the "tpu" backend compiled

    device_count = _internal("device_count", "torch.accelerator.device_count")
    synchronize = _internal("synchronize", "torch.accelerator.synchronize")
    is_available = _internal("is_available", "torch.accelerator.is_available")
    current_device = _internal("current_device", "torch.accelerator.current_device_index")

    @classmethod
    def reset(cls, keep_compiling: bool = False) -> None:
        cls.misses, cls.keep_compiling, cls.synced, cls.compiled_graphs = 3, keep_compiling, 0, []
        cls.synced_at, cls.modes = {}, []
        cls.eager_modes, cls.synced_eager = [], {}
        type.__getattribute__(cls, "used").clear()

    @classmethod
    @contextlib.contextmanager
    def precision(cls, mode):
        cls.modes.append(mode)
        try:
            yield
        finally:
            cls.modes.pop()

    @classmethod
    @contextlib.contextmanager
    def set_eager_mode(cls, mode):
        if mode not in (cls.EagerMode.DEFER_AND_FUSE, cls.EagerMode.DEFER_NEVER,
                        cls.EagerMode.DEFER_NEVER_AND_LAUNCH_BLOCKING):
            raise ValueError(f"not an EagerMode: {mode!r}")
        cls.eager_modes.append(mode)
        try:
            yield
        finally:
            cls.eager_modes.pop()

    @classmethod
    def is_initialized(cls):
        return True

    @classmethod
    def get_device_name(cls, device=None):
        return "TPU v6e"

    @classmethod
    def get_device_properties(cls, device=None):
        raise RuntimeError("unrecognized TPU 'TPU v6e'; cannot determine device memory")

    @classmethod
    def _get_cache_misses(cls):
        if cls.keep_compiling:
            cls.misses += 1
        return cls.misses

    @classmethod
    def backend(cls, gm, example_inputs):
        """The dynamo backend "tpu": records the graph, compiles it with aot_eager."""
        from torch._dynamo.backends import registry

        cls.compiled_graphs.append(len(gm.graph.nodes))
        return registry.lookup_backend("aot_eager")(gm, example_inputs)

    @classmethod
    @contextlib.contextmanager
    def installed(cls, variant: str):
        """torch.tpu and the "tpu" backend for the length of a run ("" installs nothing)."""
        if not variant:
            yield
            return
        import torch
        from torch._dynamo.backends import registry

        cls.reset(keep_compiling=variant == "simulate-recompiling")
        with _entry(vars(torch), "tpu", cls), _entry(registry._BACKENDS, "tpu", None), \
                _entry(registry._COMPILER_FNS, "tpu", cls.backend):
            yield


class SimulatedAccelerator:
    """``torch.accelerator`` as a simulated TPU's Device sees it: the current accelerator is "tpu", four
    devices, synchronize counted on SimulatedTpu (under the precision mode in force), and no memory
    statistics (max_memory_allocated raises, as a runtime without them)."""

    class _Tpu:
        type = "tpu"

    @staticmethod
    def current_accelerator(check_available=False):
        return SimulatedAccelerator._Tpu()

    @staticmethod
    def device_count():
        return 4

    @staticmethod
    def synchronize(device=None):
        tpu = SimulatedTpu
        tpu.synced += 1
        mode = tpu.modes[-1] if tpu.modes else tpu.Precision.DEFAULT
        tpu.synced_at[mode] = tpu.synced_at.get(mode, 0) + 1
        eager = tpu.eager_modes[-1] if tpu.eager_modes else tpu.EagerMode.DEFER_AND_FUSE
        tpu.synced_eager[eager] = tpu.synced_eager.get(eager, 0) + 1

    @staticmethod
    def max_memory_allocated(device=None):
        raise RuntimeError("no memory statistics on the simulated TPU")

    @staticmethod
    def reset_peak_memory_stats(device=None):
        raise RuntimeError("no memory statistics on the simulated TPU")


@contextlib.contextmanager
def _entry(mapping: dict, key: str, value):
    """mapping[key] is value for the length of the block, then as it was."""
    missing = object()
    old = mapping.get(key, missing)
    mapping[key] = value
    try:
        yield
    finally:
        if old is missing:
            mapping.pop(key, None)
        else:
            mapping[key] = old
