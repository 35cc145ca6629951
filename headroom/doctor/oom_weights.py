"""A CUDA OOM whose cause is the weights: their share per GPU at this TP x PP does not fit.

Then no other process, graph or batch setting is the root cause, and a CUDA OOM never wants
a higher utilization (the five-step table): step 1 answers, with the lowest TP (x PP) that
holds the weights and one request (searched against the memory model), a quantized
checkpoint after it (never for one that already is quantized), or, when no TP on the given
GPUs holds them, no knob at all (a GPU with more memory, said in the evidence).

The weights "do not fit" when:
- the memory model sizes them from the config (exact to a few per cent): their share is at
  least vLLM's budget, CUDA total x gpu_memory_utilization in force (nothing is left for the
  activation peak and the KV cache; raising the utilization is the KV shortage's knob, not an
  OOM's), or at least MAX_UTILIZATION x total whatever the utilization;
- only the parameter count in the name sizes them (coarse: "7B" is 6.7-7.6 billion): their
  share is above the whole GPU the OOM message names (else the one --gpus describes).
"""

from __future__ import annotations

from dataclasses import replace

from headroom.doctor import actions as A
from headroom.doctor.candidate_actions import fix_actions
from headroom.doctor.candidates import is_quantized
from headroom.doctor.estimate_error import KV_ESTIMATE_ERROR_GIB, KV_ESTIMATE_ERROR_REL
from headroom.doctor.findings import Action, Finding, compact_actions
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.known_knobs import gpus_in_all
from headroom.doctor.memory_model import account
from headroom.doctor.model_bytes import GIB
from headroom.doctor.oom_sizes import gpus_at_hand
from headroom.doctor.rules_preflight import lowest_holding_tp, no_tp_holds, sizing, tp_allowed

WHY = "the weights alone do not fit this many GPUs"
TP_COST = "more GPUs, and an all-reduce on every layer"


def _oom_total(ctx) -> float | None:
    events = ctx.of("cuda_oom")
    value = events[0].fields.get("total_gib") if events else None
    return float(value) if isinstance(value, int | float) and value > 0 else None


def weights_do_not_fit(ctx) -> str | None:
    """Why the weights alone do not fit these GPUs at this TP x PP, or None (see the module
    docstring for when they do not). Without a command line the TP x PP in use is not known
    (known_knobs): the weights are a cause only when no layout the GPUs at hand allow holds
    them; when one does, the conditional is rules_preflight's (weights_fit_from)."""
    if ctx.known("tensor_parallel_size"):
        return _weights_at_knobs(ctx)
    gpus = gpus_in_all(ctx)
    if gpus is None or weights_fit_from(ctx) is not None or _weights_at_knobs(ctx) is None:
        return None  # some layout holds them, or nothing says how many GPUs there are
    why = _weights_at_knobs(ctx, "on one GPU")
    return f"{why}; no TP x PP the {gpus} GPUs at hand allow holds them"


def weights_fit_from(ctx, hold: float = 1.0) -> tuple[int, int] | None:
    """With the TP x PP in use unknown: the smallest layout (TP, PP), within the GPUs at hand
    (up to SEARCH_GPUS when their count is not known), whose share of the weights fits the
    budget by the same test as weights_do_not_fit (`hold`: within that share of it, room
    left for the activations and a KV cache); None when none does, or when TP 1 fits."""
    sized = sizing(ctx)
    if sized is None or _weights_at_knobs(ctx) is None:
        return None
    limit = gpus_in_all(ctx) or SEARCH_GPUS
    knobs = ctx.knobs
    for world in range(2, limit + 1):
        for tp in sorted((t for t in range(1, world + 1) if world % t == 0), reverse=True):
            pp = world // tp
            share = sized.per_gpu(tp, pp, knobs.quantization)
            if tp_allowed(ctx, tp) and not too_big(ctx, share, hold):
                return tp, pp
    return None


# Searched when the GPUs at hand are not known: eight nodes of eight GPUs.
SEARCH_GPUS = 64


def too_big(ctx, share: float, hold: float = 1.0) -> bool:
    """The test weights_do_not_fit applies to a share of the weights per GPU."""
    acc = ctx.account
    if acc is not None:
        if share >= acc.gpu_usable_gib * A.MAX_UTILIZATION * hold:
            return True
        return acc.kv_budget_knob == "gpu_memory_utilization" and share >= acc.budget_gib * hold
    total = _oom_total(ctx) or (ctx.gpu.min_usable_gib if ctx.gpu is not None else None)
    return total is not None and share >= total * hold


