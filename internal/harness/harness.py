#!/usr/bin/env python3
"""Smoke-test one Hugging Face model on TorchTPU (or cpu/cuda) and write one Result JSON.

The command line, the stages, timing, numerics and the sharded probe are specified in this folder's
README.md (its "Reference" section); `python harness.py --help` lists the options."""

from __future__ import annotations

import time

_T0 = time.monotonic()

import argparse  # noqa: E402
import contextlib  # noqa: E402
import datetime  # noqa: E402
import importlib.metadata as _md  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

# Offline before anything from Hugging Face is imported.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
# torch must not load device backends by itself: torch/__init__.py (_import_device_backends) calls every
# "torch.backends" entry point inside `import torch` and turns any failure into a RuntimeError, so a
# torch_tpu that cannot load (an ABI mismatch with the pinned torch, no libtpu) would make every probe,
# cpu included, an import_error. The env stage loads torch_tpu itself, for tpu and auto only
# (probe_torch_tpu). The Go runner pins the same value in the harness's environment (internal/probe/env.go).
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness_compare  # noqa: E402
import harness_compile  # noqa: E402
import harness_config  # noqa: E402
import harness_context  # noqa: E402
import harness_efficiency  # noqa: E402
import harness_failures  # noqa: E402
import harness_generate  # noqa: E402
import harness_host  # noqa: E402
import harness_inputs  # noqa: E402
import harness_modes  # noqa: E402
import harness_numerics  # noqa: E402
import harness_ops  # noqa: E402
import harness_real_inputs  # noqa: E402
import harness_reference  # noqa: E402
import harness_result  # noqa: E402
import harness_shard  # noqa: E402
import harness_synthetic_inputs  # noqa: E402
import harness_tpu  # noqa: E402

HARNESS_VERSION = "0.2.0"  # 0.2.0: the reference decides whose a failure is; bfloat16 on cpu


# Extra calls (after the first) allowed on tpu for TorchTPU's executable cache to settle. TorchTPU's own
# e2e benchmark harness (examples/benchmarks/e2e/harness/measure.py: min_warmup_steps 10, max_warmup_steps
# 20) warms up for at least 10 and at most 20 steps, until two consecutive steps leave its cache-miss count
# (torch.tpu._get_cache_misses, torch_device_ops.py compile_count) unchanged. The harness takes the same
# ceiling of 20 but stops at the first call that compiles nothing: it needs a settled cache to call a
# recompile, not benchmark-grade timings, so it does not copy the minimum of 10.
WARMUP_MAX_EXTRA = 20


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


finite_or_none = harness_modes.finite_or_none  # a float, or None when it is not one or not finite (strict JSON)


def dist_version(*names: str) -> str:
    for name in names:
        try:
            return _md.version(name)
        except _md.PackageNotFoundError:
            continue
        except Exception:  # noqa: BLE001 - broken metadata must not break the probe
            continue
    return ""


def write_json_atomic(path: str, obj) -> None:
    d = os.path.dirname(os.path.abspath(path)) or "."
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, f".{os.path.basename(path)}.tmp.{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=1, allow_nan=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


# --- environment -----------------------------------------------------------------

