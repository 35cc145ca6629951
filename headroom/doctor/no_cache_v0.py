"""No KV memory at all on V0 (step 4): which knob closes the gap, searched under V0's rules.

V0's profile is one whole max(max_model_len, 2048)-token prompt (v0_profile.py), so the
memory model's fit of max_model_len is a search over lengths, each with its own activation
peak (candidates._fit_len_at), and --enable-chunked-prefill is a candidate of its own: the
profile of one chunk, the context kept. The order is the table's, decided by the numbers:
1. gpu_memory_utilization (free) when a raise to at most 0.95 holds one request alone;
2. enable_chunked_prefill when it (with that raise) holds one request of the full length;
3. max_model_len, cut to the longest length that starts at the raised utilization (and the
   raise with it, which alone gives KV memory): "lead with max_model_len when it is the only
   knob that can".
Used by rules_no_cache when the release is V0 (given, read from the log, or the only one
whose account agrees with "no KV memory" when none is given) and the memory model's V0
account agrees with the log: no KV memory at the current settings. Otherwise None, and the
release-generic order answers.
"""

from __future__ import annotations

from dataclasses import replace

from headroom.doctor import actions as A
from headroom.doctor.candidates import best_fix, needed_utilization
from headroom.doctor.findings import Action
from headroom.doctor.memory_model import account
from headroom.doctor.v0_profile import (
    V0_RULES,
    chunk_tokens,
    chunked_prefill_action,
    v0_explains_no_kv,
    whole_prompt_tokens,
)
from headroom.doctor.versions import effective_version, format_version, parse_version

_ALLOW = frozenset({"gpu_memory_utilization", "max_model_len"})
_RAISE_COST = "less slack for the CUDA context, graphs and other processes on the GPU"


def v0_no_cache_actions(ctx, why: str, evidence: list[str]) -> list[Action] | None:
    """The V0 actions in the order that closes the gap, with their arithmetic appended to
    `evidence`; None when V0's rules do not apply or the model and GPU are unknown."""
    model, gpu = ctx.model, ctx.gpu
    if model is None or gpu is None:
        return None
    rules = _v0_rules(ctx, evidence)
    if rules is None:
        return None
    knobs = ctx.knobs
    try:
        now = account(model, gpu, knobs, rules)
        best = best_fix(model, gpu, knobs, rules, nodes=ctx.nodes, allow=_ALLOW)
    except (ArithmeticError, AttributeError, TypeError, ValueError):
        return None
    if now.kv_cache_gib > 0:
        return None  # V0's account leaves KV memory: the log says more than it knows
    tokens = whole_prompt_tokens(ctx, rules) or now.batched_tokens
    evidence.append(
        f"vLLM {rules}'s rules profile one whole {tokens:,}-token prompt: activation "
        f"{now.activation_gib:.2f} GiB, weights {now.weights_gib:.2f} GiB, KV cache "
        f"{now.kv_cache_gib:.2f} GiB of a {now.budget_gib:.2f} GiB budget"
    )
    changes = dict(best.changes) if best is not None else {}
    raise_to = changes.get("gpu_memory_utilization")
    cut = changes.get("max_model_len")
    chunked, chunked_util = _chunked(ctx, rules, evidence)
    raise_util = _raise(raise_to, why)
    if best is not None and cut is None and raise_util is not None:
        evidence.append(f"gpu_memory_utilization {raise_to} holds one request by V0's account")
        return [raise_util, *_present(chunked)]
    if chunked is not None and chunked_util is not None:
        lead = chunked
        companion = None
        if chunked_util > ctx.utilization + 1e-9:
            lead = replace(chunked, also=(("gpu_memory_utilization", chunked_util),))
            companion = _raise(chunked_util, f"{why}; with chunked prefill")
        shorter = (
            None
            if cut is None
            else A.lower_max_model_len(int(str(cut)), "what fits without chunked prefill")
        )
        if shorter is not None and raise_to is not None:
            shorter = replace(shorter, also=(("gpu_memory_utilization", raise_to),))
        return [lead, *_present(companion), *_present(shorter)]
    if cut is not None:
        length = int(str(cut))
        shorter = A.lower_max_model_len(
            length,
            f"V0's profile and the one request both shrink with it: {length:,} tokens start "
            f"by V0's account" + (f" at gpu_memory_utilization {raise_to}" if raise_to else ""),
        )
        if raise_util is not None:
            shorter = replace(shorter, also=(("gpu_memory_utilization", raise_to),))
        if chunked is not None:
            chunked = replace(chunked, why=chunked.why + "; not enough alone by V0's account")
        return [shorter, *_present(raise_util), *_present(chunked)]
    return None


def _present(action: Action | None) -> tuple[Action, ...]:
    return () if action is None else (action,)


def _v0_rules(ctx, evidence: list[str]) -> str | None:
    """The V0 release to reason with: the known one when it is V0 with a whole-prompt
    profile, else the one only V0 explains (release unknown)."""
    version = parse_version(ctx.version)
    if whole_prompt_tokens(ctx) is not None:
        # V0 as given, or chunked prefill turned off (V1 0.12+, or the newest rules)
        return format_version(version or effective_version(None))
    if version is not None:
        return None
    found = v0_explains_no_kv(ctx)
    if found is None:
        return None
    evidence.append(found[1])
    return found[0]


def _chunked(ctx, rules: str, evidence: list[str]) -> tuple[Action | None, float | None]:
    """(the chunked-prefill action or None, the utilization at which it holds one request
    of the full length by V0's account, or None when no utilization <= 0.95 does)."""
    action = chunked_prefill_action(ctx, "a smaller start-up profile leaves room for KV", rules)
    if action is None:
        return None, None
    version = effective_version(rules)
    knobs = replace(ctx.knobs, chunked_prefill=True)
    try:
        acc = account(ctx.model, ctx.gpu, knobs, rules)
        need = needed_utilization(ctx.model, ctx.gpu, knobs, rules, acc.max_model_len)
    except (ArithmeticError, AttributeError, TypeError, ValueError):
        return action, None
    util = None
    if acc.fits:
        util = ctx.utilization
    elif need is not None and need <= A.MAX_UTILIZATION:
        util = max(need, ctx.utilization)
    evidence.append(
        f"with chunked prefill ({chunk_tokens(ctx, version):,}-token profile) the activation is "
        f"{acc.activation_gib:.2f} GiB and the KV cache {acc.kv_cache_gib:.2f} GiB at "
        f"gpu_memory_utilization {ctx.utilization}: "
        + (
            f"one request of {acc.max_model_len:,} tokens fits at gpu_memory_utilization {util}"
            if util is not None
            else f"not one request of {acc.max_model_len:,} tokens at any utilization <= "
            f"{A.MAX_UTILIZATION}"
        )
    )
    return action, util


def _raise(value, why: str) -> Action | None:
    if value is None:
        return None
    return Action("gpu_memory_utilization", "raise", float(value), why, _RAISE_COST)


__all__ = ["V0_RULES", "v0_no_cache_actions"]