def _weights_at_knobs(ctx, where: str | None = None) -> str | None:
    acc = ctx.account
    if acc is None:
        return _weights_too_big_by_name(ctx, where)
    where = where or f"per GPU at TP {acc.tp} x PP {acc.pp}"
    if acc.weights_gib >= acc.gpu_usable_gib * A.MAX_UTILIZATION:
        return (
            f"the weights alone are {acc.weights_gib:.2f} GiB {where}, more than "
            f"{A.MAX_UTILIZATION} x {acc.gpu_usable_gib:.2f} GiB"
        )
    if acc.kv_budget_knob == "gpu_memory_utilization" and acc.weights_gib >= acc.budget_gib:
        return (
            f"the weights alone are {acc.weights_gib:.2f} GiB {where}, at least vLLM's budget "
            f"of {acc.budget_gib:.2f} GiB ({acc.utilization:g} x {acc.gpu_usable_gib:.2f} GiB): "
            "nothing is left for the activation peak and the KV cache"
        )
    return None


def _weights_too_big_by_name(ctx, where_tp: str | None = None) -> str | None:
    """Without the memory model's account: the weights (the parameter count in the model's
    name, in the bytes --quantization or --dtype say; rules_preflight.sizing) against the GPU
    size the OOM message names, else the described GPU (vLLM splits the weights over TP x
    PP). Only a clear case counts: a share above the whole GPU."""
    total, where = _oom_total(ctx), "the OOM names"
    if not total and ctx.gpu is not None:
        total, where = ctx.gpu.min_usable_gib, "given (--gpus)"
    sized = sizing(ctx)
    if not total or sized is None:
        return None
    share = sized.per_gpu(ctx.knobs.tp, ctx.knobs.pp, ctx.knobs.quantization)
    if share < total:
        return None
    where_tp = where_tp or f"per GPU at TP {ctx.knobs.tp} x PP {ctx.knobs.pp}"
    return f"{sized.source}: {share:.1f} GiB {where_tp}, more than the {total:.2f} GiB GPU {where}"


def _oom_gpu(ctx):
    """The GPU spec to search on: the described one, else as many GPUs of the size the OOM
    message names as CUDA_VISIBLE_DEVICES lists (known), else a full node of 8 (assumed and
    said)."""
    if ctx.gpu is not None:
        return ctx.gpu, True
    total = _oom_total(ctx)
    if not total:
        return None, False
    visible = gpus_at_hand(ctx)
    count = visible[0] if visible else 8
    return parse_gpu_spec(f"{count}xGPU:{total:.2f}"), visible is not None


def no_kv_room(ctx) -> str | None:
    """Why the memory account (weights + activation peak + overhead + KV vs GPU memory x
    utilization, memory_model) leaves no KV cache for one max_model_len request even at the
    utilization in force, or None. Then a lower utilization cannot be a CUDA OOM's fix: past
    this OOM vLLM would stop at its own KV-cache error, and further down only sooner. The GPU
    is the described one, else one of the size the OOM message names; needs the shape."""
    gpu, _known = _oom_gpu(ctx)
    if ctx.model is None or gpu is None or ctx.knobs.kv_cache_memory_bytes:
        return None
    if ctx.model.sliding_window:
        # memory_model counts every layer's K/V per token; vLLM's hybrid KV manager keeps
        # only a window for sliding-window layers (gpt-oss, Gemma 2/3): one request's need
        # would be overstated, and the test could say "no room" where there is room
        return None
    try:
        acc = account(ctx.model, gpu, ctx.knobs, ctx.version)
    except (ArithmeticError, AttributeError, TypeError, ValueError):
        return None
    if not _short_of_one_request(acc):
        return None
    return (
        f"at gpu_memory_utilization {acc.utilization:g} vLLM's budget is {acc.budget_gib:.2f} "
        f"GiB per GPU: {acc.weights_gib:.2f} GiB of weights, {acc.activation_gib:.2f} GiB of "
        f"activations and {acc.overhead_gib:.2f} GiB of overhead leave "
        f"{max(acc.kv_cache_gib, 0.0):.2f} GiB of KV cache, less than one "
        f"{acc.max_model_len:,}-token request: a lower utilization leaves less"
    )


