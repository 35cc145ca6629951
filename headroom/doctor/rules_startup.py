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

from dataclasses import replace

from headroom.doctor import actions as A
from headroom.doctor.candidate_actions import fix_actions
from headroom.doctor.estimate_error import fit_range
from headroom.doctor.findings import Action, Finding, compact_actions
from headroom.doctor.log_memory import available_kv_from_log
from headroom.doctor.memory_model import fit_len
from headroom.doctor.model_bytes import GIB, kv_bytes_per_token


def _ledger_refusal(ctx) -> tuple[dict, str] | None:
    """The refusal's numbers from the memory ledger, when no line said it in a known wording:
    a start that never became ready whose KV cache holds fewer tokens (or GiB) than one
    max_model_len sequence needs (probes/memory_ledger.py)."""
    facts = ctx.facts
    ledger = getattr(facts, "ledger", None)
    if ledger is None or facts.ready or not ledger.max_model_len:
        return None
    short_tokens = ledger.kv_deficit_tokens
    short_gib = ledger.kv_deficit_gib
    if not ((short_tokens is not None and short_tokens > 0) or (short_gib or 0) > 0.005):
        return None
    nums: dict = {"max_seq_len": ledger.max_model_len}
    fit = ledger.fit_max_len if ledger.fit_max_len is not None else ledger.kv_capacity_tokens
    if ledger.kv_needed_gib is not None and ledger.kv_gib is not None:
        nums.update(needed_gib=ledger.kv_needed_gib, available_gib=ledger.kv_gib)
    if fit is not None:
        nums.update(estimated_max_len=fit, kv_tokens=fit)
    held = f"{fit:,} tokens" if fit is not None else f"{ledger.kv_gib:.2f} GiB"
    line = f"the log's memory numbers: the KV cache holds {held}, max_model_len is {ledger.max_model_len:,}"
    return nums, line


def _merged_refusal(ctx, events) -> dict:
    """The refusal's numbers: the first event's, then what its other lines (a wrapped paste,
    TP workers) and the memory ledger add."""
    nums: dict = {}
    for event in events:
        for key, value in event.fields.items():
            nums.setdefault(key, value)
    ledger = getattr(ctx.facts, "ledger", None)
    if ledger is not None:
        if ledger.max_model_len:
            nums.setdefault("max_seq_len", ledger.max_model_len)
        if ledger.fit_max_len is not None:
            nums.setdefault("estimated_max_len", ledger.fit_max_len)
    return nums


# Below this many tokens a server answers almost no chat prompt with its template and reply.
_USABLE_LEN = 2048


def max_seq_len_exceeds_kv(ctx) -> list[Finding]:
    out = []
    events = ctx.of("max_seq_len_exceeds_kv")
    refusals = [(_merged_refusal(ctx, events), events[0].line.strip())] if events else []
    if not refusals and not ctx.of("cuda_oom", "no_cache_memory"):
        found = _ledger_refusal(ctx)
        refusals = [found] if found else []
    for nums, first_line in refusals:
        # V1: needed_gib, available_gib, estimated_max_len; V0: kv_tokens (= the estimate)
        max_len = int(nums.get("max_seq_len") or ctx.knobs.max_model_len or 0)
        estimate = nums.get("estimated_max_len") or nums.get("kv_tokens")
        evidence = [first_line]
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
        gap = extra if extra and extra > 0.005 else None
        budget = A.raise_kv_budget(ctx, gap, why_budget, scale)
        shorter = (
            A.lower_max_model_len(int(estimate), "vLLM's own estimate of what fits")
            if estimate
            else None
        )
        # The budget raise leads only when it can close the gap: --kv-cache-memory-bytes
        # (raised by the gap, exactly), or a utilization <= 0.95 that covers it on this GPU
        # (or on the smallest GPU the log allows). Else vLLM's own estimate leads, and the
        # raise stays (later) only if some larger GPU could make it enough.
        verdict = A.budget_raise_verdict(ctx, gap)
        # A max_model_len cut below _USABLE_LEN tokens serves almost no prompt: then the
        # budget leads even when it may not close the whole gap.
        too_short = estimate is not None and int(estimate) < _USABLE_LEN and budget is not None
        if verdict != "closes" and shorter is not None and not too_short:
            total = ctx.gpu_total
            if gap is not None and total is not None:
                room = max(A.MAX_UTILIZATION - ctx.utilization, 0.0)
                evidence.append(
                    f"GPU total {'' if total[1] else 'at least '}{total[0]:.2f} GiB: "
                    f"gpu_memory_utilization {ctx.utilization:.2f} -> {A.MAX_UTILIZATION} adds "
                    f"{'' if total[1] else 'about '}{room * total[0]:.2f} GiB, "
                    f"not the {gap:.2f} GiB needed"
                )
            acts = [shorter, budget]
        else:
            acts = [budget, shorter]
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
                compact_actions(acts),
            )
        )
    return out


