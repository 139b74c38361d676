#!/usr/bin/env python3
"""Bare baseline for `make bench`: the work harness.py does on one model, without its machinery.

    python bench_bare.py --model-dir DIR [--target cpu|cuda|tpu] --mode {full,arch} [--task TAG]
                         [--seq-len 128] [--new-tokens 16] [--layers 2] [--seed 0] [--steps 5]
                         [--no-compile] [--no-generate] [--compile-backend NAME]

It loads the same model the same way (full: safetensors, bfloat16 on an accelerator and
float32 on cpu; arch: random weights with the layers cut), builds the same inputs
(harness_synthetic_inputs.build_inputs, so both run identical shapes), and runs the same calls: one
warm-up forward plus --steps timed ones, the float32 CPU reference forward, torch.compile
with two calls plus --steps, and a warm-up plus a measured greedy generate with a static
cache. No stages, no result file, no error classification, no memory-budget logic: an
exception simply ends the run. It prints one JSON line with its wall time (from
interpreter start to the end, like the harness's duration_s), so the probe's wall time
can be compared against it (target: harness <= 1.15x bare).
"""

import time

T0 = time.monotonic()

import argparse  # noqa: E402
import copy  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness_synthetic_inputs  # noqa: E402
import harness_tasks  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model-dir", required=True)
    p.add_argument("--target", default="cpu", choices=("cpu", "cuda", "tpu"))
    p.add_argument("--mode", required=True, choices=("full", "arch"))
    p.add_argument("--task", default="")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--no-generate", action="store_true")
    p.add_argument("--compile-backend", default="")
    # accepted and ignored so the harness's command line can be reused as is
    p.add_argument("--model-id", default="")
    p.add_argument("--revision", default="")
    p.add_argument("--result-file", default="")
    p.add_argument("--memory-budget-bytes", default=None)
    a = p.parse_args()

    import torch
    import transformers

    if a.target == "tpu":
        import torch_tpu  # noqa: F401
    dev = torch.device("cuda:0" if a.target == "cuda" else a.target)
    sync = (lambda: None) if a.target == "cpu" else torch.accelerator.synchronize
    dtype = torch.float32 if a.target == "cpu" else torch.bfloat16

    config = transformers.AutoConfig.from_pretrained(a.model_dir, trust_remote_code=False, local_files_only=True)
    task, family, _ = harness_tasks.resolve_family(a.task or None, config)
    cls = getattr(transformers, (config.architectures or ["AutoModel"])[0])
    mode = a.mode
    kw = dict(use_safetensors=True, trust_remote_code=False, local_files_only=True)

    t = time.perf_counter()
    if mode == "full":
        model = cls.from_pretrained(a.model_dir, dtype=dtype, **kw)
    else:
        harness_tasks.reduce_layers(config, a.layers)
        torch.manual_seed(a.seed)
        ref = cls._from_config(config, dtype=torch.float32).eval()
        model = copy.deepcopy(ref).to(dtype=dtype)
    model.eval().to(dev)
    sync()
    load_s = time.perf_counter() - t

    import inspect

    def to_dev(kw):
        return {k: (v.to(dev, dtype=dtype) if v.is_floating_point() else v.to(dev)) if hasattr(v, "to") else v
                for k, v in kw.items()}

    inputs, _ = harness_synthetic_inputs.build_inputs(
        torch,
        family,
        model.config,
        set(inspect.signature(model.forward).parameters),
        a.seq_len,
        a.new_tokens,
        a.seed,
        type(model).__name__,
        model=model,
        to_device=to_dev,
    )
    dinputs = to_dev(inputs)

    def timed(fn, n):
        times = []
        for _ in range(n):
            t = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - t)
        return statistics.median(times) * 1000

    with torch.no_grad():
        model(**dinputs)
        sync()
        forward_ms = timed(lambda: model(**dinputs), a.steps)
        if mode == "full":
            ref = cls.from_pretrained(a.model_dir, dtype=torch.float32, **kw).eval()
        ref(**inputs)
        del ref
        compiled_ms = None
        if not a.no_compile:
            backend = a.compile_backend or ("tpu" if a.target == "tpu" else "inductor")
            cm = torch.compile(model, backend=backend, dynamic=False)
            cm(**dinputs)
            sync()
            cm(**dinputs)
            sync()
            compiled_ms = timed(lambda: cm(**dinputs), a.steps)
        if not a.no_generate and family in harness_tasks.GENERATIVE_FAMILIES and model.can_generate():
            gin = {k: dinputs[k] for k in harness_synthetic_inputs.generate_inputs(family, inputs)}
            gkw = dict(max_new_tokens=a.new_tokens, min_new_tokens=a.new_tokens, do_sample=False,
                       cache_implementation="static")
            if a.no_compile:
                gkw["disable_compile"] = True
            model.generate(**gin, **gkw)
            sync()
            model.generate(**gin, **gkw)
            sync()
    print(json.dumps({"bare_wall_s": round(time.monotonic() - T0, 3), "mode": mode, "task": task,
                      "load_s": round(load_s, 4), "forward_ms": round(forward_ms, 3),
                      "compiled_step_ms": None if compiled_ms is None else round(compiled_ms, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
