"""The start-up memory gate: free memory below what --gpu-memory-utilization asks for means
other processes hold GPU memory, so lower the utilization to what is free (or stop them).
The other side of CUDA out-of-memory (rules_oom.py), which it follows in the rules' order.
"""

from __future__ import annotations

import re
from dataclasses import replace

from headroom.doctor import actions as A
from headroom.doctor.findings import Action, Finding, compact_actions
from headroom.doctor.oom_numbers import too_little_left, weights_per_gpu
from headroom.doctor.rules_preflight import lowest_holding_tp, no_tp_holds, sizing


def free_memory_below_utilization(ctx) -> list[Finding]:
    events = ctx.of("free_memory_below_utilization")
    if events:
        nums, first = events[0].fields, events[0].line.strip()
    else:
        found = _free_below_in_text(ctx)
        if found is None:
            return []
        nums, first = found
    evidence = [first]
    target = None
    if nums.get("free_gib") is not None and nums.get("total_gib"):
        target = nums["free_gib"] / nums["total_gib"] - 0.02
        evidence.append(
            f"{nums['total_gib'] - nums['free_gib']:.2f} GiB is held by other processes"
        )
    weights = weights_per_gpu(ctx)
    if nums.get("total_gib") and weights and weights >= nums["total_gib"] * A.MAX_UTILIZATION:
        return [_weights_exceed_gpu(ctx, [first], weights, nums["total_gib"])]
    if target is not None and (taken := too_little_left(ctx, nums["free_gib"])):
        return [_gpu_taken([*evidence, taken])]
    # Stopping the other process is advice, not a knob: said once in the evidence, so the
    # finding offers "lower gpu_memory_utilization" once, not twice.
    evidence.append("or stop the other process holding GPU memory (nothing to change in vLLM)")
    acts = [
        A.lower_utilization(
            ctx, target, "vLLM asks for utilization x total, and only the free part is there"
        )
    ]
    if target is not None and target < A.MIN_UTILIZATION and acts[0] is not None:
        # the free part holds the model, only below the doctor's usual floor: say the value
        # that passes the gate, not the floor that fails it again
        acts = [replace(acts[0], value=A.floor2(target))]
    if acts[0] is None:  # no number to lower to: the knob still is the one to turn
        acts = [
            Action(
                "gpu_memory_utilization",
                "lower",
                None,
                "vLLM asks for utilization x total, and only the free part is there",
                "a smaller KV cache",
            )
        ]
    # Step 4: the knob is gpu_memory_utilization, even though the memory is another
    # process's; the table must not say step 4 is ok while this refusal stands.
    return [
        Finding(
            "free-memory-below-utilization",
            4,
            "error",
            "Other processes hold GPU memory vLLM wants",
            tuple(evidence),
            compact_actions(acts),
        )
    ]


def _weights_exceed_gpu(ctx, evidence: list[str], weights: float, total: float) -> Finding:
    """The weights' share alone is more than the whole GPU: what others hold is not the
    cause, and freeing the GPU would not make it fit; step 1's answer (the lowest TP on the
    given GPUs that holds them, rules_preflight) or, when none does, no knob."""
    why = "the weights alone do not fit this GPU"
    knobs = ctx.knobs
    evidence = [
        *evidence,
        f"{why}: {weights:.2f} GiB per GPU at TP {knobs.tp} x PP {knobs.pp}, more than "
        f"{A.MAX_UTILIZATION} x {total:.2f} GiB",
    ]
    title = "The weights do not fit this GPU, whatever else it holds"
    sized = sizing(ctx)
    tp = lowest_holding_tp(ctx, sized) if sized is not None else None
    if tp is None:
        evidence += no_tp_holds(ctx, why)
        return Finding("free-memory-below-utilization", None, "error", title, tuple(evidence))
    act = Action(
        "tensor_parallel_size",
        "raise",
        tp,
        f"{why}: TP {tp} holds them",
        "more GPUs, and an all-reduce on every layer",
        step=1,
    )
    return Finding("free-memory-below-utilization", 1, "error", title, tuple(evidence), (act,))


def _gpu_taken(evidence: list[str]) -> Finding:
    """Others hold so much that what is free cannot hold the model at any utilization: no
    knob of vLLM's makes room; the GPU has to be freed."""
    return Finding(
        "free-memory-below-utilization",
        None,
        "error",
        "Other processes hold almost all of this GPU's memory",
        tuple(evidence),
    )


# The same refusal wrapped over two lines by a terminal or a pasted block, and the CPU
# backend's wording of it (vllm/v1/worker/cpu_worker.py, 0.11+: "Available memory on node 0
# (10.78/15.61 GiB) on startup is less than desired CPU memory utilization (0.7, 10.93 GiB)",
# where --gpu-memory-utilization sets the CPU reservation).
_FREE_BELOW = re.compile(
    r"(?:Free memory on device(?: \S+)?|Available memory on node \d+) \((?P<free>[\d.]+)/"
    r"(?P<total>[\d.]+) GiB\) on startup\s+is less\s+than desired [CG]PU memory\s+utilization"
)


def _free_below_in_text(ctx) -> tuple[dict, str] | None:
    joined = " ".join(line.strip() for line in ctx.raw_lines[-400:])
    match = _FREE_BELOW.search(joined)
    if match is None:
        return None
    nums = {"free_gib": float(match.group("free")), "total_gib": float(match.group("total"))}
    return nums, joined[match.start() : match.end() + 40]


RULES = (free_memory_below_utilization,)
