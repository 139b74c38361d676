"""Failure classification and signatures for the smoke-test harness.

Pure standard library (no torch import), so it can be unit-tested cheaply and
used to report a failure even when torch itself cannot be imported. The
out-of-memory markers are read at import from oom_markers.json, the table the
Go runner reads too.

classify(exc, stage) maps an exception raised in a stage to the contract's
(status, failure_class, op); signature(...) turns it into a short stable string
that groups one root cause across many models:

* ``unsupported_op:aten::_fft_r2c``        an op the backend cannot run
* ``compile_error:aten::foo``              a compile failure naming an op
* ``unsupported_dtype:addmm_impl_cpu_:Half``
* ``oom:forward``                          out of memory, by stage
* ``<class>:<normalised message>``         anything else: the first line of the
  message with addresses, hex, numbers, paths, quoted names/ids, shapes and
  model class names replaced by placeholders.

Not every failure is a verdict on the model. A package missing from the environment
(transformers' "requires the timm library") is status error with
``environment:missing_package:timm``; and arbitrate(...) decides, from the float32 CPU
reference's run of the same stage with the same inputs, whose failure a stage's is: the
reference passes, the failure is the target's (the verdict stands); the reference fails too,
it is the scanner's (status error, ``harness_load:…`` or ``harness_inputs:…``).
"""

from __future__ import annotations

import json
import os
import re
import traceback

MESSAGE_LIMIT = 2048  # bytes of Result.message
LOG_TAIL_LIMIT = 64 * 1024  # bytes of Result.log_tail
SIGNATURE_LIMIT = 200  # characters of Result.signature


class HarnessFailure(Exception):
    """A failure the harness itself detected (not raised by the model code)."""

    failure_class = "other"
    status = "fail"

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        # detail is a short, already-normalised key for the signature.
        self.detail = detail


class DeviceUnavailable(HarnessFailure):
    failure_class = "device_unavailable"
    status = "error"


class EnvImportError(HarnessFailure):
    """torch (or another harness prerequisite) cannot be imported."""

    failure_class = "import_error"
    status = "error"


class NumericsMismatch(HarnessFailure):
    failure_class = "numerics_mismatch"


class RecompileDetected(HarnessFailure):
    failure_class = "recompile"


class ConfigError(HarnessFailure):
    failure_class = "config_error"


class LoadError(HarnessFailure):
    failure_class = "load_error"


class SharedFailure(HarnessFailure):
    """A check the float32 CPU reference fails too (a non-finite reference output, a perplexity the reference
    cannot reach either): not a verdict on the model. detail is the normalised key after the origin."""

    status = "error"

    def __init__(self, origin: str, message: str, detail: str, failure_class: str = "other"):
        super().__init__(message, detail)
        self.origin = origin
        self.failure_class = failure_class


class ReferenceFailed(HarnessFailure):
    """The float32 CPU reference itself failed while the target passed: the comparison cannot be made, and
    that is the scanner's problem (its reference), never the model's verdict."""

    status = "error"

    def __init__(self, message: str, detail: str, failure_class: str = "other"):
        super().__init__(message, detail)
        self.failure_class = failure_class


