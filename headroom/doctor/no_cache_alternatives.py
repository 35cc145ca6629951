"""The knobs after the utilization for a start with no KV memory, release by release, and the
answer when one request cannot be sized (no model shape). Split from rules_no_cache.py, whose
module doc gives the order and the vLLM source it follows.
"""

from __future__ import annotations

from headroom.doctor import actions as A
from headroom.doctor.findings import Action, compact_actions
from headroom.doctor.log_memory import available_kv_from_log
from headroom.doctor.v0_profile import chunked_prefill_action, whole_prompt_tokens
from headroom.doctor.versions import (
    batch_defaults,
    cudagraph_in_budget,
    effective_version,
    format_version,
    is_v1,
)


def unsized_actions(ctx, why: str, evidence: list[str]) -> list[Action | None]:
    """The actions when one request cannot be sized (no model shape): the raise first when
    the numbers leave it room, else the release's next knob; the others after it."""
    cpu_space = A.cpu_kv_space(ctx, evidence[0] if evidence else "", None, why)
    if cpu_space is not None:
        return [cpu_space, *release_alternatives(ctx, raised=True)]
    deficit = _log_deficit(ctx)
    budget, left = _raise_for_deficit(ctx, deficit, why, evidence)
    if budget is not None:
        return [budget, *release_alternatives(ctx, raised=True, kv_left=left)]
    # The raise cannot work: the release's next knob leads; a raise short of the deficit
    # still adds memory, so it follows that knob.
    alternatives = compact_actions(release_alternatives(ctx, raised=False))
    partial = None
    if ctx.utilization < A.MAX_UTILIZATION - 1e-9 and not ctx.knobs.kv_cache_memory_bytes:
        partial = Action(
            "gpu_memory_utilization",
            "raise",
            A.MAX_UTILIZATION,
            f"{why}: not enough alone, it adds to the change above",
            "less slack for the CUDA context, graphs and other processes on the GPU",
        )
    return [*alternatives[:1], partial, *alternatives[1:]]


def _log_deficit(ctx) -> float | None:
    """How far below zero the budget is, GiB per GPU, when vLLM printed it."""
    short = available_kv_from_log(ctx.raw_lines)
    return -short if short is not None and short < 0 else None


def _raise_for_deficit(ctx, deficit, why, evidence) -> tuple[Action | None, float | None]:
    """(the utilization raise or None when it cannot work, the KV GiB per GPU it leaves when
    that is known). Without a known deficit: the table's default raise (+0.03)."""
    if ctx.knobs.kv_cache_memory_bytes:
        return A.raise_kv_budget(ctx, deficit, why), None
    util, total = ctx.utilization, ctx.gpu_total
    if util >= A.MAX_UTILIZATION - 1e-9:
        evidence.append(
            f"gpu_memory_utilization is already {util:.2f}: above {A.MAX_UTILIZATION} the CUDA "
            "context and graphs have no room, so the next knob leads"
        )
        return None, None
    if deficit is None:
        return A.raise_kv_budget(ctx, None, why), None
    if total is None:
        # The GPU's size is not known: the raise says what size it needs, and it is gone
        # when no GPU we know could give the deficit (then the next knob leads).
        budget = A.raise_kv_budget(ctx, deficit, why)
        if budget is None:
            evidence.append(
                f"the budget is {deficit:.2f} GiB short: no gpu_memory_utilization <= "
                f"{A.MAX_UTILIZATION} gives that on any GPU we know, so the next knob leads"
            )
        return budget, None
    gib, exact = total
    room = (A.MAX_UTILIZATION - util) * gib
    about = "" if exact else "at least "
    if A.budget_raise_verdict(ctx, deficit) != "closes":
        evidence.append(
            f"GPU total {about}{gib:.2f} GiB: gpu_memory_utilization {ctx.utilization_said} -> "
            f"{A.MAX_UTILIZATION} adds {room:.2f} GiB, not the {deficit:.2f} GiB (plus a margin) "
            "the budget is short: the next knob leads"
        )
        return None, None
    left = room - deficit
    evidence.append(
        f"GPU total {about}{gib:.2f} GiB: gpu_memory_utilization {ctx.utilization_said} -> "
        f"{A.MAX_UTILIZATION} adds {room:.2f} GiB, {deficit:.2f} GiB of it to reach zero: about "
        f"{left:.2f} GiB of KV cache per GPU is left"
    )
    raise_util = Action(
        "gpu_memory_utilization",
        "raise",
        A.MAX_UTILIZATION,
        f"{why}: the budget is {deficit:.2f} GiB short and {A.MAX_UTILIZATION} adds "
        f"{room:.2f} GiB, leaving about {left:.2f} GiB for the KV cache",
        "less slack for the CUDA context, graphs and other processes on the GPU",
    )
    return raise_util, left


