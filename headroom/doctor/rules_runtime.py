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
from headroom.doctor.findings import Action, Finding

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
    acts = [
        A.raise_kv_budget(
            ctx, None, "more KV cache means fewer preemptions (free: no new hardware)"
        ),
        A.lower_max_num_seqs(seqs, target, "fewer sequences share the KV cache") if seqs else None,
        A.fp8_kv(ctx, "twice the tokens in the same memory"),
        A.raise_tp(ctx, _next_tp(ctx), "more GPUs hold more KV cache"),
    ]
    return [
        Finding(
            "kv-full-preemptions",
            4,
            "warning",
            "The KV cache is full and requests are being preempted",
            tuple(evidence),
            tuple(a for a in acts if a is not None),
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
            tuple(a for a in acts if a is not None),
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


def gpu_imbalance(ctx) -> list[Finding]:
    gpus = [g for g in _latest_gpus(ctx) if any(p.is_vllm for p in g.processes)]
    used = [
        (g.index, g.memory_used / g.memory_total) for g in gpus if g.memory_used and g.memory_total
    ]
    if len(used) < 2:
        return []
    lo, hi = min(used, key=lambda x: x[1]), max(used, key=lambda x: x[1])
    if hi[1] - lo[1] < 0.10:
        return []
    evidence = [f"GPU {hi[0]} is {hi[1]:.0%} full, GPU {lo[0]} {lo[1]:.0%}"]
    foreign = [p for g in gpus if g.index == hi[0] for p in g.processes if not p.is_vllm]
    for p in foreign:
        evidence.append(
            f"GPU {hi[0]} also runs pid {p.pid} {p.name or ''} "
            f"({(p.used_memory_bytes or 0) / 2**30:.2f} GiB)"
        )
    return [
        Finding(
            "gpu-imbalance",
            None,
            "warning",
            "One GPU is much fuller than the others",
            tuple(evidence),
            (),
        )
    ]


def hardware_slowing_tp(ctx) -> list[Finding]:
    out = []
    for g in _latest_gpus(ctx):
        busy = (g.util_gpu or 0) >= 50
        if (
            busy
            and g.pcie_gen
            and g.pcie_gen_max
            and (g.pcie_gen < g.pcie_gen_max or (g.pcie_width or 0) < (g.pcie_width_max or 0))
        ):
            out.append(
                Finding(
                    f"pcie-degraded-gpu{g.index}",
                    2,
                    "warning",
                    f"GPU {g.index}'s PCIe link runs below its maximum under load",
                    (
                        f"PCIe Gen{g.pcie_gen} x{g.pcie_width} of Gen{g.pcie_gen_max} x{g.pcie_width_max} "
                        f"at {g.util_gpu:.0f}% utilization",
                        "every all-reduce crosses this link: reseat the card, check the riser "
                        "and the BIOS PCIe speed setting",
                    ),
                    (),
                )
            )
        slow = [
            r
            for r in (g.throttle_reasons or ())
            if r
            in (
                "sw_power_cap",
                "hw_slowdown",
                "sw_thermal_slowdown",
                "hw_thermal_slowdown",
                "hw_power_brake_slowdown",
            )
        ]
        if busy and slow:
            out.append(
                Finding(
                    f"clocks-throttled-gpu{g.index}",
                    2,
                    "warning",
                    f"GPU {g.index} is throttling its clocks ({', '.join(slow)})",
                    (
                        f"SM clock {g.sm_clock_mhz} of {g.sm_clock_max_mhz} MHz, "
                        f"{g.temperature_c} C, {g.power_w} of {g.power_limit_w} W",
                    ),
                    (),
                )
            )
        down = [link.link for link in g.nvlinks if link.active is False]
        if down and any(link.active for link in g.nvlinks):
            out.append(
                Finding(
                    f"nvlink-down-gpu{g.index}",
                    2,
                    "error",
                    f"GPU {g.index} has NVLink links down: {down}",
                    (f"{len(down)} of {len(g.nvlinks)} links inactive",),
                    (),
                )
            )
        if (g.ecc_uncorrected or 0) > 0 or g.remapped_rows_pending or g.remapped_rows_failure:
            out.append(
                Finding(
                    f"ecc-gpu{g.index}",
                    None,
                    "error" if g.remapped_rows_failure else "warning",
                    f"GPU {g.index} reports memory errors",
                    (
                        f"uncorrected ECC {g.ecc_uncorrected}, remapped rows pending "
                        f"{g.remapped_rows_pending}, failure {g.remapped_rows_failure}",
                    ),
                    (),
                )
            )
    return out


def foreign_processes(ctx) -> list[Finding]:
    out = []
    for g in _latest_gpus(ctx):
        vllm = [p for p in g.processes if p.is_vllm]
        others = [
            p for p in g.processes if not p.is_vllm and (p.used_memory_bytes or 0) > 256 * 2**20
        ]
        engines = {p.pid for p in vllm if (p.vllm_role or "").startswith(("EngineCore", "Worker"))}
        if vllm and others:
            mem = sum((p.used_memory_bytes or 0) for p in others) / 2**30
            out.append(
                Finding(
                    f"foreign-process-gpu{g.index}",
                    None,
                    "warning",
                    f"Another program uses {mem:.2f} GiB on vLLM's GPU {g.index}",
                    tuple(
                        f"pid {p.pid} {p.name or ''}: {(p.used_memory_bytes or 0) / 2**30:.2f} GiB"
                        for p in others
                    ),
                    (
                        A.lower_utilization(ctx, None, "leave room for the other program")
                        or Action("gpu_memory_utilization", "lower", None, "leave room for it", ""),
                    ),
                )
            )
        if len(engines) > 1 and ctx.knobs.tp * ctx.knobs.pp == 1:
            out.append(
                Finding(
                    f"second-engine-gpu{g.index}",
                    None,
                    "warning",
                    f"Two vLLM engines share GPU {g.index}",
                    tuple(f"pid {p.pid} {p.vllm_role}" for p in vllm),
                    (),
                )
            )
    return out


RULES = (
    kv_full_with_preemptions,
    queue_growing_kv_full,
    ttft_rising_with_waiting,
    pp_bubbles,
    gpu_imbalance,
    hardware_slowing_tp,
    foreign_processes,
)
