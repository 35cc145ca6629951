"""Knob actions with concrete values and their cost in words, shared by the rules.

Directions follow the evidence: a KV shortage wants the KV budget up (free) before fewer
sequences, then TP, then PP (hardware last); an OOM wants the budget down. Values are
rounded so they read well on a command line.
"""

from __future__ import annotations

import math

from headroom.doctor.findings import Action
from headroom.doctor.gpu_table import GPUS
from headroom.doctor.memory_model import account, heads_valid
from headroom.doctor.model_bytes import GIB, kv_bytes_per_token
from headroom.doctor.versions import parse_version

MAX_UTILIZATION = 0.95  # above this the CUDA context and graphs have no room left
# The lowest utilization the doctor proposes on a guess (no number to lower to).
MIN_UTILIZATION = 0.3
MARGIN = 0.01  # of the GPU, on top of a computed utilization: estimates err by ~0.8 GiB


def largest_known_gpu_gib() -> float:
    """The largest CUDA total in the built-in GPU table: no raise of utilization can give
    more than (0.95 - current) x this, whatever the (unknown) GPU."""
    return max(g.usable_gib for g in GPUS)


def budget_raise_verdict(ctx, extra_gib: float | None) -> str:
    """Can raising the KV budget by `extra_gib` per GPU close the gap?

    "closes": --kv-cache-memory-bytes is set (raising it by the gap is exact), or a
    utilization <= 0.95 covers the gap on this GPU; with the GPU unknown, on the smallest
    GPU the log allows (a raise of d gives d x total GiB, and total is at least that).
    "maybe": only on a larger GPU than the log proves, up to the largest known one.
    "cannot": no utilization <= 0.95 covers it. "unknown": no gap size."""
    if ctx.knobs.kv_cache_memory_bytes:
        return "closes"
    if not extra_gib or extra_gib <= 0:
        return "unknown"
    room = MAX_UTILIZATION + 0.005 - ctx.utilization
    total = getattr(ctx, "gpu_total", None)
    if total is not None:
        gib, exact = total
        if room >= extra_gib / gib + MARGIN:
            return "closes"
        if exact:
            return "cannot"
    return "maybe" if room * largest_known_gpu_gib() >= extra_gib else "cannot"


def floor2(x: float) -> float:
    return math.floor(x * 100 + 1e-9) / 100


def ceil2(x: float) -> float:
    return math.ceil(x * 100 - 1e-9) / 100


def raise_kv_budget(
    ctx, extra_gib: float | None, why: str, scale: float | None = None
) -> Action | None:
    """More KV memory: --kv-cache-memory-bytes when it is set (it overrides the utilization,
    even though vLLM's own message says "increase gpu_memory_utilization"), else
    gpu_memory_utilization by enough to cover `extra_gib` (or +0.03). `scale` is the factor
    the KV cache must grow by, when only that is known."""
    knobs = ctx.knobs
    if knobs.kv_cache_memory_bytes:
        current = knobs.kv_cache_memory_bytes
        if scale and scale > 1:
            target = current * scale * 1.05
        elif extra_gib and extra_gib > 0:
            target = current + extra_gib * GIB * 1.05
        else:
            target = current * 1.2
        mib = 2**20
        new_bytes = int(math.ceil(target / mib) * mib)
        cost = "less memory left for activations and CUDA graphs; OOM risk if set too high"
        if _cpu_backend(ctx):
            cost = "on the CPU backend the KV cache is RAM: keep it within the node's free RAM"
        return Action("kv_cache_memory_bytes", "raise", new_bytes, why, cost)
    util = ctx.utilization
    total = getattr(ctx, "gpu_total", None)
    if total is None and ctx.gpu is not None:
        total = (ctx.gpu.min_usable_gib, True)
    if extra_gib and extra_gib > 0.005:
        why = f"{why} (about {extra_gib:.2f} GiB more KV per GPU)"
    verdict = budget_raise_verdict(ctx, extra_gib)
    if verdict == "cannot":
        return None  # no utilization <= 0.95 covers the shortfall: other knobs must
    if verdict == "maybe":
        # The GPU's size is not known, and only a GPU larger than the log proves would do.
        need = extra_gib / (MAX_UTILIZATION - util) if MAX_UTILIZATION > util else None
        if need:
            why = f"{why}; enough only on a GPU of at least {need:.0f} GiB"
        step = MAX_UTILIZATION - util
    elif extra_gib and total is not None:
        # sized on the GPU's total, or on the smallest total the log allows (a larger GPU
        # then gets a little more KV than needed, never less)
        step = extra_gib / total[0] + MARGIN
    else:
        step = 0.03
    new = min(ceil2(util + step), MAX_UTILIZATION)
    if new <= util + 1e-9:
        return None
    return Action(
        "gpu_memory_utilization",
        "raise",
        new,
        why,
        "less slack for the CUDA context, graphs and other processes on the GPU",
    )


