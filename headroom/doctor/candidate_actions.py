"""The best candidate configuration as a finding's actions, and each action checked.

candidates.py searches the configurations that pass every step; this module turns the best
one into actions, one knob at a time in the mitigation order (each naming the knobs it
cannot go without), and checks an action a rule advises against the steps the running
configuration passed, so that a fix for one step never breaks another.
"""

from __future__ import annotations

from headroom.doctor.candidates import (
    COST,
    KNOB_FIELD,
    MEMORY_CODES,
    TIER,
    apply,
    best_fix,
    problems,
    what_would_fit,
)
from headroom.doctor.estimate_error import fit_range
from headroom.doctor.findings import Action
from headroom.doctor.memory_model import Knobs, MemoryAccount

_HARDWARE = ("tensor_parallel_size", "pipeline_parallel_size", "quantization")


def action_problems(ctx, action) -> str | None:
    """Why applying `action` (with its coupled knobs) to the running configuration fails a
    step the configuration passed before, or (for TP, PP and quantized weights: hardware
    changes) still leaves no room for the KV cache; None when the memory model allows it.
    Advice without a value is not checked. (Quantization for memory is never generated for a
    checkpoint that already is quantized: search() and the OOM rule leave it out; a rule may
    still advise another checkpoint when the GPU cannot run this one's scheme.)"""
    # An unset of --enforce-eager is eager off (vLLM's default): CUDA graphs take memory again.
    value = False if (action.direction, action.knob) == ("unset", "enforce_eager") else action.value
    if value is None or action.knob not in KNOB_FIELD:
        return None
    changes = {action.knob: value, **dict(action.also)}
    try:
        after_knobs = apply(ctx.knobs, changes)
        before, _ = problems(ctx.model, ctx.gpu, ctx.knobs, ctx.version, nodes=ctx.nodes)
        after, _ = problems(ctx.model, ctx.gpu, after_knobs, ctx.version, nodes=ctx.nodes)
    except (ArithmeticError, TypeError, ValueError):
        return None
    had = {p.code for p in before}
    # Layout problems (heads, node, GPUs, layers) must not appear; memory may only get
    # better (no KV at all > one request does not fit > the wanted tokens do not fit): a
    # step-4 change that goes part of the way is one knob of a fix, not a break.
    new = [p for p in after if p.code not in had and p.code not in MEMORY_CODES]
    worse = _memory_level(after) > _memory_level(before)
    if worse or (action.knob in _HARDWARE and _memory_level(after) >= 3):
        new += [p for p in after if p.code in MEMORY_CODES]
    return "; ".join(p.text for p in new) or None


def _memory_level(found) -> int:
    levels = {"no-kv": 3, "one-request": 2, "wanted": 1}
    return max((levels.get(p.code, 0) for p in found), default=0)


def _direction(before, after) -> str:
    if isinstance(after, bool) or isinstance(after, str) or before is None:
        return "set"
    try:
        return "raise" if after > before else "lower"
    except TypeError:
        return "set"


def _current(ctx_knobs: Knobs, name: str, util0: float, model=None):
    value = getattr(ctx_knobs, KNOB_FIELD[name])
    if value is None and name == "gpu_memory_utilization":
        return util0
    if value is None and name == "max_model_len" and model is not None:
        return model.max_position_embeddings  # vLLM's default: the model's own limit
    return value


def summary(acc: MemoryAccount, wanted: int | None = None) -> str:
    """One line of arithmetic for a checked configuration."""
    graphs = f" + graphs {acc.cudagraph_gib:.2f}" if acc.cudagraph_in_budget else ""
    need = wanted or acc.max_model_len
    return (
        f"checked (vLLM {acc.version} rules): TP {acc.tp} x PP {acc.pp}, budget "
        f"{acc.budget_gib:.2f} GiB per GPU - weights {acc.weights_gib:.2f} - activation "
        f"{acc.activation_gib:.2f} - overhead {acc.overhead_gib:.2f}{graphs} = KV "
        f"{acc.kv_cache_gib:.2f} GiB = {acc.usable_tokens:,} usable tokens >= {need:,}"
    )


def fix_actions(
    ctx,
    why: str,
    *,
    want_tokens: int | None = None,
    allow=None,
    step=None,
    margin=False,
    tp_divides: tuple[int, ...] = (),
):
    """(actions, evidence) for the best feasible candidate: one action per knob it changes,
    in the mitigation order, each carrying the knobs it cannot go without (`also`); or, when
    nothing fits these GPUs, advice naming what would. ([], []) without model and GPUs.
    `margin`: a cut of max_model_len goes to the low end of the estimate's range (its
    measured error, planner.fit_range), and says so."""
    model, gpu = ctx.model, ctx.gpu
    if model is None or gpu is None:
        return [], []
    base = ctx.knobs
    best = best_fix(model, gpu, base, ctx.version, nodes=ctx.nodes, want_tokens=want_tokens,
                    allow=allow, tp_divides=tp_divides)  # fmt: skip
    if best is None:
        options = what_would_fit(model, gpu, base, ctx.version, want_tokens=want_tokens)
        evidence = [f"no configuration of these {gpu.count} GPU(s) passes every step"]
        actions = []
        if options:
            evidence.append("would fit: " + "; ".join(options))
        for line in options:
            knob = ("tensor_parallel_size" if "GPUs of this kind" in line else
                    "kv_cache_dtype" if "fp8 KV" in line else "quantization")  # fmt: skip
            direction = "raise" if knob == "tensor_parallel_size" else "set"
            actions.append(Action(knob, direction, None, f"{why}: {line}", COST[knob]))
        return actions, evidence
    if not best.changes:
        return [], []
    util0 = ctx.utilization
    actions = []
    # The decisive change first (the costliest: without it nothing else helps), the cheaper
    # companions after it; each names what it cannot go without.
    changes = dict(best.changes)
    notes = [summary(best.account, want_tokens)]
    if margin and "max_model_len" in changes:
        low, high, reasons = fit_range(model, gpu, best.knobs, ctx.version, best.account)
        cut = int(str(changes["max_model_len"]))
        safe = max(min(low, cut) // 16 * 16, 16)
        if safe < cut:
            notes.append(
                f"max_model_len {safe:,}: the low end of the fit's range {low:,} - {high:,} "
                f"(estimated fit {cut:,}; {'; '.join(reasons)})"
            )
            changes["max_model_len"] = safe
    for name, value in sorted(changes.items(), key=lambda c: -TIER[c[0]]):
        others = tuple((k, v) for k, v in changes.items() if k != name)
        alone, _ = problems(model, gpu, apply(base, {name: value}), ctx.version, nodes=ctx.nodes,
                            want_tokens=want_tokens)  # fmt: skip
        also = others if alone else ()
        before = _current(base, name, util0, model)
        actions.append(
            Action(
                name,
                _direction(before, value),
                value,
                why,
                COST[name],
                also=also,
                step=step if name == "tensor_parallel_size" else None,
            )  # fmt: skip
        )
    return actions, notes
