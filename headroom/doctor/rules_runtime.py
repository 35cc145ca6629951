"""Runtime rules: a history of /metrics scrapes and NVML snapshots, read as trends.

Metric rules read ServerMetrics.total (engineer 1's EngineMetrics); GPU rules read the latest
GpuSnapshot (engineer 3). Thresholds are chosen to fire on sustained conditions, not one
noisy sample: "near full" is >= 0.90 KV usage in most of the recent window.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from headroom.doctor import actions as A
from headroom.doctor.findings import Action, Finding, compact_actions

KV_FULL = 0.90
WINDOW = 12  # most recent scrapes considered


def _totals(ctx) -> list:
    history = [m for m in ctx.inputs.metrics_history if getattr(m, "state", "up") == "up"]
    totals = [m.total for m in history[-WINDOW:] if getattr(m, "total", None) is not None]
    return totals or _stats_rows(ctx)[-WINDOW:]


@dataclass(frozen=True)
class _StatsRow:
    """The periodic stats line of the log, in EngineMetrics' attribute names."""

    kv_cache_usage: float | None
    requests_running: float | None
    requests_waiting: float | None
    preemptions_total: float | None
    kv_capacity_tokens: int | None = None
    preemptions_per_s: float | None = None
    ttft: object | None = None


_STATS = {
    "kv_cache_usage": re.compile(r"KV cache usage: ([\d.]+)%"),
    "requests_running": re.compile(r"Running: (\d+) reqs"),
    "requests_waiting": re.compile(r"Waiting: (\d+) reqs"),
    "preemptions": re.compile(r"Preemptions: (\d+)"),
}


def _stats_rows(ctx) -> list[_StatsRow]:
    """Without /metrics, the log's "Engine 000: Avg prompt throughput ..." lines are a
    coarser history of the same numbers (every VLLM_LOG_STATS_INTERVAL seconds)."""
    rows, preempted = [], 0.0
    for line in ctx.raw_lines:
        if "Avg prompt throughput" not in line:
            continue
        found = {
            k: (float(m.group(1)) if (m := p.search(line)) else None) for k, p in _STATS.items()
        }
        preempted += found["preemptions"] or 0.0  # the line shows preemptions of its interval only
        usage = found["kv_cache_usage"]
        rows.append(
            _StatsRow(
                usage / 100 if usage is not None else None,
                found["requests_running"],
                found["requests_waiting"],
                preempted,
            )
        )
    return rows


def _series(totals, name: str) -> list[float]:
    return [float(v) for t in totals if (v := getattr(t, name, None)) is not None]


def _rising(values: list[float]) -> bool:
    return len(values) >= 2 and values[-1] > values[0] and values[-1] >= max(values[:-1])


def _kv_full(totals) -> tuple[bool, list[float]]:
    usage = _series(totals, "kv_cache_usage")
    recent = usage[-6:]
    return bool(recent) and sum(u >= KV_FULL for u in recent) * 2 > len(recent), usage


def _kv_pressure_actions(ctx, seqs: int | None, target: int | None) -> list:
    """Preemptions from a full KV cache, in the mitigation order: more KV budget (free), fewer
    sequences (down to `target` when known), an fp8 KV cache, then more GPUs."""
    return [
        A.raise_kv_budget(
            ctx, None, "more KV cache means fewer preemptions (free: no new hardware)"
        ),
        A.lower_max_num_seqs(seqs, target, "fewer sequences share the KV cache") if seqs else None,
        A.fp8_kv(ctx, "twice the tokens in the same memory"),
        A.raise_tp(ctx, _next_tp(ctx), "more GPUs hold more KV cache"),
    ]


def kv_full_with_preemptions(ctx) -> list[Finding]:
    totals = _totals(ctx)
    full, usage = _kv_full(totals)
    preempt = _series(totals, "preemptions_total")
    rates = _series(totals, "preemptions_per_s")
    rising = (len(preempt) >= 2 and preempt[-1] > preempt[0]) or any(r > 0 for r in rates[-3:])
    if not (full and rising):
        return []
    last = totals[-1]
    evidence = [
        f"KV cache usage up to {max(usage[-6:]):.0%} (>= {KV_FULL:.0%} in most of the last "
        f"{len(usage[-6:])} samples)"
    ]
    if len(preempt) >= 2:
        evidence.append(f"preemptions {preempt[0]:.0f} -> {preempt[-1]:.0f} over the window")
    if getattr(last, "kv_capacity_tokens", None):
        evidence.append(f"KV capacity {last.kv_capacity_tokens:,} tokens")
    running = _series(totals, "requests_running")
    seqs = ctx.knobs.max_num_seqs or (ctx.account.max_num_seqs if ctx.account else None)
    target = int(statistics.mean(running[-6:]) * 0.75) if running else None
    acts = _kv_pressure_actions(ctx, seqs, target)
    return [
        Finding(
            "kv-full-preemptions",
            4,
            "warning",
            "The KV cache is full and requests are being preempted",
            tuple(evidence),
            compact_actions(acts),
        )
    ]


def _next_tp(ctx) -> int | None:
    if ctx.model is None or ctx.gpu_count is None:
        return None
    bigger = [t for t in A.valid_tps(ctx.model, ctx.gpu_count) if t > ctx.knobs.tp]
    return bigger[0] if bigger else None