def cpu_kv_space(ctx, line: str, scale: float | None, why: str) -> Action | None:
    """V0's CPU worker (0.4.3-0.9.2 cpu_worker.py) sizes the KV cache by the environment
    variable VLLM_CPU_KVCACHE_SPACE (GiB; 0 = 4 GiB, platforms/cpu.py) and its refusals say
    "Try increasing `VLLM_CPU_KVCACHE_SPACE`": there the budget knob is that variable, and
    gpu_memory_utilization does nothing. None for any other text."""
    if "VLLM_CPU_KVCACHE_SPACE" not in line:
        return None
    lines = getattr(ctx, "raw_lines", None) or []
    default = any("VLLM_CPU_KVCACHE_SPACE (GiB)" in x and "using 4 by default" in x for x in lines)
    value = math.ceil(4 * scale * 1.05) if (default and scale and scale > 1) else None
    return Action(
        "VLLM_CPU_KVCACHE_SPACE",
        "raise",
        value,
        f"{why}: on the CPU backend this environment variable (GiB) is the KV cache"
        + (f", {scale:.1f}x the default 4 GiB" if value else ""),
        "host RAM: keep it within the node's free memory",
        step=4,
    )


def _cpu_backend(ctx) -> bool:
    """vLLM's CPU backend says so in its engine config line and its worker's name."""
    lines = getattr(ctx, "raw_lines", None) or []
    return any("device_config=cpu" in line or "[cpu_worker.py:" in line for line in lines)


def lower_utilization(ctx, target: float | None, why: str) -> Action | None:
    util = ctx.utilization
    new = floor2(target) if target is not None else floor2(util - 0.05)
    new = max(new, MIN_UTILIZATION)
    if new >= util - 1e-9:
        return None
    return Action(
        "gpu_memory_utilization",
        "lower",
        new,
        why,
        "a smaller KV cache: fewer tokens in flight, more preemption under load",
    )


def lower_kv_memory(ctx, target: float | None, why: str) -> Action | None:
    """Less memory for the KV cache after a CUDA OOM. With --kv-cache-memory-bytes set, vLLM
    (0.10.2+) reserves exactly that and "does not respect the gpu_memory_utilization config
    ... If OOM'ed, ... update it correspondingly" (gpu_worker.py determine_available_memory):
    lowering the utilization would change nothing, so the bytes go down (by a fifth)."""
    current = ctx.knobs.kv_cache_memory_bytes
    if not current:
        return lower_utilization(ctx, target, why)
    mib = 2**20
    new = int(current * 0.8) // mib * mib
    if new <= 0 or new >= current:
        return None
    return Action(
        "kv_cache_memory_bytes",
        "lower",
        new,
        f"{why}; --kv-cache-memory-bytes sets the KV cache, whatever gpu_memory_utilization says",
        "a smaller KV cache: fewer tokens in flight, more preemption under load",
    )