class Skip(Exception):
    """Preflight declines to run the model: status skipped with a contract reason."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


# "Could not run 'aten::foo' with arguments from the 'TPU' backend."
_OP_PATTERNS = [
    re.compile(r"Could not run '(?P<op>[A-Za-z_][\w.]*::[\w.]+)' with arguments from the '(?P<backend>[^']+)' backend"),
    # torch_tpu's backend fallback (csrc/eager/tpu_aten_kernels.cc): "Operator 'aten::foo' is not implemented for TPU.
    # Please file a feature request" (the op the kernel table calls a fallback: harness_kernels.py)
    re.compile(r"Operator '(?P<op>[A-Za-z_][\w.]*::[\w.]+)' is not implemented for (?P<backend>TPU)"),
    # "The operator 'aten::foo' is not currently implemented for the TPU device."
    re.compile(
        r"The operator '(?P<op>[A-Za-z_][\w.]*::[\w.]+)' is not currently implemented for the (?P<backend>\S+?) device"
    ),
    # "aten::foo is not implemented for ..." / "... op aten::foo is not supported"
    re.compile(r"(?P<op>\baten::[\w.]+)'? (?:is|are) not (?:currently )?(?:implemented|supported)"),
    re.compile(
        r"(?:unsupported|unimplemented|no kernel for|not implemented:?) (?:op(?:erator)?:? )?'?(?P<op>\baten::[\w.]+)",
        re.I,
    ),
    # inductor/aot lowering errors name the OpOverload as aten.foo.default
    re.compile(r"(?:No lowering|missing lowering|LoweringException)[^\n]*?(?P<op>\baten\.[\w]+)"),
]

# '"addmm_impl_cpu_" not implemented for 'Half''
_DTYPE_PATTERNS = [
    re.compile(r"\"(?P<op>\w+)\" not implemented for '(?P<dtype>\w+)'"),
    re.compile(
        r"(?:unsupported|not supported|unimplemented)[^\n]{0,40}?(?:dtype|data ?type|scalar ?type)"
        r"[ :]*'?(?P<dtype>[\w.]+)?",
        re.I,
    ),
    re.compile(
        r"(?:dtype|data ?type|scalar ?type)[ :]*'?(?P<dtype>[\w.]+)'? (?:is )?not (?:supported|implemented)", re.I
    ),
    re.compile(r"Got unsupported ScalarType (?P<dtype>\w+)"),
]

# The out-of-memory markers, shared with the Go runner (internal/harness/oom.go, used by internal/probe): one
# table, oom_markers.json, next to this file.
OOM_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "oom_markers.json")


def _load_oom_markers(path: str = OOM_TABLE) -> list[re.Pattern]:
    with open(path, encoding="utf-8") as fh:
        return [re.compile(m["pattern"]) for m in json.load(fh)["markers"]]


_OOM_PATTERNS = _load_oom_markers()

_COMPILE_MODULE_PREFIXES = ("torch._dynamo", "torch._inductor", "torch._functorch", "torch_tpu._internal.compile")

_DTYPE_NAMES = {
    "Half", "BFloat16", "Float", "Double", "Long", "Int", "Short", "Char", "Byte", "Bool", "ComplexFloat",
    "ComplexDouble", "Float8_e4m3fn", "Float8_e5m2", "float16", "bfloat16", "float32", "float64", "int64",
    "int32", "int8", "uint8", "bool", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2",
}


def exception_chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes/contexts, outermost first, without cycles."""
    seen, out = set(), []
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def short_message(exc: BaseException, limit: int = MESSAGE_LIMIT) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return truncate_bytes(text, limit)


def truncate_bytes(text: str, limit: int, keep: str = "head") -> str:
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    if keep == "head":
        return data[: limit - 3].decode("utf-8", "ignore") + "..."
    return "..." + data[-(limit - 3):].decode("utf-8", "ignore")


def traceback_tail(exc: BaseException, limit: int = LOG_TAIL_LIMIT) -> str:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return truncate_bytes(text, limit, keep="tail")


def find_op(text: str) -> str | None:
    for pat in _OP_PATTERNS:
        m = pat.search(text)
        if m:
            op = m.group("op")
            if op.startswith("aten.") and "::" not in op:  # aten.foo(.default) -> aten::foo
                op = "aten::" + op.split(".")[1]
            return op
    return None


def find_dtype_issue(text: str) -> tuple[str | None, str | None] | None:
    for pat in _DTYPE_PATTERNS:
        m = pat.search(text)
        if m:
            gd = m.groupdict()
            return gd.get("op"), gd.get("dtype")
    return None


def oom_marker(text: str) -> str | None:
    """The text of the first out-of-memory marker (oom_markers.json) found in text, or None."""
    for p in _OOM_PATTERNS:
        m = p.search(text)
        if m:
            return m.group(0)
    return None


def is_oom(exc: BaseException, text: str) -> bool:
    """An out-of-memory error: a MemoryError or torch OutOfMemoryError anywhere in the chain (subclasses
    included), or a marker of oom_markers.json in text."""
    for e in exception_chain(exc):
        if isinstance(e, MemoryError):
            return True
        if any(c.__name__ == "OutOfMemoryError" for c in type(e).__mro__):
            return True
    return oom_marker(text) is not None


