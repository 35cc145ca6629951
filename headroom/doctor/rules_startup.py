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
from headroom.doctor.candidate_actions import fix_actions
from headroom.doctor.estimate_error import fit_range
from headroom.doctor.findings import Action, Finding, compact_actions
from headroom.doctor.model_bytes import GIB, kv_bytes_per_token
from headroom.doctor.rules_kv_pin import pinned_kv_start_failed
from headroom.doctor.rules_lengths import mamba_align_block_above_batch
from headroom.doctor.rules_no_cache import no_cache_memory
from headroom.doctor.v0_profile import (
    chunked_closes,
    chunked_closes_gib,
    chunked_prefill_action,
)
from headroom.doctor.versions import cudagraph_in_budget, effective_version


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
        from_vllm = bool(estimate)
        if not estimate:
            estimate = ratio_estimate(max_len, nums, evidence)
        extra = None
        if nums.get("needed_gib", 0) > nums.get("available_gib", 0) and "available_gib" in nums:
            extra = nums["needed_gib"] - nums["available_gib"]
            evidence.append(
                f"short by {nums['needed_gib']:.2f} - {nums['available_gib']:.2f} = {extra:.2f} GiB of KV cache"
            )
        elif "kv_tokens" in nums and max_len:
            extra = A.extra_gib_for_tokens(ctx, max_len, int(nums["kv_tokens"]))
            if extra is None:
                extra = _extra_by_the_log(ctx, max_len, int(nums["kv_tokens"]))
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
        cpu_space = A.cpu_kv_space(ctx, first_line, scale, why_budget)
        budget = cpu_space or A.raise_kv_budget(ctx, gap, why_budget, scale)
        shorter = (
            A.lower_max_model_len(
                int(estimate),
                "vLLM's own estimate of what fits"
                if from_vllm
                else "about what fits, by vLLM's two GiB numbers",
            )
            if estimate
            else None
        )
        # The budget raise leads only when it can close the gap: --kv-cache-memory-bytes
        # (raised by the gap, exactly), or a utilization <= 0.95 that covers it on this GPU
        # (or on the smallest GPU the log allows). Else vLLM's own estimate leads, and the
        # raise stays (later) only if some larger GPU could make it enough.
        verdict = "closes" if cpu_space else A.budget_raise_verdict(ctx, gap)
        # A max_model_len cut below _USABLE_LEN tokens serves almost no prompt: then the
        # budget leads even when it may not close the whole gap.
        too_short = estimate is not None and int(estimate) < _USABLE_LEN and budget is not None
        if verdict != "closes" and shorter is not None and not too_short:
            total = ctx.gpu_total
            if gap is not None and total is not None:
                room = max(A.MAX_UTILIZATION - ctx.utilization, 0.0)
                evidence.append(
                    f"GPU total {'' if total[1] else 'at least '}{total[0]:.2f} GiB: "
                    f"gpu_memory_utilization {ctx.utilization_said} -> {A.MAX_UTILIZATION} adds "
                    f"{'' if total[1] else 'about '}{room * total[0]:.2f} GiB, "
                    f"not the {gap:.2f} GiB needed"
                )
            acts = [shorter, budget]
        else:
            acts = [budget, shorter]
        # V0 whole-prompt profile (v0_profile.py): chunked prefill gives the profile's
        # activation back and keeps the context; it leads when the raise cannot close the
        # gap and the memory model says it does
        chunked = None if cpu_space else chunked_prefill_action(ctx, why_budget)
        if chunked is not None:
            held = int(nums.get("kv_tokens") or 0)
            closes, line = (
                chunked_closes(ctx, held, max_len) if held else chunked_closes_gib(ctx, gap)
            )
            evidence.extend([line] if line else [])
            acts.insert(0 if closes and verdict != "closes" else len(acts), chunked)
        acts.append(A.fp8_kv(ctx, "halves the KV bytes per token, so twice the tokens fit"))
        acts.append(graphs_in_budget_eager(ctx, gap))
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


def _extra_by_the_log(ctx, max_len: int, kv_tokens: int) -> float | None:
    """The KV GiB per GPU one request lacks, by the log's own bytes per token (its KV GiB
    over its KV tokens: V0's "Memory profiling results ... kv_cache_size" or "reserved for KV
    Cache is X GiB" beside "# GPU blocks") when the model's shape is unknown."""
    ledger = getattr(ctx.facts, "ledger", None)
    kv_gib = getattr(ledger, "kv_gib", None)
    if not kv_gib or kv_gib <= 0 or kv_tokens <= 0 or max_len <= kv_tokens:
        return None
    return (max_len - kv_tokens) * kv_gib / kv_tokens


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
    if not ctx.known("tensor_parallel_size"):
        evidence.insert(0, "the TP x PP in use is not known (no command line): the "
                        f"estimate is for TP {acc.tp} x PP {acc.pp}")  # fmt: skip
    if not acc.fits:
        if not ctx.known("max_model_len"):
            evidence.insert(0, (
                "the max_model_len in force is not known (no command line): "
                f"{acc.max_model_len:,} is vLLM's default for this model (derived from its "
                "config); the estimate is for that"))  # fmt: skip
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


def ratio_estimate(max_len: int, nums: dict, evidence: list[str]) -> int | None:
    """V1's refusal cut before "Based on the available memory, the estimated maximum model
    length is N": N from its two GiB numbers. A full-attention request's KV is linear in its
    length (cdiv(len, block) pages per layer), so N ~ max_len x available / needed; each
    number is printed to 2 decimals, so the low end of their rounding is taken. (Sliding-window
    layers cost the same at any length above the window: there vLLM's own N is a little lower.)"""
    needed, available = nums.get("needed_gib"), nums.get("available_gib")
    if not max_len or not needed or available is None or available >= needed:
        return None
    share = max(available - 0.005, 0.0) / (needed + 0.005)
    estimate = int(max_len * share) // 16 * 16
    if estimate < 16:
        return None
    evidence.append(
        f"vLLM's own estimate is not in the text: {available:.2f} / {needed:.2f} GiB of "
        f"{max_len:,} tokens is about {estimate:,}"
    )
    return estimate


def graphs_in_budget_eager(ctx, gap_gib: float | None) -> Action | None:
    """--enforce-eager as a further way to close a KV gap, only in releases that take the
    CUDA-graph estimate out of the KV budget (0.20+; "Estimated CUDA graph memory: X GiB total"
    in 0.32/0.33 gpu_model_runner.py), and not when the log's estimate is smaller than the gap."""
    if ctx.knobs.enforce_eager or not cudagraph_in_budget(effective_version(ctx.version)):
        return None
    graphs = getattr(ctx.facts, "cuda_graph_gib", None)
    if graphs is not None and gap_gib is not None and graphs < gap_gib:
        return None
    size = f" ({graphs:.2f} GiB here)" if graphs is not None else ""
    return A.enforce_eager(
        f"from 0.20 the CUDA-graph estimate{size} is taken out of the KV budget: eager mode "
        "gives it to the KV cache"
    )


RULES = (
    max_seq_len_exceeds_kv,
    no_cache_memory,
    pinned_kv_start_failed,
    mamba_align_block_above_batch,
    kv_capacity_thin,
    predicted_misfit,
)
