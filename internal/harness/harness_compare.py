"""The numerics stage of a probe (harness.py): the target's outputs against the float32 CPU reference's
(harness_reference.py) on the same inputs.

Every output the family compares (tasks.json) gets the checks of its kind against the tolerance row that
holds the device's output (numerics.json, applied by harness_numerics.py); a causal LM's perplexity is
bounded too: on the passage (full mode, harness_real_inputs.passage_check) or, on synthetic inputs, at most
PPL_FACTOR x the vocabulary on the repeated chunk. A reference that fails where the target passed, or whose
output is not finite, or that misses a perplexity bound too, is the scanner's error, never the model's.
On tpu the matrix also compares at the other float32 matmul precision (harness_modes.precision_verdict).

A sharded probe compares on rank 0 alone (it builds the unsharded reference); the other ranks wait for its
word through the rendezvous store (harness_shard.py). NumericsStage is a stage harness.Probe composes
(harness_context.py); it calls the probe's tolerance_row and the matrix's precision_verdict.
"""

from __future__ import annotations

import math

import harness_context
import harness_failures
import harness_host
import harness_numerics
import harness_real_inputs
import harness_shard
from harness_modes import finite_or_none

PPL_FACTOR = 10.0  # causal LMs: perplexity <= 10 * vocab_size (a uniform guess scores vocab_size)
# How long the ranks of a sharded probe wait for rank 0's numerics (it alone builds the reference); the
# probe's own wall-clock limit ends it sooner.
NUMERICS_WAIT_S = 24 * 3600


