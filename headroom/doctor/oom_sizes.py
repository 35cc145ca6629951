"""What the sizes say about a CUDA OOM the log does not place.

A bare OOM line, a title or a person's words do not say where memory ran out; the numbers
the input carries can still decide between the causes public threads find, each answered
the OOM's way (less memory per GPU, never a higher utilization):

- idle GPUs: the input shows more GPUs (--gpus, CUDA_VISIBLE_DEVICES) than TP x PP x DP
  uses, and the OOM says this process filled its GPU beyond vLLM's budget (total x
  utilization) before the engine served anything. The weights and the start-up profile are
  what fill a GPU past the budget before the KV cache exists, and both split over TP: raise
  TP over the idle GPUs first (vllm#4417: "To enable usage of multiple GPUs, use the
  tensor_parallel_size=<num_gpus> option"), lower the utilization second. Not when the
  weights are known to take under half the budget (then the GPUs are not what is missing).
- a long max_model_len the start-up profile runs whole: rules_long_context.py.
"""

from __future__ import annotations

from headroom.doctor import actions as A
from headroom.doctor.findings import Action, Finding, compact_actions
from headroom.doctor.oom_numbers import parse_oom, weights_per_gpu
from headroom.doctor.rules_preflight import lowest_holding_tp, sizing

_TP_COST = "more GPUs, and an all-reduce on every layer"


# Log kinds that show the engine got past the start-up profile: it sized a KV cache or served
PROFILED = frozenset(
    {
        "kv_memory_available", "kv_memory_reserved", "kv_cache_tokens", "kv_cache_blocks",
        "max_concurrency", "memory_summary", "cuda_graph_memory", "startup_complete", "stats",
        "preemption", "no_cache_memory", "max_seq_len_exceeds_kv",
    }
)  # fmt: skip


# The KV cache's block count, V0's "# GPU blocks: N, # CPU blocks: M" and V1's (0.6.5-0.7,
# v1/executor/uniproc_executor.py and ray_executor.py) "# GPU blocks: N" alone: logged once
# the profile passed and the cache was sized.
_BLOCKS_LINE = "# GPU blocks: "


def past_profile(ctx, event=None) -> bool:
    """Whether the log shows the start-up profile passed (before `event`, when given)."""
    events = ctx.events
    if event is not None and event in events:
        events = events[: events.index(event)]
    if any(e.kind in PROFILED for e in events):
        return True
    before = ctx.lines_before(event, count=400) if event is not None else ctx.raw_lines
    return any(_BLOCKS_LINE in line for line in before)


def _number(fields, key: str) -> float | None:
    value = fields.get(key)
    return float(value) if isinstance(value, int | float) and value > 0 else None


def gpus_at_hand(ctx) -> tuple[int, str] | None:
    """The GPUs vLLM could use and which input says so: CUDA_VISIBLE_DEVICES on the command
    line, else the described GPUs (--gpus, NVML) per node."""
    cmd = ctx.inputs.command
    for word in getattr(cmd, "launcher", ()) or ():
        if str(word).startswith("CUDA_VISIBLE_DEVICES="):
            devices = [d for d in str(word).split("=", 1)[1].split(",") if d.strip()]
            return len(devices), f"CUDA_VISIBLE_DEVICES={','.join(devices)}"
    if ctx.gpu is not None and ctx.gpu.count:
        return ctx.gpu.count, f"{ctx.gpu.count} GPUs given"
    return None


def _world(ctx) -> tuple[int, str]:
    knobs = ctx.knobs
    dp = ctx.arg("data_parallel_size")
    dp = int(dp) if isinstance(dp, int | str) and str(dp).isdigit() else 1
    said = "the command's" if ctx.inputs.command is not None else "vLLM's default (no command)"
    if ctx.inputs.command is None and getattr(ctx.facts, "tensor_parallel_size", None):
        said = "the engine's config line"
    return max(knobs.tp, 1) * max(knobs.pp, 1) * max(dp, 1), said


def _held(line: str) -> float | None:
    """What this process holds on the GPU the OOM names."""
    nums = parse_oom(line)
    if nums.this_process is not None:
        return nums.this_process
    if nums.listed:
        return max(nums.listed)  # 2.1 lists this process among the others
    return nums.torch_reserved


def idle_gpus(ctx, event, phase: str, evidence: list[str]) -> Finding | None:
    """More GPUs at hand than TP x PP x DP uses, and this process filled its GPU past the
    budget at start-up: spread the model over them (module docstring)."""
    if phase not in ("unknown", "activation") or event.fields.get("from_words"):
        return None
    if past_profile(ctx, event):
        return None  # the weights and the profile fit at this TP: what overflowed came later
    at_hand, world = gpus_at_hand(ctx), _world(ctx)
    if at_hand is None or at_hand[0] <= world[0]:
        return None
    index = event.fields.get("gpu")
    if isinstance(index, int) and index >= world[0]:
        # The OOM is on a GPU past the ranks TP x PP x DP in force would use (a worker of a
        # larger TP, or a GPU CUDA_VISIBLE_DEVICES reordered): the TP in force is not known.
        return None
    total = _number(event.fields, "total_gib") or (ctx.gpu.min_usable_gib if ctx.gpu else None)
    held = _held(event.line)
    if not total or held is None:
        return None
    budget = total * ctx.utilization
    weights = weights_per_gpu(ctx)
    if held < budget or (weights is not None and weights < 0.5 * budget):
        return None
    knobs = ctx.knobs
    sized = sizing(ctx)
    tp = lowest_holding_tp(ctx, sized) if sized is not None and ctx.gpu is not None else None
    if sized is not None and ctx.gpu is not None and tp is None:
        return None  # no TP on these GPUs holds the weights: the weights finding's case
    layout = ctx.known("tensor_parallel_size")
    why = (
        f"{at_hand[1]} and TP {knobs.tp} x PP {knobs.pp} ({world[1]}) uses {world[0]}"
        if layout
        else f"{at_hand[1]}, and if TP x PP was left at vLLM's default (1 x 1) one is in use"
    ) + ": the weights and the start-up profile split over TP"
    said = "" if ctx.known("gpu_memory_utilization") else ", if left at its default"
    found = [
        *evidence,
        f"this process holds {held:.2f} GiB of {total:.2f} GiB, past vLLM's budget of "
        f"{budget:.2f} GiB ({ctx.utilization:g} x total{said}) with no sign in the log that "
        "the engine had started",
        f"{at_hand[1]}; TP x PP x DP in force is {world[0]} ({world[1]})"
        if layout
        else f"{at_hand[1]}; the TP x PP x DP in force is not known (no command line): "
        "vLLM's default is 1 x 1 x 1, and the command line (after --) would say",
    ]
    if weights is None:
        found.append(
            "the model's size is not known: with small weights a lower utilization alone "
            "fixes it, with large ones only more GPUs do (--model-config would decide)"
        )
    acts = [
        Action("tensor_parallel_size", "raise", tp, why, _TP_COST, step=1),
        A.lower_kv_memory(ctx, None, "more room outside vLLM's budget for what ran out"),
    ]
    title = f"Out of GPU memory on one GPU of {at_hand[0]}: TP {knobs.tp} leaves the rest idle"
    if not layout:
        title = (
            f"Out of GPU memory on one GPU of {at_hand[0]}: if TP was left at its default 1, "
            "the rest sit idle"
        )
    return Finding("cuda-oom-idle-gpus", 1, "error", title, tuple(found), compact_actions(acts))
