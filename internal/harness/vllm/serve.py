"""The serving probe: vLLM-TorchTPU's offline LLM on one model, in the vLLM interpreter (--vllm-python).

usage: python serve.py ARGS_JSON OUT_JSON

ARGS_JSON names {"model": local snapshot dir, "tensor_parallel_size": N, "prompt_token_ids": [...],
"table": serving.json, "harness": the harness's folder (for harness_failures)}. The probe builds
vllm.LLM(model=..., max_model_len=table max_model_len, tensor_parallel_size=N), generates table max_tokens
tokens greedily from the prompt token ids, and writes OUT_JSON:

  {"stage": "env" | "load" | "generate", "ok": bool, "tokens": [...], "load_s", "ttft_s", "generate_s",
   "versions": {"vllm-torchtpu", "vllm", "torch", "torch-tpu", "libtpu", "python"}, "device": str | null,
   "failure": harness_failures.classify's dict | null}

It is written again as each stage begins, so that a probe killed in one (timeout, crash) leaves its stage.

The judgement (do the tokens agree with the reference's) is the caller's (internal/serving/measure), by the
same table. TTFT is the wall time of a generation of one token; generate_s that of the max_tokens ones.
"""

import json
import platform
import sys
import time
from importlib import metadata

_DISTS = ("vllm-torchtpu", "vllm", "torch", "torch-tpu", "libtpu")

# vLLM's words for an architecture its registry does not list (ModelRegistry._raise_for_unsupported).
_UNSUPPORTED_ARCH = "are not supported for now"


def versions():
    out = {"python": platform.python_version()}
    for d in _DISTS:
        try:
            out[d] = metadata.version(d)
        except metadata.PackageNotFoundError:
            out[d] = None
    return out


def device():
    try:
        from vllm.platforms import current_platform

        return str(getattr(current_platform, "device_name", None) or "") or None
    except Exception:  # noqa: BLE001 - a stand-in or an old vLLM: unknown
        return None


def failure(hf, exc, stage):
    text = f"{type(exc).__name__}: {exc}"
    if stage == "load" and _UNSUPPORTED_ARCH in text:
        return {"status": "fail", "failure_class": "load_error", "op": None,
                "signature": "load_error:vllm_unsupported_architecture", "message": hf.short_message(exc),
                "log_tail": hf.traceback_tail(exc)}
    return hf.classify(exc, stage)


def main(argv):
    args = json.load(open(argv[1]))
    table = json.load(open(args["table"]))
    sys.path.insert(0, args["harness"])
    import harness_failures as hf

    out = {"stage": "env", "ok": False, "tokens": [], "load_s": None, "ttft_s": None, "generate_s": None,
           "versions": versions(), "device": None, "failure": None}

    def write():
        with open(argv[2], "w") as f:
            json.dump(out, f)

    try:
        from vllm import LLM, SamplingParams

        out["stage"] = "load"
        write()  # the stage so far, should the probe be killed in it
        t0 = time.monotonic()
        llm = LLM(model=args["model"], max_model_len=table["max_model_len"],
                  tensor_parallel_size=args["tensor_parallel_size"])
        out["load_s"] = time.monotonic() - t0
        out["device"] = device()
        out["stage"] = "generate"
        write()
        prompt = {"prompt_token_ids": list(args["prompt_token_ids"])}
        t0 = time.monotonic()
        llm.generate([prompt], SamplingParams(temperature=0.0, max_tokens=1), use_tqdm=False)
        out["ttft_s"] = time.monotonic() - t0
        t0 = time.monotonic()
        res = llm.generate([prompt], SamplingParams(temperature=0.0, max_tokens=table["max_tokens"]), use_tqdm=False)
        out["generate_s"] = time.monotonic() - t0
        out["tokens"] = [int(t) for t in res[0].outputs[0].token_ids]
        out["ok"] = True
    except BaseException as e:  # noqa: BLE001 - every failure is reported, classified
        out["failure"] = failure(hf, e, out["stage"])
    write()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
