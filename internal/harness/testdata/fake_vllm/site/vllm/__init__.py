"""A stand-in for vLLM's offline API, with the real one's shape, for the serving probe's tests.

vllm.LLM(model=DIR, max_model_len=..., tensor_parallel_size=...) and LLM.generate(prompts, sampling_params,
use_tqdm=...) -> [RequestOutput(prompt_token_ids, outputs=[CompletionOutput(token_ids, text, ...)])], prompts
being TokensPrompt dicts ({"prompt_token_ids": [...]}) or strings; SamplingParams(temperature=..., max_tokens=...).
What it does is read from DIR/fake_vllm.json, {"behaviour": ..., "tokens": [...]}:
  ok                 generates "tokens" (cut to max_tokens)
  other_tokens       generates "tokens" with the second one changed
  load_error         LLM() raises a RuntimeError, as a checkpoint vLLM cannot read
  unsupported_arch   LLM() raises vLLM's ValueError for an architecture its registry does not list
  oom                LLM() raises XLA's RESOURCE_EXHAUSTED, as an out-of-memory compile
  unsupported_op     generate() raises NotImplementedError for an aten op TorchTPU lacks
  hang               LLM() never returns
  die                LLM() kills its own process (SIGKILL), as a crash of the runtime
It also checks what the real one would refuse: a model that is not a folder, a max_model_len or a
tensor_parallel_size that is not a positive integer, max_tokens past max_model_len.
"""

import json
import os
import signal
import time

__version__ = "0.29.0"


class SamplingParams:
    def __init__(self, n=1, temperature=1.0, top_p=1.0, max_tokens=16, **kwargs):
        self.n, self.temperature, self.top_p, self.max_tokens = n, temperature, top_p, max_tokens


class CompletionOutput:
    def __init__(self, index, text, token_ids, finish_reason="length"):
        self.index, self.text, self.token_ids, self.finish_reason = index, text, token_ids, finish_reason


class RequestOutput:
    def __init__(self, request_id, prompt, prompt_token_ids, outputs, finished=True):
        self.request_id, self.prompt, self.prompt_token_ids = request_id, prompt, prompt_token_ids
        self.outputs, self.finished = outputs, finished


class LLM:
    def __init__(self, model, tokenizer=None, tensor_parallel_size=1, dtype="auto", max_model_len=None, **kwargs):
        if not os.path.isdir(model):
            raise OSError(f"{model} is not a local folder or a Hub id")
        for name, v in (("tensor_parallel_size", tensor_parallel_size), ("max_model_len", max_model_len)):
            if v is not None and (not isinstance(v, int) or v < 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        with open(os.path.join(model, "fake_vllm.json")) as f:
            self._spec = json.load(f)
        self._max_model_len = max_model_len or 2048
        b = self._spec["behaviour"]
        if b == "load_error":
            raise RuntimeError("Cannot load the checkpoint: model.safetensors is truncated")
        if b == "unsupported_arch":
            raise ValueError("Model architectures ['FakeForCausalLM'] are not supported for now. "
                             "Supported architectures: dict_keys(['LlamaForCausalLM'])")
        if b == "oom":
            raise RuntimeError("RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory "
                               "space hbm. Used 40.1G of 31.25G hbm.")
        if b == "hang":
            while True:
                time.sleep(1)
        if b == "die":
            os.kill(os.getpid(), signal.SIGKILL)

    def generate(self, prompts, sampling_params=None, use_tqdm=True, **kwargs):
        sp = sampling_params or SamplingParams()
        if isinstance(prompts, (str, dict)):
            prompts = [prompts]
        if self._spec["behaviour"] == "unsupported_op":
            raise NotImplementedError("The operator 'aten::_fft_r2c' is not currently implemented for the TPU device.")
        outs = []
        for i, p in enumerate(prompts):
            ids = p["prompt_token_ids"] if isinstance(p, dict) else [ord(c) for c in p]
            if len(ids) + sp.max_tokens > self._max_model_len:
                raise ValueError("prompt and max_tokens exceed max_model_len")
            toks = list(self._spec["tokens"])[: sp.max_tokens]
            if self._spec["behaviour"] == "other_tokens" and len(toks) > 1:
                toks[1] += 1
            outs.append(RequestOutput(str(i), None, ids, [CompletionOutput(0, "", toks)]))
        return outs
