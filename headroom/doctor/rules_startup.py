"""Start-up rules about KV memory: a vLLM log's failure events, read with their numbers,
become findings (OOMs are in rules_oom.py, TP/PP configuration errors in rules_parallel.py).

Directions (the brief's mitigation order, never the other way round):
- "max seq len ... larger than ... KV cache": KV budget up, or max_model_len down to vLLM's
  own estimate; fewer sequences cannot fix it.
- "No available memory for the cache blocks": weights + activations fill the budget: budget
  up if there is room, else the lowest TP that fits.
- CUDA OOM: another process's memory, CUDA-graph capture or the activation peak want a LOWER
  utilization, --enforce-eager or fewer batched tokens; OOM while loading weights wants TP.
- Free memory below the utilization at start-up: memory held by others is a gate: lower the
  utilization to what is free, or free the GPU.
"""

from __future__ import annotations

from headroom.doctor import actions as A
from headroom.doctor import log_events as LE
from headroom.doctor.findings import Action, Finding
from headroom.doctor.memory_model import GIB, kv_bytes_per_token


def _compact(actions) -> tuple[Action, ...]:
    return tuple(a for a in actions if a is not None)


def max_seq_len_exceeds_kv(ctx) -> list[Finding]:
    out = []
    for event in ctx.of("max_seq_len_exceeds_kv")[:1]:
        nums = LE.max_seq_len_numbers(event.line)
        max_len = int(nums.get("max_model_len") or ctx.knobs.max_model_len or 0)
        estimate = nums.get("estimated_max_len") or nums.get("kv_tokens")
        evidence = [event.line.strip()]
        extra = None
        if nums.get("needed_gib", 0) > nums.get("available_gib", 0) and "available_gib" in nums:
            extra = nums["needed_gib"] - nums["available_gib"]
            evidence.append(
                f"short by {nums['needed_gib']:.2f} - {nums['available_gib']:.2f} = {extra:.2f} GiB of KV cache"
            )
        elif "kv_tokens" in nums and max_len:
            extra = A.extra_gib_for_tokens(ctx, max_len, int(nums["kv_tokens"]))
            evidence.append(
                f"{max_len:,} tokens needed for one request, {int(nums['kv_tokens']):,} fit"
            )
            if extra is not None:
                evidence.append(f"short by about {extra:.2f} GiB of KV cache per GPU")
        if ctx.knobs.kv_cache_memory_bytes:
            evidence.append(
                "--kv-cache-memory-bytes is set: it, not gpu_memory_utilization, sizes the KV cache"
            )
        why_budget = "one request at max_model_len must fit in the KV cache"
        scale = max_len / estimate if (estimate and max_len) else None
        acts = [
            A.raise_kv_budget(ctx, extra if extra and extra > 0.005 else None, why_budget, scale)
        ]
        if estimate:
            acts.append(A.lower_max_model_len(int(estimate), "vLLM's own estimate of what fits"))
        acts.append(A.fp8_kv(ctx, "halves the KV bytes per token, so twice the tokens fit"))
        acts.append(
            A.raise_tp(
                ctx,
                A.lowest_fitting_tp(ctx, max_len or None),
                "spreads weights and KV heads over more GPUs",
            )
        )
        out.append(
            Finding(
                "max-seq-len-exceeds-kv",
                4,
                "error",
                f"The KV cache cannot hold one request of max_model_len {max_len:,}",
                tuple(evidence),
                _compact(acts),
            )
        )
    return out


