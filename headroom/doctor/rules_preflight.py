"""Step 1 from the command line alone: do the weights fit the given GPUs at this TP x PP?

The weights come from the memory model when the model's config is known, else from the
parameter count in the model's name ("Llama-2-70b-hf": 70e9 x 2 bytes) in the bytes per
weight that --quantization, the name ("-AWQ", "-FP8") or --dtype say. vLLM splits them
over TP x PP; each GPU gives CUDA total x gpu_memory_utilization to weights, activations
and the KV cache. When the share alone fills that budget, vLLM cannot start (an OOM while
loading, or no memory for the cache blocks): the lowest TP on the given GPUs that holds
them (and divides the heads when they are known) is step 1's answer. When no TP on these
GPUs holds them, no knob does: a bigger GPU or a quantized checkpoint (said, not turned).

The finding is a warning ranked after every error and warning (steps.py): a real log line's
finding always comes first, and a log that shows the weights loaded silences it.
"""

from __future__ import annotations

from dataclasses import dataclass

from headroom.doctor import actions as A
from headroom.doctor.actions import floor2
from headroom.doctor.candidate_actions import fix_actions
from headroom.doctor.candidates import is_quantized
from headroom.doctor.findings import Action, Finding
from headroom.doctor.memory_model import CUDA_CONTEXT_GIB, heads_valid
from headroom.doctor.model_bytes import weight_bytes_per_param, weights_gib_per_gpu
from headroom.doctor.rules_parallel import bytes_per_param_from_name, params_b_from_name

GIB = 2**30
# The share of the budget the weights may take and still leave room for the activation
# peak and a KV cache (vLLM also needs both to start); coarse, like the name's count.
HOLD = 0.9
# Lines that show vLLM loaded the weights on these GPUs: then they fit, whatever the estimate.
_LOADED = frozenset(
    {
        "weights_loaded", "kv_memory_available", "kv_memory_reserved", "kv_cache_tokens",
        "kv_cache_blocks", "max_concurrency", "memory_summary", "cuda_graph_memory",
        "startup_complete", "stats", "preemption",
    }
)  # fmt: skip
_COST = "more GPUs, and an all-reduce on every layer: fast over NVLink, slow over PCIe"


@dataclass(frozen=True)
class WeightsSizing:
    """What the weights take per GPU at a TP x PP, and where the number comes from."""

    source: str
    total_gib: float | None  # all the weights (name-sized); None when the config sizes them
    model: object = None  # the config's shape, when that sizes them

    def per_gpu(self, tp: int, pp: int, quantization: str | None = None) -> float:
        if self.model is not None:
            return weights_gib_per_gpu(self.model, tp, pp, quantization)
        return (self.total_gib or 0.0) / max(tp * pp, 1)


def model_name(ctx) -> str:
    cmd = ctx.inputs.command
    named = getattr(cmd, "model", None) or getattr(ctx.facts, "model", None)
    return str(named or ctx.inputs.model_name or "")


def sizing(ctx) -> WeightsSizing | None:
    """The weights from the model's config, else from the parameter count in its name."""
    if ctx.model is not None:
        return WeightsSizing("the model's config", None, ctx.model)
    name = model_name(ctx)
    params_b = params_b_from_name(name)
    if params_b is None:
        return None
    quant = ctx.knobs.quantization
    dtype = str(ctx.arg("dtype") or "").lower()
    if quant:
        per_param, said = weight_bytes_per_param(str(quant), None), f"--quantization {quant}"
    elif (from_name := bytes_per_param_from_name(name)) is not None:
        per_param, said = from_name, "the name's bits"
    elif dtype in {"float32", "float"}:
        per_param, said = 4.0, "--dtype float32"
    else:
        per_param, said = 2.0, "16-bit"
    total = params_b * 1e9 * per_param / GIB
    return WeightsSizing(
        f"the name's {params_b:g}B parameters x {per_param:g} bytes ({said})", total
    )


def budget_gib(ctx) -> float | None:
    """What vLLM gives torch on the smallest GPU: CUDA total x gpu_memory_utilization."""
    gpu = ctx.gpu
    if gpu is None or not gpu.min_usable_gib:
        return None
    return gpu.min_usable_gib * ctx.utilization


def tp_allowed(ctx, tp: int) -> bool:
    """TP divides the heads when they are known (even from a config too partial to size);
    else a power of two, which divides the heads of nearly every model."""
    shape = ctx.model_read
    heads = getattr(shape, "num_attention_heads", None)
    if heads:
        if getattr(shape, "num_kv_heads", None):
            return heads_valid(shape, tp)
        return heads % tp == 0
    return tp & (tp - 1) == 0


def lowest_holding_tp(ctx, sized: WeightsSizing) -> int | None:
    """The lowest TP above the current one, inside one node of the given GPUs, whose share
    of the weights leaves room in the budget; None when none does."""
    budget, gpu = budget_gib(ctx), ctx.gpu
    if budget is None or gpu is None:
        return None
    knobs = ctx.knobs
    total_gpus = gpu.count * max(ctx.nodes, 1)
    for tp in range(knobs.tp + 1, gpu.count + 1):
        if tp * knobs.pp > total_gpus or not tp_allowed(ctx, tp):
            continue
        if sized.per_gpu(tp, knobs.pp, knobs.quantization) <= HOLD * budget:
            return tp
    return None


