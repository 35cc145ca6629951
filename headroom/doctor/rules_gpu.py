"""GPU rules from NVML snapshots (engineer 3's GpuSnapshot): hardware that quietly slows TP
(PCIe link below its maximum under load, throttled clocks, NVLink links down), memory
errors, one GPU much fuller than the others, and other programs or a second engine on
vLLM's GPUs ("other" in the five-step table)."""

from __future__ import annotations

from headroom.doctor import actions as A
from headroom.doctor.findings import Action, Finding


def _latest_gpus(ctx) -> list:
    snap = ctx.inputs.gpus
    if snap is None or not getattr(snap, "available", False):
        return []
    return [g for g in snap.gpus if not g.lost]


def gpu_imbalance(ctx) -> list[Finding]:
    """vLLM's GPUs should be alike: TP ranks hold equal shares and step together. One GPU much
    fuller points at another program on it; one much busier at a straggler the others wait for."""
    gpus = [g for g in _latest_gpus(ctx) if any(p.is_vllm for p in g.processes)]
    out = []
    used = [
        (g.index, g.memory_used / g.memory_total) for g in gpus if g.memory_used and g.memory_total
    ]
    if len(used) >= 2:
        lo, hi = min(used, key=lambda x: x[1]), max(used, key=lambda x: x[1])
        if hi[1] - lo[1] >= 0.10:
            evidence = [f"GPU {hi[0]} is {hi[1]:.0%} full, GPU {lo[0]} {lo[1]:.0%}"]
            foreign = [p for g in gpus if g.index == hi[0] for p in g.processes if not p.is_vllm]
            evidence += [f"GPU {hi[0]} also runs pid {p.pid} {p.name or ''} "
                         f"({(p.used_memory_bytes or 0) / 2**30:.2f} GiB)" for p in foreign]  # fmt: skip
            out.append(Finding("gpu-imbalance", None, "warning", "One GPU is much fuller than the others",
                               tuple(evidence), ()))  # fmt: skip
    busy = [(g.index, g.util_gpu) for g in gpus if g.util_gpu is not None]
    if len(busy) >= 2:
        lo, hi = min(busy, key=lambda x: x[1]), max(busy, key=lambda x: x[1])
        if hi[1] - lo[1] >= 40:
            out.append(Finding(
                "gpu-busy-imbalance", None, "warning", "One GPU is much busier than the others",
                (f"GPU {hi[0]} at {hi[1]:.0f}% utilization, GPU {lo[0]} at {lo[1]:.0f}%",
                 "TP ranks wait for the slowest one; under PP an uneven layer split does this too"),
                (),
            ))  # fmt: skip
    return out


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


RULES = (gpu_imbalance, hardware_slowing_tp, foreign_processes)