def no_cache_memory(ctx) -> list[Finding]:
    events = ctx.of("no_cache_memory")
    zero = [line for line in ctx.raw_lines if "# GPU blocks: 0," in line]  # V0's way of saying it
    if not events and not zero:
        return []
    evidence = [events[0].line.strip() if events else zero[0].strip()]
    acc = ctx.account
    if acc is not None:
        evidence.append(
            f"estimate: weights {acc.weights_gib:.2f} + activations {acc.activation_gib:.2f} + "
            f"overhead {acc.overhead_gib:.2f} GiB against a budget of {acc.budget_gib:.2f} GiB per GPU"
        )
    tp = A.lowest_fitting_tp(ctx)
    acts = [
        A.raise_kv_budget(ctx, None, "the weights and activations leave nothing for the KV cache"),
        A.raise_tp(ctx, tp, "the weights do not leave room for a KV cache on this many GPUs"),
        A.lower_batched_tokens(acc.batched_tokens, "a smaller activation peak leaves room for KV")
        if acc
        else None,
    ]
    return [
        Finding(
            "no-cache-memory",
            1,
            "error",
            "No memory left for the KV cache after the weights",
            tuple(evidence),
            _compact(acts),
        )
    ]


def kv_capacity_thin(ctx) -> list[Finding]:
    """A clean start whose KV cache holds barely one or two full-length requests."""
    if ctx.of("max_seq_len_exceeds_kv", "cuda_oom", "no_cache_memory"):
        return []
    tokens = getattr(ctx.facts, "kv_cache_tokens", None)
    max_len = ctx.knobs.max_model_len or (ctx.model.max_position_embeddings if ctx.model else None)
    if not tokens or not max_len:
        return []
    concurrency = tokens / max_len
    if concurrency >= 2:
        return []
    evidence = [
        f"KV cache holds {tokens:,} tokens = {concurrency:.2f} requests of {max_len:,} tokens"
    ]
    acts = [
        A.raise_kv_budget(ctx, None, "more KV memory holds more requests at once"),
        A.fp8_kv(ctx, "twice the tokens in the same memory"),
    ]
    return [
        Finding(
            "kv-capacity-thin",
            4,
            "warning",
            f"Only {concurrency:.2f} full-length requests fit in the KV cache",
            tuple(evidence),
            _compact(acts),
        )
    ]


def predicted_misfit(ctx) -> list[Finding]:
    """Before launch (no log): the memory model says the weights or one request do not fit."""
    if ctx.events or ctx.account is None:
        return []
    acc = ctx.account
    per = kv_bytes_per_token(ctx.model, acc.tp, acc.pp, ctx.knobs.kv_cache_dtype)
    evidence = list(acc.arithmetic)
    if acc.kv_cache_gib <= 0:
        tp = A.lowest_fitting_tp(ctx)
        acts = [
            A.raise_tp(ctx, tp, "the weights and activations fill the budget on this many GPUs"),
            A.raise_kv_budget(
                ctx,
                -acc.kv_cache_gib + acc.max_model_len * per / GIB,
                "a larger budget leaves room for a KV cache",
            ),
        ]
        return [
            Finding(
                "predicted-no-kv-memory",
                1,
                "error",
                "By the estimate, nothing is left for the KV cache",
                tuple(evidence),
                _compact(acts),
            )
        ]
    if not acc.fits:
        extra = (acc.max_model_len - acc.usable_tokens) * per / GIB
        acts = [
            A.raise_kv_budget(ctx, extra, "one request at max_model_len must fit"),
            A.lower_max_model_len(acc.max_model_len_fit, "what the estimate says fits"),
            A.fp8_kv(ctx, "twice the tokens in the same memory"),
            A.raise_tp(ctx, A.lowest_fitting_tp(ctx), "spreads weights and KV over more GPUs"),
        ]
        return [
            Finding(
                "predicted-max-seq-len-exceeds-kv",
                4,
                "warning",
                f"By the estimate, one request of {acc.max_model_len:,} tokens will not fit "
                f"({acc.kv_capacity_tokens:,} tokens of KV cache)",
                tuple(evidence),
                _compact(acts),
            )
        ]
    return []


RULES = (max_seq_len_exceeds_kv, no_cache_memory, kv_capacity_thin, predicted_misfit)