def log_shows_weights_fit(ctx) -> bool:
    if getattr(ctx.facts, "weights_gib", None):
        return True
    return any(e.kind in _LOADED for e in ctx.events)


def no_tp_holds(ctx, why: str) -> list[str]:
    """The advice, in words, when no TP on the given GPUs holds the weights."""
    quantized = ctx.knobs.quantization or bytes_per_param_from_name(model_name(ctx))
    if ctx.model_read is not None:
        quantized = quantized or is_quantized(ctx.model_read, ctx.knobs)
    other = "" if quantized else ", or a quantized checkpoint (FP8, AWQ, GPTQ)"
    return [f"{why}: no TP on these GPUs holds them; a GPU with more memory, more GPUs{other}"]


def weights_exceed_gpus(ctx) -> list[Finding]:
    """The command line alone: the weights' share per GPU fills the budget."""
    if ctx.model is not None and not ctx.events:
        return []  # rules_startup.predicted_misfit sizes it all before launch
    if ctx.of("heads_not_divisible", "kv_heads_not_divisible"):
        return []  # the head rule searches a TP that divides the heads and holds the weights
    if not ctx.known("tensor_parallel_size"):
        return []  # the TP x PP in use is not known: rules_weights_layout reasons over its range
    sized, budget = sizing(ctx), budget_gib(ctx)
    if sized is None or budget is None or log_shows_weights_fit(ctx):
        return []
    knobs = ctx.knobs
    share = sized.per_gpu(knobs.tp, knobs.pp, knobs.quantization)
    if share < budget:
        return []
    evidence = [
        f"weights {share:.2f} GiB per GPU at TP {knobs.tp} x PP {knobs.pp} ({sized.source}) "
        f">= {budget:.2f} GiB = {ctx.gpu.min_usable_gib:.2f} GiB x gpu_memory_utilization "
        f"{ctx.utilization_said}: nothing is left for activations and the KV cache"
    ]
    why = "the lowest TP whose share of the weights fits one GPU"
    acts: list[Action] = []
    if ctx.model is not None:
        allow = frozenset({"tensor_parallel_size", "pipeline_parallel_size",
                           "gpu_memory_utilization", "max_model_len"})  # fmt: skip
        searched, checked = fix_actions(ctx, why, allow=allow, step=1)
        if any(a.knob == "tensor_parallel_size" and a.value for a in searched):
            acts = list(searched)
        evidence += checked  # the search's arithmetic, or what would fit (more GPUs, FP8)
    if not acts:
        tp = lowest_holding_tp(ctx, sized)
        if tp is not None:
            after = sized.per_gpu(tp, knobs.pp, knobs.quantization)
            evidence.append(
                f"TP {tp}: {after:.2f} GiB of weights per GPU, within {HOLD:g} x the budget"
            )
            acts = [Action("tensor_parallel_size", "raise", tp, why, _COST, step=1)]
        else:
            evidence += no_tp_holds(ctx, "the weights do not fit")
    title = (
        f"The weights do not fit {ctx.gpu.min_usable_gib:.0f} GiB GPUs at TP {knobs.tp}"
        if acts
        else "The weights do not fit these GPUs at any TP"
    )
    return [Finding("preflight-weights", 1, "warning", title, tuple(evidence), tuple(acts))]


# Log kinds after which the utilization is the KV rules' to judge: the engine passed the
# start-up gate (it sized or used a KV cache), or the log asks for MORE KV budget.
_UTILIZATION_JUDGED = _LOADED | {"no_cache_memory", "max_seq_len_exceeds_kv",
                                 "free_memory_below_utilization", "prompt_exceeds_kv"}  # fmt: skip


def utilization_leaves_no_context(ctx) -> list[Finding]:
    """--gpu-memory-utilization so close to 1 that what it leaves outside vLLM's budget,
    CUDA total x (1 - utilization), cannot hold the process's own CUDA context. V1 (0.9+,
    vllm/v1/worker/gpu_worker.py) takes a snapshot after the context exists and refuses to
    start when free memory < total x utilization ("Free memory on device ... is less than
    desired GPU memory utilization"); V0 lets the KV cache take the rest and fails later.
    Lower it to what leaves the context (and as much again for NCCL/cuBLAS workspaces)."""
    util = ctx.knobs.gpu_memory_utilization
    total = (ctx.gpu_total or (None, False))[0]
    if util is None or not total or ctx.knobs.kv_cache_memory_bytes:
        return []
    if any(e.kind in _UTILIZATION_JUDGED for e in ctx.events):
        return []
    left = (1.0 - util) * total
    if left >= CUDA_CONTEXT_GIB:
        return []
    target = floor2(min(A.MAX_UTILIZATION, 1.0 - 2 * CUDA_CONTEXT_GIB / total))
    act = A.lower_utilization(ctx, target, "leaves room for the CUDA context outside the budget")
    evidence = (
        f"gpu_memory_utilization {util:g} of {total:.2f} GiB leaves {left:.2f} GiB outside "
        f"vLLM's budget, less than the ~{CUDA_CONTEXT_GIB} GiB CUDA context each process "
        "holds: vLLM 0.9+ refuses to start (free memory < total x utilization), older "
        "releases run out of memory later",
    )
    return [
        Finding(
            "preflight-utilization-above-free",
            4,
            "warning",
            f"gpu_memory_utilization {util:g} leaves no room for the CUDA context",
            evidence,
            (act,) if act is not None else (),
        )
    ]


RULES = (weights_exceed_gpus, utilization_leaves_no_context)