def _is_compile_exception(exc: BaseException) -> bool:
    for e in exception_chain(exc):
        mod = type(e).__module__ or ""
        if mod.startswith(_COMPILE_MODULE_PREFIXES) or type(e).__name__ in (
            "BackendCompilerFailed", "InternalTorchDynamoError", "TorchRuntimeError", "Unsupported",
            "CppCompileError", "InductorError", "LoweringException",
        ):
            return True
    return False


def classify(exc: BaseException, stage: str) -> dict:
    """Map an exception raised in a stage to status, failure_class, op and signature."""
    chain = exception_chain(exc)
    text = "\n".join(f"{type(e).__name__}: {e}" for e in chain)
    op = None
    if isinstance(exc, SharedFailure):
        return _pack("error", exc.failure_class, None, f"{exc.origin}:{exc.detail}", exc)
    if isinstance(exc, ReferenceFailed):
        return _pack("error", exc.failure_class, None, f"{REFERENCE_ORIGIN}:{exc.detail}", exc)
    if isinstance(exc, HarnessFailure):
        status, cls = exc.status, exc.failure_class
        detail = exc.detail or normalize_message(short_message(exc))
        return _pack(status, cls, None, f"{cls}:{detail}", exc)
    pkg = missing_package(exc)
    if pkg is not None:  # the environment lacks a package transformers (or the model's code) asks for
        return _pack("error", "import_error", None, f"{ENVIRONMENT_ORIGIN}:missing_package:{pkg}", exc)
    if is_oom(exc, text):
        return _pack("oom", "oom", None, f"oom:{stage}", exc)
    op = find_op(text)
    if stage == "compile":
        if op:
            return _pack("fail", "compile_error", op, f"compile_error:{op}", exc)
        return _pack("fail", "compile_error", None, f"compile_error:{normalize_message(_first_line(chain))}", exc)
    if op:
        return _pack("fail", "unsupported_op", op, f"unsupported_op:{op}", exc)
    dt = find_dtype_issue(text)
    if dt is not None:
        dop, dtype = dt
        parts = ["unsupported_dtype"] + [p for p in (dop, dtype) if p]
        if len(parts) == 1:
            parts.append(normalize_message(_first_line(chain)))
        return _pack("fail", "unsupported_dtype", None, ":".join(parts), exc)
    if any(isinstance(e, ImportError) for e in chain):
        status = "error" if stage == "env" else "fail"
        return _pack(status, "import_error", None, f"import_error:{normalize_message(_first_line(chain))}", exc)
    if stage != "env" and _is_compile_exception(exc):
        # e.g. generate()'s automatic torch.compile of the decode step
        return _pack("fail", "compile_error", None, f"compile_error:{normalize_message(_first_line(chain))}", exc)
    cls = {"config": "config_error", "load": "load_error", "env": "other"}.get(stage, "other")
    status = "error" if stage == "env" else "fail"
    return _pack(status, cls, None, f"{cls}:{normalize_message(_first_line(chain))}", exc)


# --- missing packages ----------------------------------------------------------

# transformers' own words for a package it needs and cannot import (utils/import_utils.py *_IMPORT_ERROR:
# "{0} requires the timm library but it was not found in your environment. You can install it with pip:
# `pip install timm`"; dynamic_module_utils.check_imports: "This modeling file requires the following packages
# that were not found in your environment: einops. Run `pip install einops`").
_PIP_INSTALL = re.compile(r"`?pip install (?:-U )?(?P<pkg>[A-Za-z0-9][A-Za-z0-9._\-]*)")
_REQUIRES_LIBRARY = re.compile(r"requires the (?P<pkg>[A-Za-z0-9][A-Za-z0-9._\-]*) library but it was not found")
_NOT_FOUND_PACKAGES = re.compile(r"requires the following packages that were not found in your environment: "
                                 r"(?P<pkg>[A-Za-z0-9][A-Za-z0-9._\-]*)")
_PACKAGE_NAME = re.compile(r"^[a-z0-9][a-z0-9._\-]{0,63}$")