def no_cache_memory(ctx) -> list[Finding]:
    events = ctx.of("no_cache_memory")
    # Or the numbers say it, whatever the wording: V0's "# GPU blocks: 0", a negative KV
    # budget ("the rest of the memory reserved for KV Cache is -1.2GiB"), in a start that
    # never became ready.
    ledger = getattr(ctx.facts, "ledger", None)
    by_numbers = ledger is not None and ledger.no_kv_memory and not ctx.facts.ready
    if not events and not by_numbers:
        return []
    if events or ledger is None:
        evidence = [events[0].line.strip()]
    else:
        blocks = ctx.of("kv_cache_blocks")
        evidence = [
            blocks[-1].line.strip()
            if blocks and ledger.gpu_blocks == 0
            else f"the log's memory numbers: KV cache budget {ledger.kv_gib} GiB"
        ]
    acc = ctx.account
    if acc is not None:
        evidence.append(
            f"estimate: weights {acc.weights_gib:.2f} + activations {acc.activation_gib:.2f} + "
            f"overhead {acc.overhead_gib:.2f} GiB against a budget of {acc.budget_gib:.2f} GiB per GPU"
        )
    tp = A.lowest_fitting_tp(ctx)
    why = "the weights and activations leave nothing for the KV cache"
    batched = (
        A.lower_batched_tokens(acc.batched_tokens, "a smaller activation peak leaves room for KV")
        if acc
        else None
    )
    wider = A.raise_tp(ctx, tp, "the weights do not leave room for a KV cache on this many GPUs")
    sizing = _no_cache_sizing(ctx, acc)
    if sizing is None:  # no model shape: the gap is unknown
        acts = [A.raise_kv_budget(ctx, None, why), wider, batched]
    else:
        gap, one_request, max_len, evidence_line = sizing
        evidence.append(evidence_line)
        budget = A.raise_kv_budget(ctx, gap, f"{why}; one request of {max_len:,} tokens must fit")
        if A.budget_raise_verdict(ctx, gap) == "closes":
            acts = [budget, wider, batched]
        else:
            shorter = _no_cache_shorter_first(ctx, gap - one_request, evidence)
            if shorter or ctx.gpu_total is not None:
                acts = [*shorter, wider, batched]
            else:  # nothing to size by: the raise, with the GPU size it would need
                acts = [budget, wider, batched]
            if not compact_actions(acts):
                # GPU unknown and no known GPU lets a raise hold one request: some KV memory
                # first (vLLM then names the length that fits), and say so
                acts = [
                    A.raise_kv_budget(ctx, None, f"{why}; alone not enough for {max_len:,} tokens"),
                    Action(
                        "max_model_len",
                        "lower",
                        None,
                        f"no gpu_memory_utilization <= {A.MAX_UTILIZATION} holds one request of "
                        f"{max_len:,} tokens on any GPU we know",
                        "requests longer than this are rejected",
                    ),
                ]
    return [
        Finding(
            "no-cache-memory",
            1,
            "error",
            "No memory left for the KV cache after the weights",
            tuple(evidence),
            compact_actions(acts),
        )
    ]


