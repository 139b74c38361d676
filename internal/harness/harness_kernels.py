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


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = None
    if argv[:1] == ["--out"] and len(argv) == 2:
        out = argv[1]
    elif argv:
        print("usage: harness_kernels.py [--out FILE]", file=sys.stderr)
        return 2
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
    text = json.dumps(table, separators=(",", ":"), sort_keys=True) + "\n"
    if out is None:
        sys.stdout.write(text)
        return 0
    tmp = f"{out}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