def lower_max_model_len(value: int, why: str) -> Action:
    value = max(int(value) // 16 * 16, 16)
    return Action("max_model_len", "lower", value, why, "requests longer than this are rejected")


def lower_max_num_seqs(current: int, target: int | None, why: str) -> Action | None:
    new = max(int(target if target is not None else current // 2), 1)
    if new >= current:
        return None
    return Action(
        "max_num_seqs",
        "lower",
        new,
        why,
        "fewer requests run at once: lower throughput, longer queues under load",
    )


def lower_batched_tokens(current: int, why: str) -> Action | None:
    new = max(current // 2 // 256 * 256, 256)
    if new >= current:
        return None
    return Action(
        "max_num_batched_tokens",
        "lower",
        new,
        why,
        "long prompts prefill in more chunks: slower time to first token",
    )


def fp8_kv(ctx, why: str) -> Action | None:
    current = (ctx.knobs.kv_cache_dtype or "auto").lower()
    if current.startswith("fp8") or current.startswith("int8"):
        return None
    return Action(
        "kv_cache_dtype",
        "set",
        "fp8",
        why,
        "about half the KV bytes per token; check output quality on your workload",
    )


def enforce_eager(why: str) -> Action:
    return Action(
        "enforce_eager",
        "set",
        True,
        why,
        "no CUDA graphs: slower decoding, most at small batch sizes",
    )


def valid_tps(model, limit: int) -> list[int]:
    return [tp for tp in range(1, max(limit, 1) + 1) if heads_valid(model, tp)]


def raise_tp(ctx, fitting_tp: int | None, why: str) -> Action | None:
    current = ctx.knobs.tp
    if fitting_tp is None or fitting_tp <= current:
        return None
    return Action(
        "tensor_parallel_size",
        "raise",
        fitting_tp,
        why,
        "more GPUs, and an all-reduce on every layer: fast over NVLink, slow over PCIe",
    )


def raise_pp(ctx, value: int, why: str) -> Action | None:
    if value <= ctx.knobs.pp:
        return None
    return Action(
        "pipeline_parallel_size",
        "raise",
        value,
        why,
        "more GPUs and a longer path per token: higher latency, bubbles at low load",
    )


def lowest_fitting_tp(ctx, tokens_needed: int | None = None) -> int | None:
    """The smallest valid TP (within the node's GPUs) whose account fits the weights and
    `tokens_needed` KV tokens (default: one max_model_len request)."""
    from dataclasses import replace

    if ctx.model is None or ctx.gpu is None:
        return None
    limit = ctx.gpu.count
    for tp in valid_tps(ctx.model, limit):
        acc = account(ctx.model, ctx.gpu, replace(ctx.knobs, tp=tp), ctx.version)
        need = tokens_needed or acc.max_model_len
        if acc.kv_cache_gib > 0 and acc.usable_tokens >= need:
            return tp
    return None


def extra_gib_for_tokens(ctx, tokens: int, have_tokens: int) -> float | None:
    if ctx.model is None:
        return None
    per = kv_bytes_per_token(ctx.model, ctx.knobs.tp, ctx.knobs.pp, ctx.knobs.kv_cache_dtype)
    return max(tokens - have_tokens, 0) * per / GIB


# "Pipeline parallelism is not supported yet" (config.py) up to 0.5.0.
PP_SINCE = (0, 5, 1)


def lower_tp_keeping_gpus(ctx, tp: int, new_tp: int, why: str) -> list[Action]:
    """TP lowered to `new_tp` for the parallel layout (step 2) and, on a release with PP,
    PP raised over the GPUs it gives up, so that the same GPUs still hold the weights."""
    pp = tp * max(ctx.knobs.pp, 1) // new_tp
    version = parse_version(ctx.version)
    with_pp = pp > 1 and (version is None or version >= PP_SINCE)
    acts = [
        Action(
            "tensor_parallel_size",
            "lower",
            new_tp,
            why,
            "fewer GPUs per tensor-parallel group",
            also=(("pipeline_parallel_size", pp),) if with_pp else (),
            step=2,
        )
    ]
    if with_pp:
        acts.append(
            Action(
                "pipeline_parallel_size",
                "raise",
                pp,
                f"the {tp} GPUs stay in use: TP {new_tp} x PP {pp} holds what TP {tp} held",
                "pipeline bubbles at low concurrency; the model must support PP",
                also=(("tensor_parallel_size", new_tp),),
            )
        )
    return acts