def missing_package(exc: BaseException, find_spec=None) -> str | None:
    """The package the environment lacks, when an ImportError in the chain says one is missing: transformers'
    own message (the name it tells pip to install, else the library it names), or a ModuleNotFoundError for a
    top-level module that cannot be found (find_spec, importlib.util.find_spec by default). None otherwise
    (an ImportError of a package that is installed but broken is the model's import_error)."""
    if find_spec is None:
        import importlib.util

        find_spec = importlib.util.find_spec
    for e in exception_chain(exc):
        if not isinstance(e, ImportError):
            continue
        text = str(e)
        for pat in (_PIP_INSTALL, _NOT_FOUND_PACKAGES, _REQUIRES_LIBRARY):
            m = pat.search(text)
            if m:
                name = m.group("pkg").strip(".`'\"").lower()
                if _PACKAGE_NAME.match(name):
                    return name
        name = getattr(e, "name", None)
        if isinstance(e, ModuleNotFoundError) and isinstance(name, str) and name:
            top = name.split(".")[0]
            try:
                absent = find_spec(top) is None
            except (ImportError, ValueError):
                absent = True
            if absent and _PACKAGE_NAME.match(top.lower()):
                return top.lower()
    return None


# --- whose failure it is -----------------------------------------------------------------

# Signature origins of a failure that is not a verdict on the model (status error).
ENVIRONMENT_ORIGIN = "environment"   # a package missing from the harness's environment
INPUTS_ORIGIN = "harness_inputs"     # the stage fails on the float32 CPU reference too, with the same inputs
LOAD_ORIGIN = "harness_load"         # building the model fails on the float32 CPU reference too
REFERENCE_ORIGIN = "reference"       # the float32 CPU reference failed while the target passed
# The stages whose failure on the target is run again on the float32 CPU reference (numerics compares with the
# reference it already ran; env and config run no model).
ARBITRATED_STAGES = ("load", "forward", "compile", "generate")


def arbitrate(stage: str, device: dict, reference: dict | None, reference_ran: bool = True) -> tuple[dict, str]:
    """Whose failure it is: (the classification that stands, a note saying why).

    device is classify() of the failure on the target in stage; reference is classify() of the float32 CPU
    reference's failure in the same stage with the same inputs, None when the reference passed it;
    reference_ran is False when the reference was not run (a stage it does not arbitrate) or could not run.

    * a device outcome that is not a verdict (oom, error) stands: the reference does not decide those;
    * the reference passes: the failure is the target's, the verdict stands;
    * the reference could not run (not run, or out of host memory): the verdict stands, and the note says so;
    * the reference fails the same stage: not a verdict on the model. Status error, the reference's class, and
      the signature names the scanner's part: ``harness_load:…`` (building the model), ``harness_inputs:…``
      (running the harness's inputs), or the reference's own ``environment:missing_package:…``."""
    if device["status"] != "fail" or stage not in ARBITRATED_STAGES:
        return device, ""
    if not reference_ran:
        return device, "the float32 cpu reference could not run this stage: the failure stands as the target's"
    if reference is None:
        return (
            device,
            f"the float32 cpu reference passes the {stage} stage with the same inputs: the failure is the target's",
        )
    if reference["status"] == "oom":
        return device, ("the float32 cpu reference ran out of host memory in this stage: the failure stands as the "
                        "target's")
    if reference["status"] == "error":  # a missing package, or a harness check of its own
        out = dict(reference)
    else:
        origin = LOAD_ORIGIN if stage == "load" else INPUTS_ORIGIN
        detail = reference["signature"].split(":", 1)[1] if ":" in reference["signature"] else reference["signature"]
        out = dict(reference, status="error", op=None, signature=f"{origin}:{detail}"[:SIGNATURE_LIMIT])
    out["message"] = truncate_bytes(
        f"not a verdict on the model: the float32 cpu reference fails the {stage} stage too, with the same "
        f"{'model' if stage == 'load' else 'inputs'} ({reference['message']}); on the target: {device['message']}",
        MESSAGE_LIMIT)
    return out, f"the float32 cpu reference fails the {stage} stage too: the scanner's error, not the model's"