def _short_of_one_request(acc) -> bool:
    """The KV cache holds fewer than max_model_len tokens by more than the estimate's
    measured error (estimate_error: 10 % of the KV memory, at least 0.25 GiB): near the
    edge the account cannot say, and the table's order stands."""
    error_gib = max(acc.kv_cache_gib * KV_ESTIMATE_ERROR_REL, KV_ESTIMATE_ERROR_GIB)
    error_tokens = int(error_gib * GIB // max(acc.kv_bytes_per_token, 1))
    return acc.kv_cache_gib <= 0 or acc.usable_tokens + error_tokens < acc.max_model_len


def weights_finding(
    ctx,
    evidence: list[str],
    weights_alone: str | None,
    title: str = "Out of GPU memory while loading the weights",
    why: str = WHY,
    finding_id: str = "cuda-oom-weights",
) -> Finding:
    """The weights do not fit: the lowest TP (x PP) that holds them and one request, searched
    against the memory model; a quantized checkpoint after it, and never for a checkpoint
    that already is quantized. no_kv_room's finding is the same search under its own title,
    reason and id."""
    evidence = list(evidence)
    acc = ctx.account
    if weights_alone:
        evidence.append(weights_alone)
    elif not ctx.known("tensor_parallel_size"):
        # The log places the OOM in the weight loading; the layout it ran at is not given.
        layout = weights_fit_from(ctx)
        held = (
            f": TP {layout[0]} x PP {layout[1]} is the smallest that holds them" if layout else ""
        )
        evidence.append(f"the TP x PP in use is not known (no command line){held}")
    elif acc is not None:
        evidence.append(
            f"estimate: {acc.weights_gib:.2f} GiB of weights per GPU at TP {acc.tp} "
            f"on {acc.gpu_usable_gib:.2f} GiB GPUs"
        )
    # never a higher utilization: for a CUDA OOM that is the wrong way (the five-step table)
    allow = frozenset({"tensor_parallel_size", "pipeline_parallel_size", "max_model_len",
                       "quantization"})  # fmt: skip
    gpu, known = _oom_gpu(ctx)
    acts: list[Action] = []
    if ctx.model is not None and gpu is not None:
        view = GpuView(ctx, gpu)
        acts, checked = fix_actions(view, why, allow=allow, step=1)
        evidence += checked
        if acts and not known:
            evidence.append(
                f"the GPU count is not known: searched on up to 8 GPUs of {gpu.usable_gib:.2f} GiB "
                "(the size the OOM message names)"
            )
            acts = [replace(a, why=f"{a.why} (if the node has {a.value} GPUs)")
                    if a.knob == "tensor_parallel_size" else a for a in acts]  # fmt: skip
    elif weights_alone and ctx.gpu is not None and (sized := sizing(ctx)) is not None:
        # No config, but the name's size and the given GPUs: the lowest TP that holds the
        # weights, or none on these GPUs (then no knob: a bigger GPU, said in the evidence).
        tp = lowest_holding_tp(ctx, sized)
        if tp is None:
            evidence += no_tp_holds(ctx, WHY)
            return Finding("cuda-oom-weights", 1, "error",
                           "Out of GPU memory: the weights do not fit these GPUs at any TP",
                           tuple(evidence))  # fmt: skip
        acts = [Action("tensor_parallel_size", "raise", tp, f"{WHY}: TP {tp} holds them",
                       TP_COST, step=1)]  # fmt: skip
    if not acts:
        # Nothing to search with: more GPUs (TP) first, a quantized checkpoint second.
        acts = [Action("tensor_parallel_size", "raise", None, WHY + ": spread them over more",
                       TP_COST)]  # fmt: skip
        # model_read: a config too partial to size still says whether it is quantized
        if not is_quantized(ctx.model_read, ctx.knobs):
            acts.append(
                Action(
                    "quantization",
                    "set",
                    None,
                    "a quantized checkpoint (FP8, AWQ, GPTQ) halves or quarters the weights",
                    "some quality loss; needs a quantized checkpoint or an FP8-capable GPU",
                )
            )
    return Finding(
        finding_id,
        1,
        "error",
        title,
        tuple(evidence),
        compact_actions(acts),
    )


class GpuView:
    """The context with another GPU spec (the OOM message's size when none was given)."""

    def __init__(self, ctx, gpu) -> None:
        self._ctx, self.gpu = ctx, gpu

    def __getattr__(self, name):
        return getattr(self._ctx, name)
