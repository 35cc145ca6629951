"""TP/PP configuration errors from the log: heads that TP does not divide (step 2), more
GPUs than the node has and models without PP support (step 3)."""

from __future__ import annotations

from dataclasses import replace

from headroom.doctor import actions as A
from headroom.doctor.findings import Action, Finding


def heads_not_divisible(ctx) -> list[Finding]:
    events = ctx.of("heads_not_divisible", "kv_heads_not_divisible")
    if not events:
        return []
    event = events[0]
    found = event.fields  # heads_not_divisible: heads, tp (the KV-heads event has no heads)
    nums = (found["heads"], found["tp"]) if "heads" in found and "tp" in found else None
    tp = nums[1] if nums else ctx.knobs.tp
    evidence = [event.line.strip()]
    value = _nearest_tp(ctx, tp, nums[0] if nums else None)
    if ctx.model is not None:
        evidence.append(
            f"{ctx.model.num_attention_heads} attention heads, {ctx.model.num_kv_heads} KV heads; "
            "TP must divide both, or be a multiple of the KV heads (vLLM then replicates them)"
        )
    direction = "set" if value is None else ("lower" if value < tp else "raise")
    acts = [
        Action(
            "tensor_parallel_size",
            direction,
            value,
            "the nearest TP that divides the heads and fits in memory",
            "a different number of GPUs" if value else "",
        )
    ]
    return [
        Finding(
            "tp-heads-not-divisible",
            2,
            "error",
            f"Tensor parallel size {tp} does not divide the model's heads",
            tuple(evidence),
            tuple(acts),
        )
    ]


def _nearest_tp(ctx, tp: int, heads: int | None) -> int | None:
    model, limit = ctx.model, (ctx.gpu_count or max(tp, 8))
    if model is not None:
        candidates = A.valid_tps(model, limit)
    elif heads:
        candidates = [t for t in range(1, limit + 1) if heads % t == 0]
    else:
        return None
    fitting = [t for t in candidates if _fits(ctx, t)] or candidates
    # Nearest; on a tie the smaller TP (the GPUs for it surely exist).
    return min(fitting, key=lambda t: (abs(t - tp), t)) if fitting else None


def _fits(ctx, tp: int) -> bool:
    if ctx.model is None or ctx.gpu is None:
        return True
    from dataclasses import replace

    from headroom.doctor.memory_model import account

    acc = account(ctx.model, ctx.gpu, replace(ctx.knobs, tp=tp), ctx.version)
    return acc.fits


def world_size_too_large(ctx) -> list[Finding]:
    events = ctx.of("world_size_too_large")
    if not events:
        return []
    found = events[0].fields
    nums = (found["world_size"], found["gpus"]) if "gpus" in found else None
    gpus = nums[1] if nums else ctx.gpu_count
    evidence = [events[0].line.strip()]
    acts = []
    if gpus and ctx.knobs.tp > gpus:
        valid = A.valid_tps(ctx.model, gpus) if ctx.model is not None else list(range(1, gpus + 1))
        value = max(valid or [1])
        acts.append(
            Action(
                "tensor_parallel_size",
                "lower",
                value,
                f"only {gpus} GPUs are visible on this node",
                "fewer GPUs per replica; use --pipeline-parallel-size across nodes if it does not fit",
            )
        )
    acts.append(
        Action(
            "pipeline_parallel_size",
            "set",
            None,
            "TP inside a node, PP across nodes (with --nnodes or Ray)",
            "multi-node set-up",
        )
    )
    return [
        Finding(
            "world-size-too-large",
            3,
            "error",
            "More GPUs requested than this node has",
            tuple(evidence),
            tuple(acts),
        )
    ]


def pp_unsupported(ctx) -> list[Finding]:
    events = ctx.of("pp_unsupported")
    if not events:
        return []
    total = ctx.knobs.tp * ctx.knobs.pp
    acts = [
        Action(
            "pipeline_parallel_size",
            "lower",
            1,
            "this model has no pipeline-parallel support",
            "all GPUs must go to tensor parallelism",
        )
    ]
    if ctx.model is None or total in A.valid_tps(ctx.model, total):
        acts[0] = replace(acts[0], also=(("tensor_parallel_size", total),))
        acts.append(
            Action(
                "tensor_parallel_size",
                "raise",
                total,
                "use the same GPUs as tensor parallel",
                "all-reduce on every layer: needs fast links",
            )
        )
    return [
        Finding(
            "pp-unsupported",
            3,
            "error",
            "This model cannot run pipeline parallel",
            (events[0].line.strip(),),
            tuple(acts),
        )
    ]


RULES = (heads_not_divisible, world_size_too_large, pp_unsupported)