def _first_line(chain: list[BaseException]) -> str:
    """The first line of the root cause: follow explicit causes (``raise X from Y``, as dynamo
    and friends do when they wrap an error), not the implicit context of an exception raised
    while handling another (there the outer one is the meaningful error)."""
    root = chain[0]
    seen = {id(root)}
    while root.__cause__ is not None and id(root.__cause__) not in seen and str(root.__cause__).strip():
        root = root.__cause__
        seen.add(id(root))
    msg = str(root).strip().splitlines()
    first = next((l for l in msg if l.strip()), "")
    return f"{type(root).__name__}: {first}"


def _pack(status: str, cls: str, op: str | None, sig: str, exc: BaseException) -> dict:
    return {
        "status": status,
        "failure_class": cls,
        "op": op,
        "signature": sig[:SIGNATURE_LIMIT],
        "message": short_message(exc),
        "log_tail": traceback_tail(exc),
    }


# --- message normalisation -------------------------------------------------

_RE_ADDR = re.compile(r"\bat 0x[0-9a-fA-F]+")
_RE_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_RE_LONGHEX = re.compile(r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{7,}\b")
_RE_SIZE = re.compile(r"torch\.Size\(\[[^\]]*\]\)")
_RE_BRACKET_SHAPE = re.compile(r"\[\s*-?\d+(?:\s*,\s*-?\d+)*\s*,?\s*\]")
_RE_PAREN_SHAPE = re.compile(r"\(\s*-?\d+(?:\s*,\s*-?\d+)+\s*,?\s*\)")
_RE_WINPATH = re.compile(r"\b[A-Za-z]:\\[^\s'\"]+")
_RE_PATH = re.compile(r"(?<![\w.])(?:~|\.{1,2})?(?:/[^\s'\"`,:;()\[\]]+)+/?")
_RE_QUOTED = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"|`([^`\n]*)`")
_RE_MODELCLS = re.compile(
    r"\b[A-Z][A-Za-z0-9]*?(?:For[A-Z][A-Za-z0-9]*|PreTrainedModel|Model|Config|Attention|DecoderLayer|EncoderLayer|"
    r"Layer|Block|MLP|Decoder|Encoder|Embeddings|RMSNorm|LayerNorm|RotaryEmbedding|Experts|MoE|SparseMoeBlock)\b"
)
_RE_NUM = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)*(?:[eE][-+]?\d+)?(?:[KMGT]i?B?|[kmgt]b|ms|s|B)?(?![\w])")
_RE_DIMS = re.compile(r"\b\d+(?:x\d+)+\b")
_RE_DOTTED_INDEX = re.compile(r"(?<=[A-Za-z_]\.)\d+(?=\.|\b)")
_RE_ID = re.compile(r"\b[\w.-]+/[\w.-]+\b")  # leftover hub ids like org/name
_RE_WS = re.compile(r"\s+")
_OP_LIKE = re.compile(r"^(?:aten|prim|prims|torch|c10d|_c10d_functional)::[\w.]+$")


def _quoted(m: re.Match) -> str:
    inner = next(g for g in m.groups() if g is not None)
    if _OP_LIKE.match(inner) or inner in _DTYPE_NAMES:
        return f"'{inner}'"
    return "<q>"


def normalize_message(message: str, limit: int = 120) -> str:
    """Reduce a message to a stable, model-independent key."""
    text = message.strip().splitlines()[0] if message.strip() else ""
    text = _RE_ADDR.sub("at <addr>", text)
    text = _RE_SIZE.sub("<shape>", text)
    text = _RE_QUOTED.sub(_quoted, text)
    text = _RE_WINPATH.sub("<path>", text)
    text = _RE_PATH.sub("<path>", text)
    text = _RE_ID.sub("<id>", text)
    text = _RE_HEX.sub("<hex>", text)
    text = _RE_LONGHEX.sub("<hex>", text)
    text = _RE_BRACKET_SHAPE.sub("<shape>", text)
    text = _RE_PAREN_SHAPE.sub("<shape>", text)
    text = _RE_MODELCLS.sub("<cls>", text)
    text = _RE_DIMS.sub("<shape>", text)
    text = _RE_DOTTED_INDEX.sub("<n>", text)
    text = _RE_NUM.sub("<n>", text)
    text = _RE_WS.sub(" ", text).strip(" .:")
    return text[:limit]