def queue_growing_kv_full(ctx) -> list[Finding]:
    totals = _totals(ctx)
    full, usage = _kv_full(totals)
    waiting = _series(totals, "requests_waiting")
    if not (full and _rising(waiting) and waiting[-1] > 0):
        return []
    evidence = [
        f"waiting requests {waiting[0]:.0f} -> {waiting[-1]:.0f} while KV usage is {usage[-1]:.0%}"
    ]
    acts = [
        A.raise_kv_budget(ctx, None, "admission waits for free KV blocks"),
        A.fp8_kv(ctx, "twice the tokens in the same memory"),
        A.raise_tp(ctx, _next_tp(ctx), "more GPUs hold more KV cache"),
    ]
    return [
        Finding(
            "queue-growing-kv-full",
            4,
            "warning",
            "Requests queue up because the KV cache is full",
            tuple(evidence),
            compact_actions(acts),
        )
    ]


def ttft_rising_with_waiting(ctx) -> list[Finding]:
    totals = _totals(ctx)
    full, _ = _kv_full(totals)
    p95 = [
        float(t.ttft.p95)
        for t in totals
        if getattr(getattr(t, "ttft", None), "p95", None) is not None
    ]
    waiting = _series(totals, "requests_waiting")
    if full or not (_rising(p95) and waiting and waiting[-1] > 0):
        return []
    evidence = [
        f"TTFT p95 {p95[0]:.2f} s -> {p95[-1]:.2f} s with {waiting[-1]:.0f} requests waiting",
        "KV cache is not full: the scheduler's limits, not memory, hold requests back",
    ]
    seqs = ctx.knobs.max_num_seqs or (ctx.account.max_num_seqs if ctx.account else None)
    running = _series(totals, "requests_running")
    acts: list[Action] = []
    if seqs and running and running[-1] >= 0.9 * seqs:
        acts.append(
            Action(
                "max_num_seqs",
                "raise",
                seqs * 2,
                "every sequence slot is taken while KV has room",
                "more sequences per step: each step is slower",
            )
        )
    acts.append(
        Action(
            "max_num_batched_tokens",
            "set",
            None,
            "a larger prefill budget admits waiting prompts sooner",
            "longer steps: inter-token latency of running requests rises",
        )
    )
    return [
        Finding(
            "ttft-rising-waiting",
            4,
            "warning",
            "Time to first token rises while requests wait",
            tuple(evidence),
            tuple(acts),
        )
    ]


def _latest_gpus(ctx) -> list:
    snap = ctx.inputs.gpus
    if snap is None or not getattr(snap, "available", False):
        return []
    return [g for g in snap.gpus if not g.lost]


def pp_bubbles(ctx) -> list[Finding]:
    if ctx.knobs.pp < 2:
        return []
    history = ctx.inputs.extra.get("gpu_history") or ()
    utils = [
        g.util_gpu for snap in history for g in getattr(snap, "gpus", ()) if g.util_gpu is not None
    ]
    if len(utils) < 6:
        utils = [g.util_gpu for g in _latest_gpus(ctx) if g.util_gpu is not None]
    if len(utils) < 2 or statistics.pstdev(utils) < 20 or min(utils) > 40:
        return []
    evidence = [
        f"GPU utilization swings between {min(utils):.0f}% and {max(utils):.0f}% "
        f"under pipeline parallel size {ctx.knobs.pp}: stages wait for each other"
    ]
    total = ctx.knobs.tp * ctx.knobs.pp
    acts = []
    if ctx.model is None or total in A.valid_tps(ctx.model, total):
        acts = [
            Action(
                "tensor_parallel_size",
                "raise",
                total,
                "TP keeps every GPU busy on every token",
                "all-reduce on every layer: needs NVLink or fast PCIe inside the node",
                also=(("pipeline_parallel_size", 1),),
            ),
            Action(
                "pipeline_parallel_size",
                "lower",
                1,
                "no pipeline bubbles inside one node",
                "TP's communication instead",
                also=(("tensor_parallel_size", total),),
            ),
        ]
    return [
        Finding(
            "pp-bubbles",
            3,
            "warning",
            "Pipeline stages idle in turn (PP bubbles)",
            tuple(evidence),
            tuple(acts),
        )
    ]


def preemptions_in_log(ctx) -> list[Finding]:
    """V0's scheduler warns on every preemption ("Sequence group N is preempted by
    PreemptionMode.RECOMPUTE mode because there is not enough KV cache space ...
    total_num_cumulative_preemption=M", vllm/core/scheduler.py 0.4-0.10): the log alone says
    the KV cache is too small for the load, without /metrics. Skipped when the metrics rule
    already speaks for the same server."""
    events = ctx.of("preemption")
    if not events or kv_full_with_preemptions(ctx):
        return []
    totals = [e.fields.get("total") for e in events if isinstance(e.fields.get("total"), int)]
    evidence = [events[-1].line.strip()[:400]]
    evidence.append(
        f"{len(events)} preemption warning(s) in the log"
        + (f"; {max(totals)} preemptions since start" if totals else "")
    )
    # The warning is V0's scheduler's, whose max_num_seqs defaults to 256 (vllm/config.py
    # SchedulerConfig, 0.4-0.10): fewer sequences is the table's second knob here too.
    seqs = ctx.knobs.max_num_seqs or (ctx.account.max_num_seqs if ctx.account else 256)
    acts = _kv_pressure_actions(ctx, seqs, None)
    return [
        Finding(
            "kv-full-preemptions-log",
            4,
            "warning",
            "Requests are preempted: the KV cache is too small for the load",
            tuple(evidence),
            compact_actions(acts),
        )
    ]


RULES = (
    kv_full_with_preemptions,
    preemptions_in_log,
    queue_growing_kv_full,
    ttft_rising_with_waiting,
    pp_bubbles,
)
