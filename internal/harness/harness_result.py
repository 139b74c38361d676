"""The Result a probe writes, as dataclasses: to_dict() is the JSON contract (shared/CONTRACT.md and its
extensions, decoded by internal/compat.Result on the Go side; tests/test_result.py holds the two together).

A field that is None is written as null (a metric not measured is null); a field left UNSET is not written
at all, for the keys a result carries only when they apply (runtime.libtpu off tpu, metrics.collective_ms of a
sharded probe, result.continuation of a causal LM with its own tokenizer, ...). from_dict() reads a Result
back and refuses a key the dataclasses do not name, so that a key written outside them cannot go unnoticed.
The values the harness's stages fill in as dicts (result.modes, result.ops_traced, metrics.efficiency,
metrics.precision_checks) stay dicts: their own modules own their shapes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar


class _Unset:
    """The value of a field that is left out of the JSON."""

    def __repr__(self) -> str:
        return "UNSET"

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


UNSET: Any = _Unset()


def _plain(val):
    if isinstance(val, Record):
        return val.to_dict()
    if isinstance(val, list):
        return [_plain(v) for v in val]
    if isinstance(val, dict):
        return {k: _plain(v) for k, v in val.items()}
    return val


class Record:
    """to_dict and from_dict for the dataclasses below. nested names the fields that hold a Record (or a list of
    them): from_dict builds those from their dicts."""

    nested: ClassVar[dict[str, type]] = {}
    nested_lists: ClassVar[dict[str, type]] = {}

    def to_dict(self) -> dict:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self) if getattr(self, f.name) is not UNSET}

    @classmethod
    def from_dict(cls, d: dict):
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise KeyError(f"{cls.__name__} has no field {', '.join(sorted(unknown))}")
        kw = {}
        for k, v in d.items():
            if k in cls.nested and isinstance(v, dict):
                v = cls.nested[k].from_dict(v)
            elif k in cls.nested_lists and isinstance(v, list):
                v = [cls.nested_lists[k].from_dict(x) for x in v]
            kw[k] = v
        return cls(**kw)

    def __setattr__(self, name, value):
        # a typo'd field name would otherwise become an attribute that to_dict never writes
        if name not in self.__dataclass_fields__:
            raise AttributeError(f"{type(self).__name__} has no field {name}")
        object.__setattr__(self, name, value)


@dataclass
class StageRun(Record):
    """One entry of result.stages: a stage, whether it ended well, how long it took, and its note (left out when
    empty; a skipped stage always has one)."""

    stage: str
    ok: bool = False
    skipped: bool = UNSET  # True, or left out
    duration_s: float = 0.0
    note: str = UNSET

    def note_text(self) -> str:
        """The note, "" when there is none."""
        return "" if self.note is UNSET else self.note


@dataclass
class Runtime(Record):
    """result.runtime, the retest key's source. libtpu is written on tpu runs only (and by --env-only, always),
    device_memory_gib when the device's memory is known."""

    python: str = ""
    torch: str = ""
    transformers: str = ""
    torch_tpu: str = ""
    harness: str = ""
    device: str = ""
    device_count: int = 0
    libtpu: str = UNSET
    tcmalloc: bool = False
    device_memory_gib: float = UNSET
    vllm_torchtpu: str = UNSET  # the serving probe's runtime key (harness/vllm): never written by this harness


@dataclass
class Metrics(Record):
    """result.metrics: every metric a probe measures is null until measured. The keys below the first group are
    written only by the stages that fill them (mfu, mbu and efficiency by harness_efficiency.annotate,
    collective_ms by a sharded forward, graph_breaks by the compile stage, precision by the verdict matrix)."""

    load_s: float | None = None
    first_forward_s: float | None = None
    forward_ms: float | None = None
    compile_s: float | None = None
    tokens_per_s: float | None = None
    peak_mem_bytes: int | None = None
    max_abs_diff: float | None = None
    top1_agreement: float | None = None
    compiled_step_ms: float | None = None
    ttft_ms: float | None = None
    perplexity: float | None = None
    tolerance: float | None = None
    param_count: int | None = None
    rel_error: float | None = None
    cosine_similarity: float | None = None
    collective_ms: float | None = UNSET
    numerics_precision: dict | None = UNSET
    graph_breaks: int | None = UNSET
    graph_break_reasons: list | None = UNSET
    mfu: float | None = UNSET
    mbu: float | None = UNSET
    efficiency: dict | None = UNSET
    precision: str | None = UNSET
    precision_checks: dict | None = UNSET

    def finite(self) -> None:
        """Every float metric that is not finite becomes null (the JSON is strict)."""
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, float) and not math.isfinite(v):
                object.__setattr__(self, f.name, None)


@dataclass
class Continuation(Record):
    """result.continuation: a causal LM's greedy continuation of the fixed prompt, by its own tokenizer."""

    prompt: str
    text: str


@dataclass
class Outcome(Record):
    """The fields every Result-shaped object opens with (shared/CONTRACT.md): where it ran, how it ended and why."""

    target: str
    status: str = "error"
    stage: str | None = None
    failure_class: str | None = None
    op: str | None = None
    reason: str | None = None
    signature: str | None = None
    message: str | None = None
    mode: str | None = None
    revision: str = ""
    tested_at: str = ""
    duration_s: float = 0.0


@dataclass
class Result(Outcome):
    """One probe's Result (internal/compat.Result). status is error until the run says otherwise; log_tail is
    written with a failure's classification, continuation and ops_traced when there are any, modes and
    precision_sensitive by the verdict matrix (harness_modes.finish_modes)."""

    nested: ClassVar[dict[str, type]] = {"runtime": Runtime, "metrics": Metrics, "continuation": Continuation}
    nested_lists: ClassVar[dict[str, type]] = {"stages": StageRun}

    log_tail: str = UNSET
    devices_used: int = 1
    sharding: str | None = None
    runtime: Runtime = field(default_factory=Runtime)
    metrics: Metrics = field(default_factory=Metrics)
    modes: dict = UNSET
    precision_sensitive: bool = UNSET
    repro: str = ""
    task: str = ""
    stages: list[StageRun] = field(default_factory=list)
    continuation: Continuation | None = UNSET
    ops_traced: dict = UNSET


@dataclass
class EnvResult(Outcome):
    """The Result-shaped object of --env-only (status pass, stage env): where a probe would run and the runtime
    it would report (the retest key), with the targets available, the device's memory and the TPU check's
    answer. Its metrics are an empty object."""

    nested: ClassVar[dict[str, type]] = {"runtime": Runtime}

    status: str = "pass"
    stage: str | None = "env"
    runtime: Runtime = field(default_factory=Runtime)
    metrics: dict = field(default_factory=dict)
    repro: str = ""
    available_targets: list[str] = field(default_factory=lambda: ["cpu"])
    device_memory_bytes: int | None = None
    note: str = ""
    google_torch_tpu: bool = False
    tpu_chips: int | None = None
