"""The generate stage of a probe (harness.py): the families that generate (tasks.json) run greedy
--new-tokens, with cache_implementation="static" where the model supports it (else its own cache, noted).

One warm-up generate, then a measured one: ttft_ms (to the first generated token) and the decode tokens_per_s
after it. On tpu/cuda transformers compiles the decode step itself (not with --no-compile). A causal LM with its
own tokenizer (full mode) continues harness_real_inputs.PROMPT, and result.continuation holds the prompt and the
decoded text; otherwise the prompt is the forward inputs'. The float32 CPU reference runs generate_once with the
same settings when the target fails (harness_reference.py).

GenerateStage is a stage harness.Probe composes (harness_context.py).
"""

from __future__ import annotations

import time

import harness_context
import harness_failures
import harness_real_inputs
import harness_shard
import harness_synthetic_inputs
import harness_tasks


class TimingStreamer:
    """generate() streamer that timestamps the first generated token (t0 and t_end: the measured call's start
    and end, set by its caller)."""

    def __init__(self):
        self.puts = 0
        self.tokens = 0
        self.t_first = None
        self.t0 = self.t_end = 0.0

    def put(self, value):
        self.puts += 1
        if self.puts == 1:  # the prompt (decoder prompt for encoder-decoders)
            return
        if self.t_first is None:
            self.t_first = time.perf_counter()
        self.tokens += int(value.numel()) if hasattr(value, "numel") else 1

    def end(self):
        pass


class GenerateStage(harness_context.Stage):
    """The generate stage (see the module docstring), composed by harness.Probe."""

    def __init__(self, ctx, stage, skip_stage, forward_kwargs):
        super().__init__(ctx, stage, skip_stage)
        self.forward_kwargs = forward_kwargs  # CPU inputs onto the device in its dtype (harness.Probe)

    def stage_generate(self) -> None:
        why = self.why_no_generate()
        if why:
            self.skip_stage("generate", why)
            return
        with self.stage("generate") as notes:
            gin, prompt_len = self.generate_prompt(notes)
            out, streamer, static = self.measured_generate(self.forward_kwargs(gin), notes)
            if prompt_len:
                seqs = out if hasattr(out, "shape") else getattr(out, "sequences", None)
                if seqs is not None:
                    self.continuation = harness_real_inputs.continuation(self.real.tokenizer, seqs.cpu(), prompt_len)
            self.record_decode_speed(streamer)
            notes.append(f"{streamer.tokens} new tokens, cache={'static' if static else 'default'}")
            if streamer.tokens < self.args.new_tokens:
                notes.append(f"generated {streamer.tokens} < {self.args.new_tokens} tokens")

    def why_no_generate(self) -> str:
        """Why the generate stage is skipped ("" when it runs)."""
        if self.args.no_generate:
            return "--no-generate"
        if self.family not in harness_tasks.GENERATIVE_FAMILIES:
            return f"not generative ({self.family})"
        if not self.model.can_generate():
            return f"{type(self.model).__name__} cannot generate"
        return ""

    def measured_generate(self, gin: dict, notes: list) -> tuple:
        """A warm-up generate (generate_once), then the measured one with the same settings. Returns (its output,
        the TimingStreamer that timed it, whether the cache was static)."""
        model, dev = self.model, self.dev
        with self.torch.no_grad():
            t = time.perf_counter()
            kw, static = self.generate_once(model, gin, notes, compiled=not self.args.no_compile)
            dev.sync()
            notes.append(f"warm-up generate {time.perf_counter() - t:.3f}s")
            streamer = TimingStreamer()
            dev.sync()
            streamer.t0 = time.perf_counter()
            out = model.generate(**gin, **kw, streamer=streamer)
            dev.sync()
            streamer.t_end = time.perf_counter()
            # the ops for the TorchTPU prediction (harness_ops.py): two more tokens, eager, untimed
            self.ops.call("generate", lambda: model.generate(**gin, **dict(kw, max_new_tokens=2, min_new_tokens=2,
                                                                           disable_compile=True)))
        return out, streamer, static

    def record_decode_speed(self, streamer: TimingStreamer) -> None:
        """metrics.ttft_ms and the decode tokens_per_s (after the first token); a sharded probe's are its slowest
        rank's."""
        if streamer.t_first is not None:
            self.metrics.ttft_ms = round((streamer.t_first - streamer.t0) * 1000, 4)
            if streamer.tokens >= 2 and streamer.t_end > streamer.t_first:
                self.metrics.tokens_per_s = round((streamer.tokens - 1) / (streamer.t_end - streamer.t_first), 4)
        if self.world > 1:  # the group's: its slowest rank's
            ttft = harness_shard.gather(self.metrics.ttft_ms, self.world)
            tps = [v for v in harness_shard.gather(self.metrics.tokens_per_s, self.world) if v is not None]
            self.metrics.ttft_ms = harness_shard.largest(ttft)
            self.metrics.tokens_per_s = min(tps) if len(tps) == self.world else None

    def generate_once(self, model, gin: dict, notes: list, compiled: bool) -> tuple[dict, bool]:
        """One greedy generate() of --new-tokens from gin (inputs on model's device): static cache where the model
        supports it (falling back to its own cache when the static one fails with an unclassified error: the static
        cache is the harness's choice); compiled=False keeps transformers from compiling the decode step. Returns the
        settings that ran (for the measured call) and whether the cache was static. The reference runs the same."""
        n = self.args.new_tokens
        kw = dict(max_new_tokens=n, min_new_tokens=n, do_sample=False, num_beams=1)
        gc_ = getattr(model, "generation_config", None)
        if gc_ is not None and getattr(gc_, "pad_token_id", None) is None:
            eos = getattr(gc_, "eos_token_id", None)
            kw["pad_token_id"] = (eos[0] if isinstance(eos, (list, tuple)) and eos else eos) if eos is not None else 0
        static = False
        try:
            static = bool(model._supports_default_dynamic_cache())
        except Exception:  # noqa: BLE001
            static = False
        if static:
            kw["cache_implementation"] = "static"
        else:
            notes.append("static cache not supported by this model: its own cache was used")
        if not compiled:
            kw["disable_compile"] = True
        elif static and self.target != "cpu":
            notes.append(f"decode step compiled by transformers (static cache on {self.target})")
        try:
            model.generate(**gin, **kw)
        except Exception as e:  # noqa: BLE001
            c = harness_failures.classify(e, "generate")
            if not (static and c["failure_class"] == "other"):
                raise
            notes.append(
                f"static cache failed ({harness_failures.short_message(e, 160)}): fell back to the default cache"
            )
            kw.pop("cache_implementation", None)
            static = False
            model.generate(**gin, **kw)
        return kw, static

    def generate_prompt(self, notes) -> tuple[dict, int | None]:
        """generate()'s inputs (on the CPU), and the prompt's length when its continuation is reported: a causal LM
        with its own tokenizer (full mode) continues harness_real_inputs.PROMPT; otherwise the prompt is the forward
        inputs' (harness_synthetic_inputs.generate_inputs)."""
        tok = self.real.tokenizer if self.real is not None else None
        if tok is not None and self.family == "causal-lm":
            ids = harness_real_inputs.prompt_ids(self.torch, tok, self.model.config)
            if ids is not None:
                notes.append(f"prompt {harness_real_inputs.PROMPT!r} ({ids.shape[1]} tokens, the model's tokenizer)")
                return {"input_ids": ids}, int(ids.shape[1])
            notes.append("the fixed prompt cannot be encoded: the forward inputs are the prompt")
        return harness_synthetic_inputs.generate_inputs(self.family, self.inputs_cpu), None
