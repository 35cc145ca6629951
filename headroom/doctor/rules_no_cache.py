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
from headroom.doctor.no_cache_alternatives import release_alternatives, unsized_actions
from headroom.doctor.no_cache_v0 import V0_RULES, v0_no_cache_actions
from headroom.doctor.versions import format_version, others_in_budget, parse_version


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
    note = _others_note(ctx)
    if note:
        evidence.append(note)
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


def _others_note(ctx) -> str | None:
    """In the releases that deduct every process's memory on the GPU from this instance's
    budget (versions.others_in_budget), say so: a second instance or another program then
    needs a higher utilization here, never a lower one; with the estimate's KV left over, say
    how much of the GPU the model alone does not explain."""
    version = parse_version(ctx.version)
    if version is None or not others_in_budget(version):
        return None
    acc = ctx.account
    unexplained = (
        f"; the estimate leaves {acc.kv_cache_gib:.2f} GiB of KV cache, so at least that much "
        "on this GPU is not this model's"
        if acc is not None and acc.kv_cache_gib > A.MARGIN * acc.gpu_usable_gib
        else ""
    )
    return (
        f"vLLM {format_version(version)} deducts every process's memory on the GPU from this "
        "instance's budget (total x utilization - all memory in use): with another instance "
        "or program on it, this utilization must cover that memory too (0.9.1+, PR #18974: "
        f"each instance's share is its own){unexplained}"
    )


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