def _no_cache_sizing(ctx, acc):
    """(gap GiB, one request GiB, max_model_len, evidence): the KV memory per GPU that one
    request of the effective max_model_len needs (cdiv(len, block) blocks plus the block
    pool's null block), plus what the budget is already short by (vLLM's "Available KV cache
    memory" when it printed it, else the estimate)."""
    model = ctx.model
    if model is None:
        return None
    max_len = ctx.knobs.max_model_len or getattr(model, "max_position_embeddings", None)
    if not max_len:
        return None
    knobs = ctx.knobs
    tp = acc.tp if acc else knobs.tp
    pp = acc.pp if acc else knobs.pp
    block = max(knobs.block_size, 1)
    per = kv_bytes_per_token(model, tp, pp, knobs.kv_cache_dtype)
    one_request = (-(-max_len // block) + 1) * block * per / GIB
    short = available_kv_from_log(ctx.raw_lines)
    if short is None and acc is not None:
        short = acc.kv_cache_gib
    short = min(short or 0.0, 0.0)
    gap = one_request - short
    line = (
        f"one request of {max_len:,} tokens needs {one_request:.2f} GiB of KV per GPU"
        + (f", and the budget is already {-short:.2f} GiB short" if short < 0 else "")
        + f": {gap:.2f} GiB more"
    )
    return gap, one_request, max_len, line


def _no_cache_shorter_first(ctx, already_short: float, evidence: list) -> list:
    """No utilization <= 0.95 holds one request of max_model_len: lower max_model_len to
    what 0.95 holds (applied with the utilization raise, which alone gives KV memory), or,
    when even 0.95 leaves no KV memory, leave it to TP."""
    total = ctx.gpu_total
    if total is None or ctx.model is None:
        return []
    util = A.MAX_UTILIZATION
    knobs = ctx.knobs
    block = max(knobs.block_size, 1)
    per = kv_bytes_per_token(ctx.model, knobs.tp, knobs.pp, knobs.kv_cache_dtype)
    # KV memory per GPU at 0.95 (less the usual margin): what the raise adds, less the
    # shortfall the budget already has
    kv_at_max = (util - ctx.utilization - A.MARGIN) * total[0] - already_short
    blocks = int(kv_at_max * GIB // (per * block)) if kv_at_max > 0 else 0
    fit = fit_len(blocks * block, block, getattr(ctx.model, "max_position_embeddings", None))
    evidence.append(
        f"at gpu_memory_utilization {util} the KV cache gets about {max(kv_at_max, 0):.2f} GiB "
        f"per GPU: one request of at most {fit:,} tokens"
    )
    if fit < 16:
        return []  # the weights barely fit at all: more GPUs (TP) it is
    shorter = A.lower_max_model_len(fit, f"what gpu_memory_utilization {util} holds")
    shorter = replace(shorter, also=(("gpu_memory_utilization", util),))
    raise_util = Action(
        "gpu_memory_utilization",
        "raise",
        util,
        f"gives the KV cache memory at all; with max_model_len <= {shorter.value:,}",
        "less slack for the CUDA context, graphs and other processes on the GPU",
    )
    return [shorter, raise_util]


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
            compact_actions(acts),
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
        # Searched: the best configuration that passes every step, one knob at a time.
        acts, checked = fix_actions(ctx, "the weights and activations fill the budget")
        evidence += checked
        return [
            Finding(
                "predicted-no-kv-memory",
                1,
                "error",
                "By the estimate, nothing is left for the KV cache",
                tuple(evidence),
                compact_actions(acts),
            )
        ]
    if not acc.fits:
        evidence.append(_fit_range_line(ctx, acc))
        extra = (acc.max_model_len - acc.usable_tokens) * per / GIB
        # Searched: the free knob (utilization) with the longest context that then fits,
        # the cut kept to the low end of the estimate's range; the other knobs after it.
        searched, checked = fix_actions(
            ctx, "one request at max_model_len must fit", margin=True,
            allow=frozenset({"gpu_memory_utilization", "kv_cache_memory_bytes", "max_model_len"}),
        )  # fmt: skip
        evidence += checked
        others = [
            A.raise_kv_budget(ctx, extra, "one request at max_model_len must fit"),
            A.lower_max_model_len(acc.max_model_len_fit, "what the estimate says fits"),
            A.fp8_kv(ctx, "twice the tokens in the same memory"),
            A.raise_tp(ctx, A.lowest_fitting_tp(ctx), "spreads weights and KV over more GPUs"),
        ]
        turned = {a.knob for a in searched}
        acts = [*searched, *(a for a in others if a is not None and a.knob not in turned)]
        return [
            Finding(
                "predicted-max-seq-len-exceeds-kv",
                4,
                "warning",
                f"By the estimate, one request of {acc.max_model_len:,} tokens will not fit "
                f"({acc.kv_capacity_tokens:,} tokens of KV cache)",
                tuple(evidence),
                compact_actions(acts),
            )
        ]
    return []


def _fit_range_line(ctx, acc) -> str:
    """The estimate's fit as a range with its reasons (the measured error; the releases'
    rules when the release is unknown), as `plan` shows it."""
    low, high, reasons = fit_range(ctx.model, ctx.gpu, ctx.knobs, ctx.version, acc)
    return (
        f"max_model_len fits up to {acc.max_model_len_fit:,} by the estimate, range "
        f"{low:,} - {high:,}: " + "; ".join(reasons)
    )


RULES = (max_seq_len_exceeds_kv, no_cache_memory, kv_capacity_thin, predicted_misfit)
