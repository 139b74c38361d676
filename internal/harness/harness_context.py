"""The state a probe's stages share (harness.py's Probe composes the stages, each with this context).

Probe builds one Context and hands it to each stage object (harness_config.ConfigStage,
harness_compare.NumericsStage, harness_compile.CompileStage, harness_generate.GenerateStage,
harness_modes.Modes) with the few collaborators that stage calls (the probe's stage bookkeeping, its
output_tensors and forward_kwargs, another stage's tolerance_row or precision_verdict). The stages set
the fields in the order they run: env (torch, dev, target, dtype, rank), config (task, family, config,
arch_config, cls, load_kwargs), load (model, sharding), forward (real, inputs, outputs), numerics
(ref_outputs), then the matrix's and the compile stage's verdicts (modes, compiled_metrics,
precision_checks).

Stage and Probe read and write the fields as their own attributes (``self.torch``); the attribute is the
context's (Shared), so there is one copy of each field, held here.
"""

from __future__ import annotations


class Context:
    """The fields every stage of one probe may read or set (see the module docstring)."""

    def __init__(self, args, t0: float, runtime, metrics, ops, warmup_max_extra: int):
        self.args = args
        self.t0 = t0  # the harness's start (its first line): the compile stage's clock (harness_compile.elapsed_s)
        self.warmup_max_extra = warmup_max_extra
        self.torch = None
        self.dev = None  # harness.Device, once the env stage opened it
        self.current = "env"  # the stage running (the one a failure is in)
        self.stages: list = []  # harness_result.StageRun, in the order run
        self.mode = args.mode  # full or arch, as the scanner's plan decided
        self.task = args.task or ""
        self.family = None
        self.target = args.target if args.target != "auto" else "cpu"
        self.runtime = runtime
        self.metrics = metrics  # every metric null until a stage measures it
        self.ops = ops  # the ops the run dispatches, for the TorchTPU prediction (harness_ops.py)
        self.world = args.devices  # ranks of a sharded probe (harness_shard.py); 1 otherwise
        self.rank = 0  # this process's, read in the env stage
        self.sharding = None  # "tp" or "fsdp" once a sharded model is loaded
        self.dtype = None
        # config
        self.config = None
        self.arch_config = None
        self.cls = None
        self.load_kwargs: dict = {}  # from_pretrained overrides (the config made deterministic)
        # load, forward
        self.model = None
        self.reference = None  # harness_reference.Reference: the float32 CPU reference (numerics, whose a failure is)
        self.real = None  # harness_real_inputs.Inputs: where the forward inputs came from
        self.inputs_cpu = None
        self.input_info: dict = {}
        self.dev_inputs = None
        self.dev_out = None
        self.dev_extra: dict = {}  # the family's other compared outputs (harness_numerics.select)
        self.out_kinds: dict = {}
        self.is_scores = False
        self.continuation = None  # {"prompt", "text"} of a causal LM with its own tokenizer
        # the verdict matrix (harness_modes.py)
        self.modes: dict = {}
        self.ref_outputs = None  # name -> float32 CPU reference outputs (numerics), for the eager modes
        self.compiled_metrics: dict = {}
        self.precision_checks = None


def _fields() -> tuple[str, ...]:
    """The names of Context's fields (those its __init__ sets)."""

    class _Args:
        mode = task = ""
        target = "cpu"
        devices = 1

    return tuple(vars(Context(_Args(), 0.0, None, None, None, 0)))


FIELDS = _fields()


class Shared:
    """An attribute that is the context's field of the same name (self.ctx.<name>)."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return getattr(obj.ctx, self.name)

    def __set__(self, obj, value):
        setattr(obj.ctx, self.name, value)


def share_fields(cls: type) -> type:
    """cls with every Context field as a Shared attribute (a class decorator)."""
    for name in FIELDS:
        if name not in vars(cls):
            attr = Shared()
            attr.__set_name__(cls, name)
            setattr(cls, name, attr)
    return cls


@share_fields
class Stage:
    """A stage of a probe: the shared context (its fields read as attributes) and the probe's stage bookkeeping
    (stage, a context manager that records a StageRun; skip_stage). Subclasses take the other collaborators they
    call."""

    def __init__(self, ctx: Context, stage, skip_stage):
        self.ctx = ctx
        self.stage = stage
        self.skip_stage = skip_stage