class NumericsStage(harness_context.Stage):
    """The numerics stage (see the module docstring), composed by harness.Probe."""

    def __init__(self, ctx, stage, skip_stage, tolerance_row, precision_verdict):
        super().__init__(ctx, stage, skip_stage)
        self.tolerance_row = tolerance_row  # the TOLERANCES row that holds the device's output (harness.Probe)
        self.precision_verdict = precision_verdict  # tpu: the verdict at both precisions (harness_modes.Modes)

    def compare(self, ref, dev, dtype_name: str) -> dict:
        """The checks of the primary output's kind (harness_numerics) on dev vs ref, against the
        tolerance row that holds this device's output (precision_rule)."""
        return harness_numerics.compare(
            self.torch,
            ref,
            dev,
            self.tolerance_row(dtype_name),
            "logits" if self.is_scores else next(iter(self.out_kinds.values()), "embeddings"),
        )

    def compare_outputs(self, refs: dict, dev_primary, dtype_name: str, what: str) -> dict:
        """Every compared output of the family against refs (name -> reference tensor, primary first);
        dev_primary stands for the device's primary output, self.dev_extra for the others."""
        devs = dict(self.dev_extra or {})
        devs[next(iter(refs))] = dev_primary
        return harness_numerics.compare_all(
            self.torch, refs, devs, self.out_kinds, self.tolerance_row(dtype_name), what
        )

    @staticmethod
    def verdict(cmp: dict, what: str) -> tuple[bool, str, str]:
        return harness_numerics.verdict(cmp, what)

    @staticmethod
    def top1_note(cmp: dict) -> str:
        if cmp.get("top1") is None:
            return ""
        dec = cmp.get("top1_decisive")
        return f"top-1 {cmp['top1']:.3f} over {cmp['positions']} positions, " + (
            f"{dec:.3f} over the {cmp['decisive']} decisive ones" if dec is not None else "no decisive positions"
        )

    def perplexity(self, logits) -> float | None:
        torch = self.torch
        start = self.input_info.get("copy_from")
        ids = self.inputs_cpu["input_ids"]
        if logits.dim() != 3 or start is None or ids.shape[1] < 2:
            return None
        # predict token t from position t-1, over the repeated part of the input
        lp = torch.log_softmax(logits[0, start - 1:-1].float(), dim=-1)
        tgt = ids[0, start:]
        nll = -lp.gather(-1, tgt.unsqueeze(-1)).squeeze(-1).mean()
        return float(torch.exp(nll))

    def stage_numerics(self) -> None:
        if self.world > 1:
            return self.sharded_numerics()
        self.numerics()

    def sharded_numerics(self) -> None:
        """Rank 0 compares its gathered output with the unsharded reference, alone; the other ranks wait for
        its word through the rendezvous store (no collective: the reference may take long). A reference the
        host cannot hold is skipped, said so, and nothing is compared."""
        if self.rank != 0:
            if harness_shard.await_rank0("numerics", NUMERICS_WAIT_S) != "ok":
                raise harness_shard.RankStop("rank 0 failed numerics")
            return
        word = "fail"
        try:
            need = self.reference_need()
            _, avail = harness_host.host_memory()
            if need is not None and avail is not None and need > avail:
                self.skip_stage("numerics", f"the float32 reference needs ~{need / 2**30:.1f} GiB, over the host's "
                                            f"{avail / 2**30:.1f} GiB available: not compared")
            else:
                self.numerics()
            word = "ok"
        finally:
            harness_shard.publish("numerics", word)

    def reference_fits(self) -> bool:
        """Whether every rank of a sharded probe can build the float32 reference in host memory at once (a failed
        stage arbitrated on each rank): False when its size is not known."""
        need = self.reference_need()
        _, avail = harness_host.host_memory()
        return need is not None and avail is not None and need * self.world <= avail

    def reference_need(self) -> int | None:
        """Host bytes of the float32 reference of a full-mode model (fit.json's factor and slack, one copy);
        None in arch mode, where rank 0 holds the reduced reference already."""
        if self.mode != "full" or not self.metrics.param_count:
            return None
        return (
            int(self.metrics.param_count * 4 * harness_host.FIT["fit_factor"]) + harness_host.FIT["fit_slack_bytes"]
        )

    def numerics(self) -> None:
        with self.stage("numerics") as notes:
            dtype_name = str(self.dtype).replace("torch.", "")
            refs = self.finite_reference_outputs()
            cmps = self.compare_outputs(refs, self.dev_out, dtype_name, "device vs reference")
            cmp = cmps["primary"]
            self.record_comparison(cmps, dtype_name, notes)
            ok, why, key = cmps["ok"], cmps["why"], cmps["key"]
            if self.family == "causal-lm" and self.is_scores and cmp["finite"]:
                ref_out = next(iter(refs.values()))
                if self.input_info.get("passage"):
                    ok, why, key = self.passage_verdict(ref_out, dtype_name, ok, why, key, notes)
                else:
                    ok, why, key = self.repeated_chunk_verdict(ref_out, ok, why, key, notes)
            ok, why, key = self.precision_verdict(refs, dtype_name, ok, why, key, notes)  # tpu: both precisions
            if not ok:
                raise harness_failures.NumericsMismatch(why, key)

    def finite_reference_outputs(self) -> dict:
        """The reference's outputs (reference_outputs), kept for the matrix's stage (stage_modes trains the
        reference, then releases it); a non-finite one leaves nothing to compare with: the harness's inputs make
        even the reference non-finite, the scanner's error."""
        refs = self.reference_outputs()
        self.ref_outputs = refs
        torch = self.torch
        # an infinity is the model's own mask (harness_numerics.compare reads around it); a nan, or nothing finite
        # at all, leaves nothing to compare
        bad = [
            n
            for n, v in refs.items()
            if bool(torch.isnan(v).any()) or (v.numel() and not bool(torch.isfinite(v).any()))
        ]
        if bad:
            raise harness_failures.SharedFailure(
                harness_failures.INPUTS_ORIGIN,
                f"the float32 cpu reference's {', '.join(bad)} is not finite "
                "(nan, or no finite value) on the harness's inputs: nothing to compare the target "
                "with",
                "non-finite reference output",
            )
        return refs

    def record_comparison(self, cmps: dict, dtype_name: str, notes: list) -> None:
        """The comparison's metrics (the primary output's, the largest rel_error, the smallest cosine) and notes."""
        cmp = cmps["primary"]
        self.metrics.max_abs_diff = finite_or_none(cmp["max_abs_diff"])
        self.metrics.top1_agreement = finite_or_none(cmp["top1"])
        self.metrics.tolerance = finite_or_none(cmp["tolerance"])
        self.metrics.rel_error = finite_or_none(cmps["rel_error"])
        self.metrics.cosine_similarity = finite_or_none(cmps["cosine"])
        notes.append(f"{dtype_name} vs float32 cpu reference")
        if self.top1_note(cmp):
            notes.append(self.top1_note(cmp))
        notes.extend(cmps["notes"])

    def passage_verdict(self, ref_out, dtype_name: str, ok: bool, why: str, key: str, notes: list):
        """A causal LM on the passage (full mode): its perplexity below the bound and close to the reference's
        (harness_real_inputs.passage_check); a bound the reference misses too is the passage's, the scanner's error."""
        chk = harness_real_inputs.passage_check(
            self.torch, self.dev_out, ref_out, self.inputs_cpu["input_ids"], dtype_name
        )
        self.metrics.perplexity = finite_or_none(chk.ppl)
        notes.append(chk.note)
        # the passage is the harness's choice
        if ok and not chk.ok and chk.key == harness_real_inputs.REFERENCE_TOO_KEY:
            raise harness_failures.SharedFailure(harness_failures.INPUTS_ORIGIN, chk.why, chk.key)
        if ok and not chk.ok:
            return False, chk.why, chk.key
        return ok, why, key

    def repeated_chunk_verdict(self, ref_out, ok: bool, why: str, key: str, notes: list):
        """A causal LM on the synthetic inputs: a finite perplexity of at most PPL_FACTOR x the vocabulary on the
        repeated chunk; a reference over the bound too makes it the scanner's error."""
        dev_out = self.dev_out
        ppl = self.perplexity(dev_out)
        self.metrics.perplexity = finite_or_none(ppl)
        if ppl is None:
            return ok, why, key
        bound = dev_out.shape[-1] * PPL_FACTOR
        ref_ppl = self.perplexity(ref_out) if ref_out.shape == dev_out.shape else None
        notes.append(f"perplexity {ppl:.4g}" + (f" (reference {ref_ppl:.4g})" if ref_ppl is not None else "")
                     + f", bound {bound:.4g}")
        if not ok or (math.isfinite(ppl) and ppl <= bound):
            return ok, why, key
        if ref_ppl is not None and not (math.isfinite(ref_ppl) and ref_ppl <= bound):
            raise harness_failures.SharedFailure(
                harness_failures.INPUTS_ORIGIN,
                f"perplexity {ppl:.4g} is not finite or above "
                f"{bound:.4g}, and the float32 cpu reference's ({ref_ppl:.4g}) too",
                "perplexity of the reference too",
            )
        return False, f"perplexity {ppl:.4g} is not finite or above {bound:.4g}", "perplexity"

    def reference_outputs(self) -> dict:
        """name -> float32 CPU tensor of the outputs the family compares, from the reference on the forward inputs.
        A reference that fails here (the target passed) leaves nothing to compare with: the scanner's error."""
        try:
            with self.ops.trace("forward"):  # the ops for the TorchTPU prediction (harness_ops.py), at no extra call
                out = self.reference.outputs(self.inputs_cpu)
            return {n: v.detach().float() for n, _, v in harness_numerics.select(out, self.family)}
        except Exception as e:  # noqa: BLE001
            self.reference.release()
            c = harness_failures.classify(e, "numerics")
            raise harness_failures.ReferenceFailed(
                f"the float32 cpu reference failed where the target passed: {c['message']}",
                c["signature"],
                c["failure_class"],
            ) from e