def release_alternatives(
    ctx, *, raised: bool, kv_left: float | None = None, version_text: str | None = None
) -> list[Action | None]:
    """The knobs after the utilization, in the order the release's profile makes them work.
    `raised`: the utilization raise comes first; `kv_left`: the KV GiB per GPU it leaves;
    `version_text`: the release to reason with (default ctx's)."""
    version_text = version_text or ctx.version
    version = effective_version(version_text)
    knobs = ctx.knobs
    shape = ctx.model_read
    # --max-model-len -1 asks vLLM (0.32+) to fit the length to memory itself ("Cannot
    # auto-fit max_model_len" when not even one token fits): no length to cut then.
    # (vllm/utils/argparse_utils.py human_readable_int_or_auto: "-1" or "auto")
    cmd = ctx.inputs.command
    typed = str(cmd.get("max_model_len") if cmd is not None else "").strip().lower()
    auto_fit = typed in ("-1", "auto")
    length = (
        None
        if auto_fit
        else knobs.max_model_len or (getattr(shape, "max_position_embeddings", None) or None)
    )
    tokens, seqs = _batch(ctx, version, length)

    def shorter_for(why: str) -> Action | None:
        return None if auto_fit else _shorter(length, why)

    fewer_seqs = A.lower_max_num_seqs(
        seqs, None, "the start-up profile's sampler holds logits for every sequence"
    )
    tp = A.raise_tp(ctx, A.lowest_fitting_tp(ctx), "the weights do not leave room for a KV cache")
    whole = whole_prompt_tokens(ctx, version_text)
    if (version_text is not None and not is_v1(version)) or whole is not None:
        # V0, or chunked prefill turned off: fewer batched tokens is no knob there (below
        # max_model_len vLLM refuses them); a shorter context shrinks the profile itself
        engine = "V1 with chunked prefill off" if is_v1(version) else "V0"
        shorter = shorter_for(
            f"{engine} ({format_version(version)}) profiles one whole max_model_len prompt: "
            "a shorter context lowers the activation peak itself",
        )
        chunked = chunked_prefill_action(
            ctx, "a smaller start-up profile leaves room for KV", version_text
        )
        if is_v1(version) and chunked is not None:
            return [chunked, shorter, fewer_seqs, tp]  # vLLM's own default, given back
        return [shorter, chunked, fewer_seqs, tp]
    fewer_tokens = (
        A.lower_batched_tokens(tokens, "the start-up profile runs this many tokens at once")
        if tokens
        else None
    )
    eager = None
    if cudagraph_in_budget(version) and not knobs.enforce_eager:
        eager = A.enforce_eager(
            "from 0.20 the CUDA-graph estimate is taken out of the KV budget: eager mode "
            "gives it back"
        )
    left = f" (about {kv_left:.2f} GiB)" if kv_left is not None else ""
    v1_part = (
        f"in V1 the KV cache left after the raise{left} may hold less than one request of it"
        if raised
        else "V1 profiles max_num_batched_tokens instead (next)"
    )
    if ctx.version is None:
        # The release is not known: the table's order (max_model_len next), which is also
        # V0's knob; V1's batch knobs follow.
        shorter = shorter_for(
            "the table's next knob: V0 (<= 0.7) profiles one whole max_model_len prefill; "
            + v1_part,
        )
        return [shorter, fewer_tokens, fewer_seqs, eager, tp]
    shorter = shorter_for(
        "V1 profiles max_num_batched_tokens whatever max_model_len is: it cannot make KV "
        f"memory, but the KV cache left after the raise{left} may hold less than one request",
    )
    if raised and kv_left is not None:
        return [shorter, fewer_tokens, fewer_seqs, eager, tp]
    return [fewer_tokens, fewer_seqs, eager, shorter, tp]


def _batch(ctx, version, length) -> tuple[int | None, int]:
    """(max_num_batched_tokens, max_num_seqs) in effect: the command's, else the release's
    defaults for this GPU (tokens None when the GPU size is unknown)."""
    knobs = ctx.knobs
    total = ctx.gpu_total
    name = ctx.gpu.name if ctx.gpu is not None else ""
    if total is None:
        return knobs.max_num_batched_tokens, knobs.max_num_seqs or 256
    tokens, seqs = batch_defaults(version, total[0], name, length or 2048)
    return knobs.max_num_batched_tokens or tokens, knobs.max_num_seqs or seqs


def _shorter(length: int | None, why: str) -> Action:
    if length and length >= 2 * 16:
        return A.lower_max_model_len(length // 2, why)
    return Action("max_model_len", "lower", None, why, "requests longer than this are rejected")
