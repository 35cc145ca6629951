"""Step 1 when the TP x PP in use is not known (no command line, nothing in the log says it).

rules_preflight's weights check compares the weights' share at the TP x PP in force with the
budget. Without a command line that TP x PP is a placeholder (1 x 1, known_knobs), and "the
weights do not fit at TP 1, raise TP" would be said of a 16-GPU DeepSeek deployment whose TP
was simply not pasted (vllm#25290: DeepSeek-V3.1 on 16 B200, an MLA workspace bug). So the
layout is reasoned over the range it can take, 1 to the GPUs at hand:

- no layout those GPUs allow holds the weights: they are a cause whatever TP ran, and the
  finding says so (a GPU with more memory, more GPUs, a quantized checkpoint);
- some layout does (the smallest, TP x PP = N): the finding is a condition, "if TP x PP was
  below N", ranked as a preflight warning after every finding a real log line gives, and the
  evidence says what would decide (the command line, the engine's config line).
"""

from __future__ import annotations

from headroom.doctor.findings import Action, Finding
from headroom.doctor.known_knobs import gpus_in_all
from headroom.doctor.oom_weights import SEARCH_GPUS, TP_COST, too_big, weights_fit_from
from headroom.doctor.rules_oom import oom_phase
from headroom.doctor.rules_preflight import (
    HOLD,
    budget_gib,
    log_shows_weights_fit,
    no_tp_holds,
    sizing,
    tp_allowed,
)

FINDING_ID = "preflight-weights-if-layout"
# OOM phases (rules_oom.oom_phase) that come after the weights loaded
_PAST_LOADING = frozenset({"graphs", "sampler", "kv-alloc", "runtime", "sleep-wake"})


def weights_if_layout_small(ctx) -> list[Finding]:
    """The weights' share on one GPU fills the budget and the TP x PP in use is not known."""
    if ctx.known("tensor_parallel_size") or ctx.inputs.command is not None:
        return []
    if ctx.of("heads_not_divisible", "kv_heads_not_divisible"):
        return []  # the head rule searches a TP that divides the heads and holds the weights
    sized, budget = sizing(ctx), budget_gib(ctx)
    if sized is None or budget is None or log_shows_weights_fit(ctx):
        return []
    ooms = ctx.of("cuda_oom")
    if ooms and oom_phase(ctx, ooms[0]) in _PAST_LOADING:
        return []  # the OOM came after the weights loaded: they fit at the TP that ran
    quant = ctx.knobs.quantization
    one = sized.per_gpu(1, 1, quant)
    if one < budget:
        return []
    gib = ctx.gpu.min_usable_gib
    gpus = gpus_in_all(ctx)
    at_hand = f"the {gpus} GPUs at hand" if gpus else "up to 64 GPUs (their count is not given)"
    first = (
        f"the TP x PP in use is not known (no command line): the weights are {one:.2f} GiB on "
        f"one GPU ({sized.source}), at least the {budget:.2f} GiB budget of a {gib:.2f} GiB GPU "
        f"at gpu_memory_utilization {ctx.utilization_said}"
    )
    smallest = weights_fit_from(ctx)
    layout = _proposal(ctx, sized) if smallest is not None else None
    if smallest is None or layout is None:
        evidence = (first, *no_tp_holds(ctx, f"no TP x PP on {at_hand} holds them"))
        title = "The weights do not fit these GPUs at any TP"
        return [Finding(FINDING_ID, 1, "warning", title, evidence)]
    world = smallest[0] * smallest[1]
    tp, pp = layout
    after = sized.per_gpu(tp, pp, quant)
    evidence = (
        first,
        f"below {world} GPUs (TP x PP) no layout holds them; TP {tp} x PP {pp} would hold "
        f"them with room to run ({after:.2f} GiB per GPU, within {HOLD:g} x the budget)",
        "the command line (after --) or the log's engine config line "
        "(tensor_parallel_size=..., pipeline_parallel_size=...) would say which",
    )
    why = f"if TP x PP was below {world}: TP {tp} x PP {pp} holds the weights"
    also = (("pipeline_parallel_size", pp),) if pp > 1 else ()
    acts = [Action("tensor_parallel_size", "raise", tp, why, TP_COST, also=also, step=1)]
    if pp > 1:
        acts.append(Action("pipeline_parallel_size", "raise", pp, why, TP_COST,
                           also=(("tensor_parallel_size", tp),), step=1))  # fmt: skip
    title = f"If TP x PP was below {world}, the weights do not fit {gib:.0f} GiB GPUs"
    return [Finding(FINDING_ID, 1, "warning", title, evidence, tuple(acts))]


def _proposal(ctx, sized) -> tuple[int, int] | None:
    """The layout to propose: the lowest TP inside a node that divides the heads and holds
    the weights with room to run, else the node's largest such TP with the fewest PP stages
    over the GPUs at hand (vLLM's own layout advice: TP inside a node, PP across)."""
    per_node = ctx.gpu_count or (ctx.words.gpus_at_hand if ctx.words is not None else None)
    per_node = per_node or 8
    in_all = gpus_in_all(ctx) or SEARCH_GPUS
    quant = ctx.knobs.quantization
    tps = [t for t in range(2, per_node + 1) if tp_allowed(ctx, t)]
    for tp in tps:
        if not too_big(ctx, sized.per_gpu(tp, 1, quant), HOLD):
            return tp, 1
    if not tps:
        return None
    tp = tps[-1]
    for pp in range(2, in_all // tp + 1):
        if not too_big(ctx, sized.per_gpu(tp, pp, quant), HOLD):
            return tp, pp
    return None


RULES = (weights_if_layout_small,)
