"""No memory for the KV cache at all: which knob first (step 4 of the table).

vLLM's texts: "No available memory for the cache blocks. Try increasing
`gpu_memory_utilization` when initializing the engine." (every release read, 0.2.7-0.33.0: V0's
llm_engine.py / worker.py, V1's kv_cache_utils.py / kv_cache_planning.py), "Cannot auto-fit
max_model_len" (0.32+), V1's negative "Available KV cache memory: -2.14 GiB" (gpu_worker.py) and
V0's "# GPU blocks: 0". The weights and the start-up profile's activation peak fill the budget.

The table says utilization first, then max_model_len, one at a time. What each knob can do
here, by vLLM's own profile (versions.RELEASE_TABLE):
- gpu_memory_utilization: the only knob vLLM's message names. Up to 0.95 it adds
  (0.95 - u) x total per GPU. It cannot work when u is already >= 0.95, or when the log's
  negative budget is larger than that: then the next knob leads (the raise stays, after it).
- max_model_len: V0 profiles one prefill of max_num_batched_tokens = max(max_model_len, 2048)
  (chunked prefill off), so a shorter context shrinks the peak itself. V1 profiles
  max_num_batched_tokens whatever max_model_len is: there it cannot make KV memory, only make
  the small KV cache the raise leaves enough for one request.
- max_num_batched_tokens (V1) and max_num_seqs (the sampler's logits per sequence, both).
- enforce_eager: only where the CUDA-graph estimate is taken out of the budget (0.20+);
  before that graphs are captured after the KV cache is sized, so eager frees nothing here.
- more GPUs (TP) last.
When the model's shape is known, rules_startup sizes one request and searches instead; these
alternatives then follow its actions.
"""

from __future__ import annotations

from dataclasses import replace

from headroom.doctor import actions as A
from headroom.doctor.findings import Action, Finding, compact_actions
from headroom.doctor.log_memory import available_kv_from_log
from headroom.doctor.memory_model import fit_len
from headroom.doctor.model_bytes import GIB, kv_bytes_per_token
from headroom.doctor.no_cache_v0 import V0_RULES, v0_no_cache_actions
from headroom.doctor.v0_profile import chunked_prefill_action
from headroom.doctor.versions import (
    batch_defaults,
    cudagraph_in_budget,
    effective_version,
    format_version,
    is_v1,
)


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
    version_text = ctx.version
    if sizing is None or "VLLM_CPU_KVCACHE_SPACE" in evidence[0]:
        # no model shape (one request cannot be sized), or V0's CPU backend (an env var)
        acts = unsized_actions(ctx, why, evidence)
    else:
        gap, one_request, max_len, evidence_line = sizing
        evidence.append(evidence_line)
        budget = A.raise_kv_budget(ctx, gap, f"{why}; one request of {max_len:,} tokens must fit")
        v0 = v0_no_cache_actions(ctx, why, evidence)
        if v0 is not None:
            # V0's own account (no_cache_v0.py): fewer batched tokens is no V0 knob (below
            # max_model_len vLLM refuses it without chunked prefill)
            acts = [*v0, wider]
            version_text = V0_RULES if ctx.version is None else ctx.version
        elif A.budget_raise_verdict(ctx, gap) == "closes":
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
        # the release's other knobs after the sized ones (each knob once)
        first = next((a for a in acts if a is not None), None)
        raised = first is not None and first.knob == "gpu_memory_utilization"
        rest = release_alternatives(ctx, raised=raised, version_text=version_text)
        acts = _each_knob_once([*acts, *rest])
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


def _each_knob_once(acts) -> list[Action | None]:
    seen: set[str] = set()
    out: list[Action | None] = []
    for a in compact_actions(acts):
        if a.knob not in seen:
            seen.add(a.knob)
            out.append(a)
    return out


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
            f"GPU total {about}{gib:.2f} GiB: gpu_memory_utilization {util:.2f} -> "
            f"{A.MAX_UTILIZATION} adds {room:.2f} GiB, not the {deficit:.2f} GiB (plus a margin) "
            "the budget is short: the next knob leads"
        )
        return None, None
    left = room - deficit
    evidence.append(
        f"GPU total {about}{gib:.2f} GiB: gpu_memory_utilization {util:.2f} -> "
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
    if version_text is not None and not is_v1(version):
        shorter = shorter_for(
            f"V0 ({format_version(version)}) profiles one whole max(max_model_len, 2048) "
            "prefill: a shorter context lowers the activation peak itself",
        )
        chunked = chunked_prefill_action(
            ctx, "a smaller start-up profile leaves room for KV", version_text
        )
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
