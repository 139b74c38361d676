#!/usr/bin/env python3
"""The kernel table of a runtime: which aten operators the installed torch_tpu implements.

Run as its own process, never imported by the harness: importing torch_tpu binds its compiled glue to the
process (harness_tpu's docstring), and the harness never imports it on a host without a chip. The Go runner
(internal/probe/kernels.go) starts this file once per runtime (torch and torch_tpu versions) with
TORCH_DEVICE_BACKEND_AUTOLOAD=0 and TPU_SKIP_MDS_QUERY=1; torch_tpu 0.2.0 imports without a chip (libtpu
logs that it found no device) and registers its kernels under the PrivateUse1 dispatch key all the same.

Every operator of torch._C._dispatch_get_all_op_names() is one of (tpu_ops.json "kinds"):

* native:   torch_tpu registers a PrivateUse1 kernel for it
            (torch._C._dispatch_has_kernel_for_dispatch_key(op, "PrivateUse1")), or it is a structured
            functional op whose PrivateUse1 entry is torch's generated wrapper of its out= overload
            (RegisterCompositeExplicitAutogradNonFunctional) and that out= overload is native: the TPU's
            own kernel does the work (aten::addmm runs aten::addmm.out's TPU kernel);
* default:  the PrivateUse1 entry is one of torch's own kernels ("[default backend kernel]", composite
            explicit; "[math kernel]", composite implicit): it decomposes into other ops on the TPU
            (aten::index.Tensor);
* fallback: the PrivateUse1 entry is torch_tpu's backend fallback, whose text is "Operator '…' is not
            implemented for TPU. Please file a feature request" (a CPU-fallback mode exists in the library,
            off unless switched on): the op is missing.

A registration says nothing of dtypes: the table is about operators, and so is every prediction made from it.

Output (one JSON object, to stdout, or written atomically to --out FILE):
{"torch", "torch_tpu", "ops": {name: kind}, "counts": {kind: n}}. Exit 0 when the table was read; 1 with a
one-line reason on stderr otherwise (torch_tpu missing or failing to import); 2 for bad arguments.

``--versions`` answers only {"torch", "torch_tpu"}, the key the table would be kept under, from the packages'
files alone (torch/version.py's ``__version__``, which is torch.__version__, and torch_tpu's metadata): no
import, a fraction of a second instead of the table's ~20 s. The scanner asks it first, and reads the table
only when its database keeps none of those versions (internal/probe/kernels.go).
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import sys

# The dump_table line of the PrivateUse1 key, and the words that end it.
_KEY_LINE = "PrivateUse1:"
_FALLBACK = "[backend fallback]"
_NON_FUNCTIONAL = "RegisterCompositeExplicitAutogradNonFunctional"


def out_overloads(name: str) -> list[str]:
    """The names an op's out= overload may have: aten::add.Tensor -> aten::add.out, aten::addmm.dtype ->
    aten::addmm.dtype_out, aten::addmm -> aten::addmm.out."""
    base, _, overload = name.partition(".")
    cands = [base + ".out"]
    if overload:
        cands.insert(0, f"{base}.{overload}_out")
    return cands


def classify(name: str, has_kernel, dump_table) -> str:
    """native, default or fallback for the operator name (the module docstring), from the dispatcher's
    answers: has_kernel(op) for PrivateUse1, dump_table(op) its registrations as text."""
    if has_kernel(name):
        return "native"
    line = next((l for l in dump_table(name).splitlines() if l.startswith(_KEY_LINE)), "")
    if not line or line.rstrip().endswith(_FALLBACK):
        return "fallback"
    if _NON_FUNCTIONAL in line and any(has_kernel(o) for o in out_overloads(name)):
        return "native"
    return "default"


def read_table(torch) -> dict:
    c = torch._C
    names = set(c._dispatch_get_all_op_names())

    def has_kernel(op: str) -> bool:
        return op in names and c._dispatch_has_kernel_for_dispatch_key(op, "PrivateUse1")

    ops = {name: classify(name, has_kernel, c._dispatch_dump_table) for name in sorted(names)}
    counts = {k: sum(1 for v in ops.values() if v == k) for k in ("native", "default", "fallback")}
    return {"ops": ops, "counts": counts}


def version(*names: str) -> str:
    for n in names:
        try:
            return md.version(n)
        except md.PackageNotFoundError:
            continue
    return ""


def torch_version_unimported() -> str:
    """torch.__version__ as torch/version.py writes it, read without importing torch ("" when not found)."""
    import ast
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")  # a top-level package: found, not imported
    except (ImportError, ValueError):
        return ""
    for d in (spec.submodule_search_locations or []) if spec else []:
        try:
            with open(os.path.join(d, "version.py"), encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
        except (OSError, SyntaxError):
            continue
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "__version__" for t in targets) and \
                        isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    return node.value.value
    return ""


def versions() -> dict | None:
    """{"torch", "torch_tpu"} of the installed packages, read from their files; None when either is missing."""
    torch_v, tpu_v = torch_version_unimported(), version("torch_tpu", "torch-tpu")
    if not torch_v or not tpu_v:
        return None
    return {"torch": torch_v, "torch_tpu": tpu_v}


def write(text: str, out: str | None) -> None:
    """text to stdout, or atomically to the file out."""
    if out is None:
        sys.stdout.write(text)
        return
    tmp = f"{out}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, out)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    only_versions = argv[:1] == ["--versions"]
    if only_versions:
        argv = argv[1:]
    out = None
    if argv[:1] == ["--out"] and len(argv) == 2:
        out = argv[1]
    elif argv:
        print("usage: harness_kernels.py [--versions] [--out FILE]", file=sys.stderr)
        return 2
    if only_versions:
        v = versions()
        if v is None:
            print("kernels: torch or torch_tpu is not installed (or has no version)", file=sys.stderr)
            return 1
        write(json.dumps(v, sort_keys=True) + "\n", out)
        return 0
    os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    try:
        import torch
        import torch_tpu  # noqa: F401 - registers the PrivateUse1 kernels
    except Exception as e:  # noqa: BLE001 - the reason is the answer
        print(f"kernels: cannot import torch_tpu: {type(e).__name__}: {str(e)[:300]}", file=sys.stderr)
        return 1
    tpu_version = version("torch_tpu", "torch-tpu")
    if not tpu_version:
        print("kernels: torch_tpu has no version metadata", file=sys.stderr)
        return 1
    table = read_table(torch)
    table.update(torch=torch.__version__, torch_tpu=tpu_version)
    write(json.dumps(table, separators=(",", ":"), sort_keys=True) + "\n", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
