"""Hugging Face's layer placement named for vLLM (step 1): device_map / max_memory do not
exist in vLLM, which splits a model over GPUs with tensor_parallel_size, or
pipeline_parallel_size where the GPU count does not divide the heads (probes.symptom_placement
names the threads: vllm#196, #1752, #6601, ms-swift#3363).

Only while the TP in force is 1 or not known (a TP above 1 already splits the model), never
beside a failure the log records (its own rules answer it). With the GPU count and the model
known, TP is the largest count of those GPUs that divides the heads and PP takes the rest
(vllm#6601: three 4090s, PP 3); else TP is raised without a value.
"""

from __future__ import annotations

from headroom.doctor import actions as A
from headroom.doctor.findings import Action, Finding, compact_actions

_WHY = "vLLM has no device_map or max_memory: it splits a model over GPUs with TP (or PP)"
_COST = "an all-reduce on every layer: fast over NVLink, slow over PCIe"


def placement_named(ctx) -> list[Finding]:
    words = getattr(ctx, "words", None)
    if words is None or not words.placement_named:
        return []
    if ctx.known("tensor_parallel_size") and ctx.knobs.tp > 1:
        return []
    evidence = [words.text[:400], "no vLLM release has a device_map or max_memory engine arg "
                "(arg_utils.py); Hugging Face Accelerate's placement does not reach vLLM"]  # fmt: skip
    gpus = ctx.gpu_count or words.gpus_at_hand
    acts: list[Action | None] = []
    if gpus and gpus > 1 and ctx.model is not None:
        tp = max(t for t in A.valid_tps(ctx.model, gpus) if gpus % t == 0)
        if tp > 1:
            acts.append(Action("tensor_parallel_size", "raise", tp, f"{_WHY}: TP {tp} over "
                               f"{tp} of the {gpus} GPUs", _COST, step=1))  # fmt: skip
        if gpus // tp > 1:
            acts.append(A.raise_pp(ctx, gpus // tp, f"{_WHY}: PP {gpus // tp} takes the GPUs "
                                   "whose count does not divide the heads"))  # fmt: skip
    if not [a for a in acts if a is not None]:
        acts = [Action("tensor_parallel_size", "raise", gpus if gpus and gpus > 1 else None,
                       f"{_WHY}: TP over the GPUs at hand", _COST, step=1)]  # fmt: skip
    return [Finding("words-hf-placement", 1, "warning",
                    "device_map / max_memory are Hugging Face's: vLLM splits with TP",
                    tuple(evidence), compact_actions(acts))]  # fmt: skip


RULES = (placement_named,)
