"""vLLM said to take too much GPU memory, with no failure: the reservation, not a leak.

"Why 0.5B model requires 21G gpu ram ?" (vllm#4253), "GPU consumption" (vllm#550), "the gguf
model is only 800M, but why does the GPU memory usage exceed 20G?" (vllm#7979), "Is there an
option to reduce GPU memory usage？" (vllm#7495): every maintainer answers the same. vLLM
reserves total x gpu_memory_utilization up front (worker.py determine_num_available_blocks in
V0, gpu_worker.py determine_available_memory in V1: the KV cache takes whatever the weights
and the profile leave of that share), so a small model still fills 90 % of the GPU. Step 4:
lower gpu_memory_utilization, to what the weights, the profile and one request of
max_model_len need when the model and the GPU are known. When the share is already small
(0.5 or less), what remains is the KV cache one request needs and the CUDA graphs: a shorter
max_model_len and eager mode (vllm#3345, where 0.15 of the GPU was too little).

Never on a failure (an OOM or a KV shortage said in the words, any error line in the log:
those rules answer it) and never a raise.
"""

from __future__ import annotations

import math

from headroom.doctor import actions as A
from headroom.doctor.findings import Action, Finding, compact_actions
from headroom.doctor.model_bytes import GIB
from headroom.doctor.rules_defaults import max_len_of
from headroom.probes.symptom_facts import WordFacts

_ALREADY_LOW = 0.5  # at or below this share the reservation is no longer what fills the GPU
_MARGIN = 0.05  # room above the estimate: the profile's numbers are estimates


def _needed_share(ctx) -> float | None:
    """The least share of the GPU that holds the weights, the profile's peak, the overhead
    and one request of max_model_len, by the memory model; None when it cannot say."""
    acc = ctx.account
    if acc is None or acc.gpu_usable_gib <= 0:
        return None
    kv = acc.kv_bytes_per_token * acc.max_model_len / GIB
    graphs = acc.cudagraph_gib if acc.cudagraph_in_budget else 0.0
    need = acc.weights_gib + acc.activation_gib + acc.overhead_gib + graphs + kv
    return math.ceil((need / acc.gpu_usable_gib + _MARGIN) * 100) / 100


def memory_taken(ctx) -> list[Finding]:
    """The words say vLLM takes too much GPU memory and nothing failed (module doc)."""
    words: WordFacts | None = getattr(ctx, "words", None)
    if words is None or not words.memory_taken:
        return []
    if any(e.fields.get("from_words") for e in ctx.of("cuda_oom", "no_cache_memory")):
        return []  # a failure: the OOM and KV rules answer it
    util = ctx.knobs.gpu_memory_utilization or words.utilization or ctx.utilization
    evidence = [
        words.text[:400],
        f"vLLM reserves gpu_memory_utilization ({util:g}) of each GPU at start-up for the "
        "weights and the KV cache, whatever the model's size",
    ]
    acts: list[Action | None] = []
    share = _needed_share(ctx)
    if util > _ALREADY_LOW and (share is None or share < util - 0.01):
        if share is not None:
            evidence.append(
                f"estimate: the weights, the profile and one request of "
                f"{ctx.account.max_model_len:,} tokens need about {share:g} of the GPU"
            )
            acts.append(A.lower_utilization(ctx, max(share, 0.1), "a smaller reservation"))
        else:
            acts.append(
                Action(
                    "gpu_memory_utilization",
                    "lower",
                    None,
                    f"the reservation is {util:g} of the GPU: set the share vLLM may take",
                    "a smaller KV cache: fewer tokens in flight, more preemption under load",
                )
            )
    else:
        # the share is small already (or the model needs it): what it holds is one request's
        # KV cache and the CUDA graphs
        length = max_len_of(ctx)
        why = "the KV cache must hold one request of max_model_len inside the reservation"
        if length:
            acts.append(A.lower_max_model_len(int(length) // 2, why))
        else:
            acts.append(Action("max_model_len", "lower", None, why,
                               "requests longer than this are rejected"))  # fmt: skip
        if not ctx.knobs.enforce_eager:
            acts.append(A.enforce_eager("no CUDA-graph pools beside the reservation"))
    kept = compact_actions(acts)
    if not kept:
        return []
    return [
        Finding(
            "words-memory-taken",
            4,
            "warning",
            "vLLM takes the GPU memory gpu_memory_utilization reserves, not what the model needs",
            tuple(evidence),
            kept,
        )
    ]


RULES = (memory_taken,)
