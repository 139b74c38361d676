"""The float32 CPU reference of a probe, and its runs of a stage that failed on the target.

Every verdict compares the target with the reference: the same model (the same weights: the
checkpoint in full mode, the same seeded random weights in arch mode) in float32 on the CPU, on the
same inputs. The numerics stage compares their outputs. When a stage fails on the target, the same
stage runs on the reference with the same inputs (Probe.judge), and harness_failures.arbitrate
decides whose failure it is: the reference passes, the failure is the target's (the verdict stands);
the reference fails too, nothing was learnt about the target, and the result is the scanner's error
(its inputs, its environment), never the model's verdict.

The reference is built once, lazily, and shared: arch mode adopts the float32 model the load stage
builds first (the device's model is a copy of it); full mode loads the checkpoint in float32 when the
numerics stage (or a failed stage) first asks. The numerics stage releases it before compile, to free
its memory; a later failure (compile, generate) builds it again, with the same weights (full: the same
checkpoint; arch: the same seed). It costs nothing when the target passes beyond what the numerics
stage always ran.

Per stage, the reference run (run_stage):

| stage    | on the reference                                                                           |
|----------|--------------------------------------------------------------------------------------------|
| load     | build the float32 model on the CPU                                                         |
| forward  | the forward inputs (the target's, else built with the reference model), one forward call   |
| compile  | torch.compile(backend="aot_eager", dynamic=False): two calls, the second compiles nothing  |
| generate | generate() from the same prompt with the same settings, eager (no compiled decode step)    |
"""

from __future__ import annotations

import gc

import harness_failures

# The compile backend of the reference's compile stage: dynamo and AOT autograd, no code generation, so
# that a failure of tracing (the model's code, the harness's inputs) shows and a backend's does not.
REFERENCE_COMPILE_BACKEND = "aot_eager"


class Reference:
    """The float32 CPU reference of one probe (see the module docstring)."""

    def __init__(self, ctx, forward_inputs, apply_generation_config, generator):
        """ctx: the probe's harness_context.Context; forward_inputs and apply_generation_config: the probe's (the
        same inputs and generation config as the target's); generator: the probe's generate stage (generate_prompt,
        generate_once)."""
        self.ctx = ctx
        self.forward_inputs = forward_inputs
        self.apply_generation_config = apply_generation_config
        self.generator = generator
        self._model = None
        self.builds = 0  # how many times the model was built (tests read it: the reference is shared)

    def adopt(self, model) -> None:
        """Use model (float32, on the CPU, in eval mode) as the reference: arch mode's load builds it first."""
        self._model = model

    def model(self):
        """The reference model, built on first use."""
        if self._model is None:
            self._model = self._build()
            self.builds += 1
        return self._model

    def _build(self):
        p = self.ctx
        torch = p.torch
        if p.mode == "full":
            model = p.cls.from_pretrained(p.args.model_dir, dtype=torch.float32, use_safetensors=True,
                                          trust_remote_code=False, local_files_only=True, **p.load_kwargs)
        else:
            torch.manual_seed(p.args.seed)  # the weights the load stage drew
            model = p.cls._from_config(p.arch_config, dtype=torch.float32)
            self.apply_generation_config(model)
        model.eval()
        return model

    def release(self) -> None:
        """Free the reference's memory (it is built again if asked for)."""
        self._model = None
        gc.collect()

    def inputs(self) -> dict:
        """The forward inputs on the CPU (float32): the target's when the forward stage built them, else the
        same inputs built with the reference model."""
        if self.ctx.inputs_cpu is not None:
            return self.ctx.inputs_cpu
        return self.forward_inputs(self.model(), None, []).tensors

    def outputs(self, inputs=None):
        """The reference model's output on inputs (default: the forward inputs)."""
        with self.ctx.torch.no_grad():
            return self.model()(**(self.inputs() if inputs is None else inputs))

    def run_stage(self, stage: str) -> tuple[BaseException | None, bool]:
        """Run stage on the reference: (its exception, None when it passed; whether it could run at all)."""
        run = {"load": self._load, "forward": self._forward, "compile": self._compile,
               "generate": self._generate}.get(stage)
        if run is None or self.ctx.torch is None:
            return None, False
        try:
            run()
        except Exception as e:  # noqa: BLE001 - whatever the reference raises is the answer
            return e, True
        return None, True

    def _load(self) -> None:
        self.model()

    def _forward(self) -> None:
        self.outputs()

    def _compile(self) -> None:
        import torch._dynamo  # noqa: F401
        from torch._dynamo.utils import counters

        torch._dynamo.reset()
        inputs = self.inputs()
        compiled = torch.compile(self.model(), backend=REFERENCE_COMPILE_BACKEND, dynamic=False)
        try:
            with torch.no_grad():
                compiled(**inputs)
                g1 = int(counters["stats"]["unique_graphs"])
                compiled(**inputs)
                g2 = int(counters["stats"]["unique_graphs"])
        finally:
            torch._dynamo.reset()
        if g2 > g1:
            raise harness_failures.RecompileDetected(
                f"second call with the same input shapes compiled {g2 - g1} new dynamo "
                f"graph(s) (backend={REFERENCE_COMPILE_BACKEND}, dynamic=False)",
                "second call with the same shapes recompiled",
            )

    def _generate(self) -> None:
        model = self.model()
        gin, _ = self.generator.generate_prompt([])
        with self.ctx.torch.no_grad():
            self.generator.generate_once(model, gin, [], compiled=False)