def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def tcmalloc_loaded() -> bool:
    """Whether tcmalloc is this process's allocator (the Go runner preloads it where installed), the way
    torch_tpu checks it (torch_tpu/_tcmalloc_check.py): a libtcmalloc mapped into the process."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            return re.search(r"/libtcmalloc[._-]", fh.read()) is not None
    except OSError:
        return False


def torch_tpu_dist() -> tuple[bool, bool, str]:
    """(installed, Google's, version) of torch_tpu, from its files and metadata alone: importing it would
    bind its compiled glue to this process (harness_tpu's docstring says why that is avoided). Google's
    package has the torch_tpu._internal package; an unrelated one of the same name does not."""
    try:
        spec = importlib.util.find_spec("torch_tpu")  # a top-level package: found, not imported
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return False, False, ""
    google = any(os.path.isdir(os.path.join(d, "_internal")) for d in (spec.submodule_search_locations or []))
    return True, google, dist_version("torch_tpu", "torch-tpu")


# How long the env stage's TPU check may take (--tpu-check-timeout; harness_tpu.run_check).
TPU_CHECK_TIMEOUT_S = harness_tpu.CHECK_TIMEOUT_S


def probe_torch_tpu(torch, host_root: str = "/", timeout: float = TPU_CHECK_TIMEOUT_S, world: int = 1) -> dict:
    """Google's torch_tpu (tpu and auto runs only): is a TPU usable here? (harness_tpu's docstring.)

    available is true only when the first op ran, in a child process (harness_tpu.run_check) and then
    in this one; note says why not, with torch_tpu's or libtpu's own words; chips is the PCI scan's
    count (None when it was not made). This process imports torch_tpu only after the child ran the op,
    so a cpu fallback runs without it. A rank of a sharded probe (world > 1) completes its launch environment
    with set_tpu_launch_env before its own runtime starts (harness_shard.launch_env); the child's check runs
    with the environment the runner gave the rank."""
    st = {"installed": False, "google": False, "version": "", "available": False, "note": "", "chips": None}
    st["installed"], st["google"], st["version"] = torch_tpu_dist()
    if not st["installed"]:
        st["note"] = "torch_tpu not installed"
        return st
    if not st["google"]:
        st["note"] = "an unrelated torch_tpu package is installed (no torch_tpu._internal): not Google's TorchTPU"
        return st
    scan = harness_tpu.scan_pci(host_root)
    st["chips"] = scan.chips
    if scan.none():
        st["note"] = f"no TPU chip found on this host: {scan.describe()} (torch_tpu {st['version']} installed)"
        return st
    extra = harness_tpu.runtime_env(os.environ, scan.chips, harness_tpu.metadata_has_tpu_env)
    if extra:
        os.environ.update(extra)  # for the child and for this process's own runtime
        harness_host.log(
            f"no GCE metadata server with tpu-env at {harness_tpu.METADATA_SERVER}: libtpu runs as one host ("
            + " ".join(f"{k}={v}" for k, v in sorted(extra.items()))
            + ")"
        )
    res = harness_tpu.run_check(sys.executable, timeout=timeout, env=dict(os.environ))
    for line in res["stderr"].splitlines()[-40:]:
        if line.strip():
            harness_host.log(f"[tpu check] {line}" if not line.startswith("[tpu check]") else line)
    if not res.get("available"):
        if res.get("registered") is False and not res.get("message"):
            st["note"] = (f"no TPU chip found on this host: torch_tpu {st['version']} registered no tpu device, "
                          f"while {scan.describe()}")
        else:
            st["note"] = harness_tpu.describe(res, timeout)
        return st
    try:  # the child ran the op: now this process
        harness_tpu.torch_tpu_loader()()
    except Exception as e:  # noqa: BLE001 - whatever the loader raises is the reason
        st["note"] = f"torch_tpu failed to load: {harness_failures.short_message(e, 500)}"
        return st
    try:
        if world > 1:  # a rank completes its launch environment before its runtime starts
            st["launch"] = harness_shard.launch_env(torch, world)
        harness_tpu.first_op(torch)
    except Exception as e:  # noqa: BLE001
        st["note"] = f"the TPU runtime failed its first op (torch.ones(1, device='tpu').add(1).cpu()): " \
                     f"{harness_failures.short_message(e, 500)}"
        return st
    st["available"] = True
    return st


def import_torch():
    """torch, or the environment's import_error (the probe cannot start without it)."""
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        raise harness_failures.EnvImportError(
            f"cannot import torch: {harness_failures.short_message(e, 500)}", "torch"
        ) from e
    return torch


def resolve_target(requested: str, tpu: dict | None) -> tuple[str, str]:
    """(the target a run uses, a note saying why) for a requested target and probe_torch_tpu's answer
    (None when it was not asked: cpu and cuda runs never load torch_tpu). auto is tpu only when the
    TPU ran its first op, else cpu with torch_tpu's reason."""
    if requested != "auto":
        return requested, ""
    if tpu is not None and tpu["available"]:
        return "tpu", "auto -> tpu"
    return "cpu", "auto -> cpu" + (f" ({tpu['note']})" if tpu and tpu["note"] else "")


def forget_tpu(torch) -> None:
    """Unregister torch.tpu after auto fell back to cpu: torch.manual_seed seeds every registered
    privateuse1 device module (torch/random.py _seed_custom_device calls its manual_seed_all), which
    would reach the TPU runtime that just failed and blame the model for it. (torch_tpu is loaded here
    only when the TPU check's child ran its op and this process's own first op then failed.)"""
    if hasattr(torch, "tpu"):
        delattr(torch, "tpu")
    sys.modules.pop("torch.tpu", None)


def verdict_note(target: str, dtype_name: str) -> str:
    """What a verdict on target compares: the run in dtype_name on target against the float32 CPU reference. On
    cpu in float32 the run is the reference itself, so every failure is one the reference shares: no verdict."""
    if target == "cpu" and dtype_name == "float32":
        return ("verdict: float32 on cpu is the float32 cpu reference itself, so a failure is always one the "
                "reference shares (the scanner's error, not a verdict)")
    return f"verdict: {dtype_name} on {target} against the float32 cpu reference"


def precision_rule(target: str, dtype_name: str, tpu_precision: bool) -> tuple[str, bool]:
    """(the TOLERANCES row the device output is held to, whether the device steps run at
    torch.tpu.precision(torch.tpu.Precision.HIGHEST)).

    TorchTPU runs float32 matmuls natively as bfloat16 (torch_tpu/_internal/precision/precision.py: "On
    TPU, float32 matrix multiplications are natively executed in bfloat16"; precision() raises them to
    StableHLO's HIGH or HIGHEST). So float32 on tpu runs at HIGHEST and is held to the float32 row; a
    torch_tpu without that API gets the bfloat16 row, since its float32 is bfloat16 underneath."""
    if target != "tpu" or dtype_name != "float32":
        return dtype_name, False
    if tpu_precision:
        return "float32", True
    return "bfloat16", False


class Device:
    """One target: the same code path for tpu and cuda (torch.accelerator for sync, count and peak memory;
    the device module for the name and the memory size)."""

    def __init__(self, torch, target: str):
        self.torch = torch
        self.target = target
        self.device = self.torch_device()
        self.mod = getattr(torch, target, None) if target != "cpu" else None
        # torch.tpu, on tpu only: only what torch_tpu 0.2.0 exports and does not keep internal for this torch
        # (get_device_name, get_device_properties, precision, Precision; tests/test_tpu_api.py checks it).
        self.tpu = self.mod if target == "tpu" else None
        self.name = cpu_name() if target == "cpu" else ""
        self.count = 1
        self.memory_bytes: int | None = None
        self.memory_source = ""
        self.sync_name = "none (cpu)"
        self._sync = None
        self._peak = None
        self._reset_peak = None
        self.peak_name = ""
        # tpu: TorchTPU's reset of the peak statistics only warns (issue 15's reading of torch_tpu), so
        # the harness never resets there and peak_mem_bytes is the process's peak; the process is fresh
        # per model and puts nothing on the device but the model, its inputs and outputs (and the
        # 4-byte tensor of the first op), so that is still the model's peak.
        self.peak_scope = "process" if target == "tpu" else "since load"
        self.highest = False  # device steps run at torch.tpu.precision(HIGHEST) (precision_rule)

    def torch_device(self):
        return self.torch.device({"cuda": "cuda:0"}.get(self.target, self.target))

    def init(self) -> None:
        if self.target == "cpu":
            total, _ = harness_host.host_memory()
            self.memory_bytes = total
            self.memory_source = "host RAM"
            return
        mod = self.mod
        try:
            self.name = str(self.tpu.get_device_name() if self.tpu is not None else mod.get_device_name(0))
        except Exception:  # noqa: BLE001
            self.name = self.target.upper()
        try:
            props = self.tpu.get_device_properties() if self.tpu is not None else mod.get_device_properties(0)
            self.memory_bytes = int(props.total_memory)
            self.memory_source = f"torch.{self.target}.get_device_properties"
        except Exception:  # noqa: BLE001
            self.memory_bytes = None
        if self.memory_bytes is None and self.target == "tpu":  # HBM per device from the one device table
            dev = harness_efficiency.match_device("tpu", self.name, harness_efficiency.load_table())
            if dev and dev.get("hbm_bytes"):
                self.memory_bytes, self.memory_source = int(dev["hbm_bytes"]), f"devices.json ({dev['key']})"
        acc = self.accelerator()
        if acc is not None:
            with contextlib.suppress(Exception):
                self.count = int(acc.device_count())
        elif self.tpu is None:
            with contextlib.suppress(Exception):
                self.count = int(mod.device_count())
        for name, fn in self.sync_candidates(acc):
            if fn is None:
                continue
            try:
                fn()
                self._sync, self.sync_name = fn, name
                break
            except Exception:  # noqa: BLE001
                continue
        # peak memory: allocator statistics where the runtime has them (TorchTPU's own benchmarks read
        # torch.accelerator.max_memory_allocated: examples/benchmarks/e2e/harness/torch_device_ops.py)
        candidates = [("torch.accelerator", getattr(acc, "reset_peak_memory_stats", None),
                       getattr(acc, "max_memory_allocated", None))]
        if self.tpu is None:
            candidates.append((f"torch.{self.target}", getattr(mod, "reset_peak_memory_stats", None),
                               getattr(mod, "max_memory_allocated", None)))
        for name, reset, peak in candidates:
            if peak is None:
                continue
            if self.peak_scope == "process":
                reset = None
            try:
                int(peak())
                if reset is not None:
                    reset()
                self._peak, self._reset_peak, self.peak_name = peak, reset, name
                break
            except Exception:  # noqa: BLE001
                continue

    def accelerator(self):
        """torch.accelerator when its current accelerator is this target (torch gives a registered
        privateuse1 backend, torch_tpu's "tpu", precedence), else None."""
        acc = getattr(self.torch, "accelerator", None)
        try:
            cur = acc.current_accelerator()
        except Exception:  # noqa: BLE001 - no accelerator API, or none available
            return None
        return acc if cur is not None and getattr(cur, "type", None) == self.target else None

    def sync_candidates(self, acc) -> list:
        """(name, function) pairs to synchronise with, preferred first: torch.accelerator.synchronize (on
        tpu the only one: torch.tpu.synchronize is internal to TorchTPU with torch >= 2.11 and raises
        when user code calls it, torch_tpu _device_module.py; torch.accelerator.synchronize is a no-op
        only before the accelerator is initialised, and the first op initialised it), then, elsewhere,
        the device module's."""
        accel = ("torch.accelerator.synchronize", getattr(acc, "synchronize", None))
        if self.tpu is not None:
            return [accel]
        return [accel, (f"torch.{self.target}.synchronize", getattr(self.mod, "synchronize", None))]

    def set_dtype(self, dtype_name: str) -> None:
        """Decide, for the run's device dtype, whether device steps run at HIGHEST precision."""
        has = self.tpu is not None and hasattr(self.tpu, "precision") and hasattr(self.tpu, "Precision")
        self.highest = precision_rule(self.target, dtype_name, has)[1]

    def tolerance_row(self, dtype_name: str) -> str:
        """The TOLERANCES row that holds this device's output in dtype_name (precision_rule)."""
        return precision_rule(self.target, dtype_name, self.highest)[0]

    def precision(self):
        """The context device steps run in: torch.tpu.precision(HIGHEST) when set_dtype chose it."""
        if self.highest:
            return self.tpu.precision(self.tpu.Precision.HIGHEST)
        return contextlib.nullcontext()

    def sync(self) -> None:
        if self._sync is not None:
            self._sync()

    def reset_peak(self) -> None:
        if self._reset_peak is not None:
            with contextlib.suppress(Exception):
                self._reset_peak()

    def compile_count(self) -> int | None:
        """TorchTPU's executable-cache misses (XLA compilations so far), None elsewhere.

        TorchTPU compiles in eager mode too, and may keep compiling for a few calls after the
        first; its own benchmarks warm up until this count stops moving."""
        # torch.tpu._get_cache_misses: a private name torch_tpu's registry serves through its private
        # fallback (public_api.py), the count TorchTPU's own benchmarks read (torch_device_ops.py)
        fn = getattr(self.tpu, "_get_cache_misses", None) if self.tpu is not None else None
        if fn is None:
            return None
        try:
            return int(fn())
        except Exception:  # noqa: BLE001
            return None

    def warm(self, call, max_extra: int) -> tuple[int, bool]:
        """After a first call: call again until a call compiles nothing (tpu only).

        Returns (calls that still compiled, settled). On cpu/cuda: (0, True) without calling."""
        before = self.compile_count()
        if before is None:
            return 0, True
        for i in range(max_extra):
            call()
            self.sync()
            now = self.compile_count()
            if now == before:
                return i, True
            before = now
        return max_extra, False

    def peak_bytes(self) -> int | None:
        if self._peak is None:
            return None
        try:
            val = int(self._peak())
        except Exception:  # noqa: BLE001
            return None
        return val if val > 0 else None


# --- the probe --------------------------------------------------------------------

@harness_context.share_fields
class Probe:
    """One probe: the env, load and forward stages, and the stages it composes (config, numerics, the matrix,
    compile, generate), all sharing one harness_context.Context (its fields are the probe's attributes too)."""

    device_cls = Device  # harness_testing's simulated TPU swaps in a subclass
    warmup_max_extra = WARMUP_MAX_EXTRA
    # the stages composed, each built with the context and the collaborators it calls (harness_testing's seam
    # subclasses them)
    config_cls = harness_config.ConfigStage
    numerics_cls = harness_compare.NumericsStage
    modes_cls = harness_modes.Modes
    compile_cls = harness_compile.CompileStage
    generate_cls = harness_generate.GenerateStage

    def __init__(self, args):
        runtime = harness_result.Runtime(python=platform.python_version(), harness=HARNESS_VERSION,
                                         tcmalloc=tcmalloc_loaded())
        self.ctx = harness_context.Context(args, _T0, runtime, harness_result.Metrics(), harness_ops.Tracer(),
                                           self.warmup_max_extra)
        book = (self.ctx, self.stage, self.skip_stage)
        self.config_stage = self.config_cls(*book)
        # result.modes: the train step, the eager modes, precision (harness_modes.py)
        self.modes_stage = self.modes_cls(*book, output_tensors=self.output_tensors, tolerance_row=self.tolerance_row,
                                          forward_kwargs=self.forward_kwargs)
        self.numerics_stage = self.numerics_cls(*book, tolerance_row=self.tolerance_row,
                                                precision_verdict=self.modes_stage.precision_verdict)
        self.compile_stage = self.compile_cls(*book, output_tensors=self.output_tensors,
                                              tolerance_row=self.tolerance_row,
                                              graph_break_counts=self.modes_stage.graph_break_counts,
                                              record_graph_breaks=self.modes_stage.record_graph_breaks)
        self.generate_stage = self.generate_cls(*book, forward_kwargs=self.forward_kwargs)
        # the float32 CPU reference: numerics, and whose a failure is
        self.reference = harness_reference.Reference(self.ctx, self.forward_inputs, self.apply_generation_config,
                                                     self.generate_stage)

    # stage bookkeeping
    @contextlib.contextmanager
    def stage(self, name: str):
        self.current = name
        rec = harness_result.StageRun(stage=name)
        notes: list[str] = []
        harness_host.log(f"stage={name} start")
        t = time.perf_counter()
        try:
            yield notes
            rec.ok = True
        except harness_failures.Skip as s:
            notes.append(f"skipped ({s.reason}): {s}")
            raise
        except BaseException as e:
            notes.append(harness_failures.short_message(e, 300))
            raise
        finally:
            rec.duration_s = round(time.perf_counter() - t, 4)
            note = "; ".join(n for n in notes if n)[:1000]
            if note:
                rec.note = note
            self.stages.append(rec)
            harness_host.log(f"stage={name} {'ok' if rec.ok else 'FAILED'} {rec.duration_s:.2f}s"
                + (f" {note}" if note else ""))

    def skip_stage(self, name: str, note: str) -> None:
        self.stages.append(harness_result.StageRun(stage=name, ok=True, skipped=True, note=note))
        harness_host.log(f"stage={name} skipped {note}")

    # --- stages ---

    def probe_tpu(self, torch) -> dict:
        """Google's torch_tpu and whether a TPU is usable (probe_torch_tpu; harness_testing's
        simulated TPU overrides this)."""
        return probe_torch_tpu(torch, self.args.host_root, self.args.tpu_check_timeout, self.world)

    def stage_env(self) -> None:
        if self.world > 1:
            harness_host.set_log_prefix(f"[rank {os.environ.get('RANK', '?')}] ")
        with self.stage("env") as notes:
            self.rank = harness_shard.rank_of(self.world)
            self.torch = import_torch()
            self.runtime.torch = self.torch.__version__
            self.runtime.transformers = dist_version("transformers")
            tpu = self.choose_target(notes)
            self.record_tpu_stack(tpu, notes)
            self.open_device(tpu, notes)
            self.choose_dtype(notes)
            # off a TPU, one device: trace the ops for the TorchTPU prediction (a tpu run is measured instead)
            self.ops.enabled = self.target != "tpu" and self.world == 1 and not self.args.no_ops_trace
            if self.world > 1:
                backend = harness_shard.init(
                    self.torch, self.target, self.world, self.rank, self.args.collective_timeout_s
                )
                notes.append(f"rank {self.rank} of {self.world}, backend {backend}, collective timeout "
                             f"{self.args.collective_timeout_s:g}s")

    def choose_target(self, notes: list) -> dict | None:
        """self.target from --target: tpu and auto look for a usable TPU (probe_tpu; its answer is returned), cpu
        and cuda never load torch_tpu: with it loaded, even torch.manual_seed would start the TPU runtime
        (torch/random.py _seed_custom_device seeds the privateuse1 device module)."""
        requested = self.args.target
        tpu = self.probe_tpu(self.torch) if requested in ("tpu", "auto") else None
        self.target, why = resolve_target(requested, tpu)
        if why:
            notes.append(why)
        if self.target == "cpu" and tpu is not None:
            forget_tpu(self.torch)
        elif tpu is not None and tpu["note"]:
            notes.append(tpu["note"])
        if tpu is not None and tpu.get("launch"):
            notes.append(tpu["launch"])
        return tpu

    def record_tpu_stack(self, tpu: dict | None, notes: list) -> None:
        """torch_tpu/libtpu versions belong to tpu runs only (the runtime key of a cpu run has none)."""
        if self.target == "tpu" and tpu is not None and tpu["google"]:
            self.runtime.torch_tpu = tpu["version"]
            self.runtime.libtpu = dist_version("libtpu", "libtpu-nightly")
        elif tpu is not None and tpu["google"] and tpu["version"]:
            notes.append(f"torch_tpu {tpu['version']} installed (not used)")
        if self.runtime.tcmalloc:
            notes.append("tcmalloc preloaded")

    def open_device(self, tpu: dict | None, notes: list) -> None:
        """self.dev on the target (device_unavailable when a tpu or cuda asked for is not usable), its name,
        count and memory in the runtime, and how it syncs and reports its peak memory in the notes."""
        if self.target == "tpu" and not (tpu and tpu["available"]):
            raise harness_failures.DeviceUnavailable(
                f"target tpu requested but no TPU is usable: {tpu['note'] if tpu else ''}", "tpu"
            )
        if self.target == "cuda" and not self.torch.cuda.is_available():
            raise harness_failures.DeviceUnavailable(
                "target cuda requested but torch.cuda.is_available() is False", "cuda"
            )
        self.dev = self.device_cls(self.torch, self.target)
        self.dev.init()
        self.runtime.device = self.dev.name
        self.runtime.device_count = self.dev.count
        if self.dev.memory_bytes:
            self.runtime.device_memory_gib = round(self.dev.memory_bytes / (1 << 30), 2)
        notes.append(f"sync={self.dev.sync_name}")
        if self.target != "cpu":
            notes.append(f"peak_mem={self.dev.peak_name or 'not reported'}"
                         + (" (the process's peak: not reset on tpu)" if self.dev.peak_name and
                            self.dev.peak_scope == "process" else ""))

    def choose_dtype(self, notes: list) -> None:
        """self.dtype: --dtype, else fit.json's for the target (bfloat16, on cpu too, against the float32
        reference: what the fit formula assumes); the notes say what a verdict compares and at which precision."""
        if self.args.dtype != "auto":
            self.dtype = getattr(self.torch, self.args.dtype)
        else:
            self.dtype = getattr(self.torch, harness_host.FIT["targets"][self.target]["dtype"])
        dtype_name = str(self.dtype).replace("torch.", "")
        self.dev.set_dtype(dtype_name)
        notes.append(verdict_note(self.target, dtype_name))
        if self.dev.highest:
            notes.append("float32 on tpu: device steps at torch.tpu.precision(Precision.HIGHEST)")
        elif self.dev.tolerance_row(dtype_name) != dtype_name:
            notes.append(f"{dtype_name} on tpu without torch.tpu.precision: held to the "
                         f"{self.dev.tolerance_row(dtype_name)} tolerance")

    def to_dtype_keep_fp32(self, model, dtype):
        """Cast like from_pretrained(dtype=...) does, keeping _keep_in_fp32_modules(_strict) in float32."""
        torch = self.torch
        model.to(dtype=dtype)
        keep = set()
        if dtype in (torch.float16, torch.bfloat16):
            keep |= set(getattr(model, "_keep_in_fp32_modules_strict", None) or ())
        if dtype == torch.float16:
            keep |= set(getattr(model, "_keep_in_fp32_modules", None) or ())
        if keep:
            for name, mod in model.named_modules():
                if any(k in name.split(".") or name.endswith(k) for k in keep):
                    mod.to(dtype=torch.float32)
        return model

    def stage_load(self) -> None:
        args, torch = self.args, self.torch
        with self.stage("load") as notes:
            self.dev.reset_peak()
            t = time.perf_counter()
            shard_kwargs = {}
            if self.world > 1:
                self.sharding, why = harness_shard.choose(args.sharding, self.cls,
                                               self.config if self.mode == "full" else self.arch_config, self.world)
                notes.append(f"sharded over {self.world} devices: {why}")
                if self.mode == "full" and self.sharding == "tp":  # each rank loads its shards only
                    shard_kwargs["distributed_config"] = harness_shard.distributed_config(self.world)
            if self.mode == "full":
                model, info = self.cls.from_pretrained(
                    args.model_dir, dtype=self.dtype, use_safetensors=True, trust_remote_code=False,
                    local_files_only=True, output_loading_info=True, **self.load_kwargs, **shard_kwargs)
                missing = list((info or {}).get("missing_keys") or [])
                if missing:
                    notes.append(f"{len(missing)} weights missing from the checkpoint (initialised): "
                                 + ", ".join(sorted(missing)[:3]))
            else:
                # the float32 reference first (the same seeded weights), the device's model a copy of it
                ref = self.reference.model()
                import copy

                model = copy.deepcopy(ref)
                if self.rank != 0:  # rank 0 alone compares with the reference
                    del ref
                    self.reference.release()
                if self.dtype != torch.float32:
                    self.to_dtype_keep_fp32(model, self.dtype)
            model.eval()
            if self.sharding == "fsdp":  # fully_shard moves each shard to the mesh's device
                model = harness_shard.shard_fsdp(torch, model, self.target, self.world)
            elif self.sharding == "tp" and "distributed_config" not in shard_kwargs:
                model = harness_shard.shard_tp(torch, model, self.target, self.world)
            elif self.target != "cpu" and self.sharding is None:
                model.to(self.dev.device)
            self.dev.sync()
            self.metrics.load_s = round(time.perf_counter() - t, 4)
            self.metrics.param_count = int(sum(p.numel() for p in model.parameters()))
            self.model = model
            notes.append(f"params={self.metrics.param_count}")

    def apply_generation_config(self, model) -> None:
        """Arch mode: the snapshot's generation_config.json, as from_pretrained would read it in full mode."""
        gen_path = os.path.join(self.args.model_dir, "generation_config.json")
        if os.path.isfile(gen_path) and model.can_generate():
            with contextlib.suppress(Exception):
                from transformers import GenerationConfig

                model.generation_config = GenerationConfig.from_pretrained(self.args.model_dir, local_files_only=True)

    def forward_kwargs(self, inputs):
        out = {}
        for k, v in inputs.items():
            if hasattr(v, "to"):
                if v.is_floating_point():
                    v = v.to(self.dev.device, dtype=self.dtype)
                else:
                    v = v.to(self.dev.device)
            out[k] = v
        return out

    def tolerance_row(self, dtype_name: str) -> str:
        """The TOLERANCES row that holds the device's output in dtype_name (Device.tolerance_row)."""
        return self.dev.tolerance_row(dtype_name) if self.dev else dtype_name

    def output_tensors(self, out) -> dict:
        """name -> float CPU tensor of the outputs the family compares (harness_numerics.select; the
        primary one first); remembers their kinds in self.out_kinds."""
        sel = harness_numerics.select(out, self.family)
        self.out_kinds = {name: kind for name, kind, _ in sel}
        # a sharded output is gathered on every rank (a collective)
        return {name: harness_shard.full_tensor(val).detach().float().cpu() for name, _, val in sel}

    def stage_forward(self) -> None:
        args, torch = self.args, self.torch
        with self.stage("forward") as notes:
            self.real = self.forward_inputs(self.model, self.forward_kwargs, notes)
            self.inputs_cpu, info = self.real.tensors, self.real.info
            self.input_info = info
            notes.append("inputs " + ", ".join(f"{k}={list(v.shape)}" for k, v in self.inputs_cpu.items()
                                                if hasattr(v, "shape")))
            self.dev_inputs = self.forward_kwargs(self.inputs_cpu)
            with torch.no_grad():
                dev = self.dev
                dev.sync()
                t = time.perf_counter()
                while True:
                    try:
                        out = self.model(**self.dev_inputs)
                        break
                    except Exception as e:  # noqa: BLE001 - only the model's own placeholder count is acted on
                        if not self.refit_placeholders(e, notes):
                            raise
                    dev.sync()
                    t = time.perf_counter()
                dev.sync()
                self.metrics.first_forward_s = round(time.perf_counter() - t, 4)
                extra, settled = dev.warm(lambda: self.model(**self.dev_inputs), WARMUP_MAX_EXTRA)
                if extra:
                    notes.append(f"TorchTPU still compiled on {extra} warm-up call(s) after the first"
                                 + ("" if settled else " and had not settled"))
                c0 = dev.compile_count()
                out, times = harness_modes.timed_calls(lambda: self.model(**self.dev_inputs), dev.sync, args.steps)
                c1 = dev.compile_count()
                if c0 is not None and c1 != c0:
                    notes.append(f"TorchTPU compiled {c1 - c0} executable(s) during the timed eager steps")
                if self.world > 1:
                    notes.append(self.profile_collectives(lambda: self.model(**self.dev_inputs)))
            self.metrics.forward_ms = round(statistics.median(times) * 1000, 4)
            if self.world > 1:  # the group's step is its slowest rank's
                self.metrics.forward_ms = harness_shard.largest(
                    harness_shard.gather(self.metrics.forward_ms, self.world)
                )
                self.metrics.first_forward_s = harness_shard.largest(
                    harness_shard.gather(self.metrics.first_forward_s, self.world)
                )
            outs = self.output_tensors(out)
            primary = next(iter(outs))
            self.is_scores = self.out_kinds[primary] == "logits"
            self.dev_out = outs.pop(primary)
            self.dev_extra = outs
            notes.append(
                f"output {list(self.dev_out.shape)}" + (f" ({primary}; also {', '.join(outs)})" if outs else "")
            )

    def profile_collectives(self, step) -> str:
        """One more step under torch.profiler: metrics.collective_ms is the time its collectives took on this
        rank (harness_shard.collective_ms), null when the profiler names none."""
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step()
            self.dev.sync()
        ms = harness_shard.collective_ms(prof)
        self.metrics.collective_ms = ms
        return f"collectives {ms:g} ms of a profiled step" if ms is not None else "the profiler named no collective"

    def refit_placeholders(self, e: BaseException, notes: list) -> bool:
        """When the first forward says its features and placeholder tokens do not match (transformers' own
        message, harness_synthetic_inputs.placeholder_mismatch), the inputs are rebuilt with the model's own count
        of features for that media (harness_synthetic_inputs.placeholder_candidates, each tried once; kept for the
        reference, which builds the same inputs): True when rebuilt."""
        found = harness_synthetic_inputs.placeholder_mismatch(e)
        if found is None:
            return False
        media, given, made = found
        tried = self.__dict__.setdefault("placeholder_tries", {}).setdefault(media, [given])
        hidden = getattr(harness_inputs.text_config(self.model.config), "hidden_size", None)
        todo = [n for n in harness_synthetic_inputs.placeholder_candidates(made, hidden) if n not in tried]
        if not todo:
            return False
        tried.append(todo[0])
        self.placeholder_counts = dict(getattr(self, "placeholder_counts", None) or {}, **{media: todo[0]})
        notes.append(f"{media} placeholders: the model reports {made} features for {given} placeholder(s); inputs "
                     f"rebuilt with {todo[0]}")
        self.real = self.forward_inputs(self.model, self.forward_kwargs, notes)
        self.inputs_cpu, self.input_info = self.real.tensors, self.real.info
        notes.append("inputs " + ", ".join(f"{k}={list(v.shape)}" for k, v in self.inputs_cpu.items()
                                            if hasattr(v, "shape")))
        self.dev_inputs = self.forward_kwargs(self.inputs_cpu)
        return True

    def forward_inputs(self, model, to_device, notes: list) -> harness_real_inputs.Inputs:
        """The forward inputs (CPU, float32 / int64) of model: the family's synthetic ones from the config and the
        model's forward signature, replaced in full mode by the model's own tokenizer / processor where its files
        allow (harness_real_inputs). to_device moves CPU inputs to model's device (None: model is on the CPU, float32),
        for multimodal models asked how many placeholder tokens one image takes. The reference builds the same
        inputs with this when the target failed before building them."""
        import inspect

        args, torch = self.args, self.torch
        try:
            accepted = set(inspect.signature(model.forward).parameters)
        except (TypeError, ValueError):
            accepted = set()
        cfg = model.config
        counts = getattr(self, "placeholder_counts", None)
        inputs, info = harness_synthetic_inputs.build_inputs(
            torch,
            self.family,
            cfg,
            accepted,
            args.seq_len,
            args.new_tokens,
            args.seed,
            type(model).__name__,
            model=model,
            to_device=to_device,
            counts=counts,
        )
        reserve = args.new_tokens if harness_synthetic_inputs.FAMILY_GENERATES.get(self.family) else 0
        real = harness_real_inputs.build(
            torch, self.family, cfg, args.model_dir, self.mode, inputs, info, accepted, reserve
        )
        notes.append(f"inputs: {real.note}")
        if info.get("no_vision_tower"):
            notes.append("config.json has no vision_config: transformers builds the model without its optional "
                         "vision tower, so it runs on text alone")
        missing = harness_synthetic_inputs.modalities_missing(accepted, cfg, real.tensors)
        if missing:
            notes.append(f"the forward takes {' and '.join(missing)} inputs the harness does not build")
        return real

    # --- whose failure ---

    def judge(self, e: BaseException) -> dict:
        """The classification of a failure in the current stage that stands: the target's failure, unless the
        float32 CPU reference fails the same stage with the same inputs (harness_failures.arbitrate), then the
        scanner's error. The reference runs only here, when the target failed (and in numerics, always)."""
        stage = self.current
        c = harness_failures.classify(e, stage)
        if c["status"] != "fail" or stage not in harness_failures.ARBITRATED_STAGES:
            return c
        if self.world > 1 and self.mode == "full" and not self.numerics_stage.reference_fits():
            harness_host.log(
                f"stage={stage} failed on the target; the float32 cpu reference of a sharded full-mode model is not "
                "run on this host (its size unknown or over the memory available to the ranks)"
            )
            return c
        harness_host.log(f"stage={stage} failed on the target: the same stage on the float32 cpu reference")
        ref_exc, ran = self.reference.run_stage(stage)
        self.reference.release()
        ref = harness_failures.classify(ref_exc, stage) if ref_exc is not None else None
        out, note = harness_failures.arbitrate(stage, c, ref, ran)
        if note:
            harness_host.log(f"stage={stage} {note}")
            rec = next((r for r in reversed(self.stages) if r.stage == stage), None)
            if rec is not None:
                rec.note = "; ".join(n for n in (note, rec.note_text()) if n)[:1000]
        return out

    # --- driver ---

    def run(self) -> harness_result.Result | None:
        res = harness_result.Result(target=self.target, revision=self.args.revision or "", tested_at=now_rfc3339())
        try:
            self.stage_env()
            with self.dev.precision():  # HIGHEST for float32 on tpu (precision_rule), else nothing
                self.config_stage.stage_config()
                self.stage_load()
                self.stage_forward()
                self.numerics_stage.stage_numerics()
                # the train step and the eager modes, beside the inference (harness_modes.py)
                self.modes_stage.stage_modes()
                self.compile_stage.stage_compile()
                self.generate_stage.stage_generate()
            res.status = "pass"
            ran = [s.stage for s in self.stages if s.ok and s.skipped is not True]
            res.stage = ran[-1] if ran else None
        except harness_shard.RankStop:
            return None  # rank 0 failed and reports; this rank has nothing to say
        except harness_failures.Skip as s:
            res.status, res.stage, res.reason = "skipped", self.current, s.reason
            res.message = harness_failures.truncate_bytes(str(s), 2048)
        except Exception as e:  # noqa: BLE001 - every model failure becomes a Result
            # a peer's, not the model's: nothing to arbitrate
            if self.world > 1 and harness_shard.is_collective_timeout(e):
                c = harness_shard.timeout_class(e, self.current, self.rank, self.world, self.args.collective_timeout_s)
            else:
                c = self.judge(e)
            res.status, res.stage, res.failure_class, res.op = c["status"], self.current, c["failure_class"], c["op"]
            res.signature, res.message, res.log_tail = c["signature"], c["message"], c["log_tail"]
        self.metrics.peak_mem_bytes = self.modes_stage.inference_peak()  # not the train step's (harness_modes.py)
        if self.world > 1 and res.status == "pass":  # every rank is here: the group's last collectives
            self.metrics.peak_mem_bytes = harness_shard.largest(
                harness_shard.gather(self.metrics.peak_mem_bytes, self.world)
            )
            harness_shard.finish(self.world)
        res.devices_used = self.world
        res.sharding = self.sharding
        res.target = self.target
        res.mode = self.mode
        res.runtime = self.runtime
        self.metrics.finite()
        res.metrics = self.metrics
        harness_efficiency.annotate(self, res)  # metrics.mfu, .mbu and .efficiency (harness_efficiency.py)
        self.modes_stage.finish_modes(res)  # result.modes, precision_sensitive, metrics.precision (harness_modes.py)
        res.repro = ""  # the scanner's runner writes it (compat.ReproOn): one writer of repro commands
        res.task = self.task
        res.stages = self.stages
        if self.continuation is not None:
            res.continuation = harness_result.Continuation(**self.continuation)
        traced = self.ops.result()
        if traced is not None:
            res.ops_traced = traced
        res.duration_s = round(time.monotonic() - _T0, 3)
        return res


def env_only(args) -> harness_result.EnvResult:
    """A Result-shaped object (status pass, stage env) whose target is where a probe
    would run and whose runtime block is the retest key's source. Extra fields:
    available_targets (tpu is looked for, and torch_tpu loaded, only when tpu or auto is asked),
    device_memory_bytes, note (auto on cpu: why not tpu), google_torch_tpu (Google's torch_tpu is
    installed, whether or not it found a usable TPU; false when it was not looked for)."""
    runtime = harness_result.Runtime(python=platform.python_version(), transformers=dist_version("transformers"),
                                     harness=HARNESS_VERSION, libtpu=dist_version("libtpu", "libtpu-nightly"),
                                     tcmalloc=tcmalloc_loaded())
    out = harness_result.EnvResult(target="cpu" if args.target == "auto" else args.target, tested_at=now_rfc3339(),
                                   runtime=runtime)

    def fail(cls, msg, sig):
        out.status, out.failure_class, out.message, out.signature = "error", cls, msg, sig
        out.duration_s = round(time.monotonic() - _T0, 3)
        return out

    try:
        import torch
    except Exception as e:  # noqa: BLE001
        out.available_targets = []
        return fail(
            "import_error", f"cannot import torch: {harness_failures.short_message(e, 500)}", "import_error:torch"
        )
    runtime.torch = torch.__version__
    # as in a probe: only tpu and auto load torch_tpu, so available_targets names tpu only for those
    tpu = probe_torch_tpu(torch, args.host_root, args.tpu_check_timeout) if args.target in ("tpu", "auto") else None
    if tpu is not None:
        out.google_torch_tpu = tpu["google"]
        out.tpu_chips = tpu["chips"]
        out.note = tpu["note"] or (f"torch_tpu {tpu['version']}" if tpu["google"] else "")
        if tpu["available"]:
            out.available_targets.insert(0, "tpu")
    with contextlib.suppress(Exception):
        if torch.cuda.is_available():
            out.available_targets.append("cuda")
    target, why = resolve_target(args.target, tpu)
    if why and target == "cpu":
        out.note = why
    out.target = target
    if target == "tpu" and tpu is not None and tpu["google"]:  # versions of the TPU stack on tpu runs only
        runtime.torch_tpu = tpu["version"]
    else:
        runtime.libtpu = ""
    if target not in out.available_targets:
        return fail("device_unavailable", f"target {target} requested but not usable"
                    + (f": {tpu['note']}" if target == "tpu" and tpu and tpu["note"] else " on this host"),
                    f"device_unavailable:{target}")
    dev = Device(torch, target)
    with contextlib.suppress(Exception):
        dev.init()
    runtime.device, runtime.device_count = dev.name, dev.count
    out.device_memory_bytes = dev.memory_bytes
    if dev.memory_bytes:
        runtime.device_memory_gib = round(dev.memory_bytes / (1 << 30), 2)
    out.duration_s = round(time.monotonic() - _T0, 3)
    return out


def new_probe(args) -> Probe:
    """The Probe for this run: harness.Probe, or with HARNESS_TEST_INJECT set (tests only) the
    fault-injecting subclass that harness_testing builds from it. This is the harness's one test
    seam, chosen here at start-up; unset, harness_testing is never imported."""
    spec = os.environ.get("HARNESS_TEST_INJECT", "")
    if not spec:
        return Probe(args)
    import harness_testing

    return harness_testing.with_faults(Probe, spec)(args)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--model-dir")
    p.add_argument("--model-id", default="")
    p.add_argument("--revision", default="")
    p.add_argument("--target", choices=("tpu", "cpu", "cuda", "auto"), default="auto")
    p.add_argument("--mode", choices=("full", "arch"),
                   help="full or arch, as the scanner's plan decided (required unless --env-only; the harness "
                        "chooses no mode itself)")
    p.add_argument("--task", default="")
    p.add_argument("--result-file", required=True)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--memory-budget-bytes", type=int, default=None,
                   help="the model's memory budget (default: available host RAM on cpu, device memory elsewhere)")
    p.add_argument(
        "--plan-note", default="", help="why the scanner's plan chose this probe (noted in the config stage)"
    )
    p.add_argument("--no-compile", action="store_true")
    p.add_argument(
        "--deadline-s",
        type=float,
        default=None,
        help="the probe's wall-clock limit from the harness's start (the scanner's probe timeout): the "
        "compile stage is bounded to what is left of it, less a reserve (harness_compile.compile_budget)",
    )
    p.add_argument("--no-generate", action="store_true")
    p.add_argument("--no-train", default="", metavar="REASON",
                   help="skip the train step, saying why (the scanner's plan: the weights, gradients and AdamW state "
                        "do not fit)")
    p.add_argument("--no-ops-trace", action="store_true",
                   help="trace no ops for the TorchTPU prediction (harness_ops.py; make bench compares)")
    p.add_argument("--no-modes", action="store_true",
                   help="run none of the matrix's extra work: no train step, eager modes or second precision (bench)")
    p.add_argument("--env-only", action="store_true")
    # extensions (optional; the Go runner need not pass them)
    p.add_argument(
        "--compile-backend", default="", help="torch.compile backend (default: tpu on tpu, inductor elsewhere)"
    )
    p.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16"), default="auto",
                   help="device dtype (default: bfloat16; on cpu too, so that a cpu verdict compares it with the "
                        "float32 reference)")
    p.add_argument("--host-root", default="/", help="where the TPU check's PCI scan finds sys/ and dev/ (tests)")
    p.add_argument("--tpu-check-timeout", type=float, default=TPU_CHECK_TIMEOUT_S,
                   help="seconds the TPU check (a child process) may take to run its first op")
    p.add_argument(
        "--devices",
        type=int,
        default=1,
        help="devices a sharded probe runs on, one rank each (RANK etc. in the environment; harness_shard.py)",
    )
    p.add_argument("--sharding", choices=harness_shard.SHARDINGS, default="auto",
                   help="how a sharded probe splits the model: auto (tp where transformers has a plan), tp or fsdp")
    p.add_argument("--collective-timeout-s", type=float, default=600.0,
                   help="a sharded probe's collective waiting longer for a peer fails as a timeout")
    args = p.parse_args(argv)
    if not args.env_only and not args.model_dir:
        p.error("--model-dir is required (unless --env-only)")
    if not args.env_only and not args.mode:
        p.error("--mode is required (unless --env-only): full or arch, as the scanner's plan decides")
    for name in ("seq_len", "new_tokens", "layers", "steps", "devices"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.env_only:
        out = env_only(args).to_dict()
        print(json.dumps(out))
        try:
            write_json_atomic(args.result_file, out)
        except OSError as e:
            harness_host.log(f"cannot write {args.result_file}: {e}")
            return 2
        return 0
    probe = new_probe(args)
    res = probe.run()
    if probe.rank != 0:  # a rank of a sharded probe: it reports only its own failure
        if res is None or res.status == "pass":
            return 0
        path = harness_shard.rank_result_path(args.result_file, probe.rank)
        write_json_atomic(path, res.to_dict())
        harness_host.log(f"rank {probe.rank}: result status={res.status} stage={res.stage} written to {path}")
        return harness_shard.RANK_FAILED
    try:
        write_json_atomic(args.result_file, res.to_dict())
    except (OSError, ValueError) as e:
        harness_host.log(f"cannot write the result to {args.result_file}: {e}")
        return 2
    harness_host.log(f"result status={res.status} stage={res.stage}"
        + (f" class={res.failure_class}" if res.failure_class else "")
        + (f" reason={res.reason}" if res.reason else "") + f" {res.duration_s:.2f}s")
    return 0


if __name__ == "__main__":
    code = main()
    if harness_shard.left_in_group():
        # a rank that failed leaves at once: a process group its peers left half-open must not hold its exit
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
