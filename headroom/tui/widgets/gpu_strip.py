"""The compact GPU strip on the dashboard: one cell per GPU, as many per line as fit."""

from __future__ import annotations

from textual.widgets import Static

from headroom.probes.nvml_types import GpuReading, GpuSnapshot
from headroom.tui import format as fmt
from headroom.tui.widgets.cheap_update import set_markup

CELL_WIDTH = 38  # "▶0 ██████ 100%  79.1/80G 700 W" plus a gap


def _marker(gpu: GpuReading) -> str:
    """▶ = a vLLM worker runs here; ! = another process holds memory on this GPU."""
    processes = gpu.processes or ()
    if any(not p.is_vllm and (p.used_memory_bytes or 0) > 0 for p in processes):
        return "[$warning]![/]"
    if any(p.is_vllm for p in processes):
        return "[$accent]▶[/]"
    return " "


def gpu_cell(gpu: GpuReading) -> str:
    if gpu.lost:
        return f" [b]{gpu.index}[/b] [$error]lost (fell off the bus)[/]"
    util = None if gpu.util_gpu is None else gpu.util_gpu / 100
    used, total = gpu.memory_used, gpu.memory_total
    mem_text = (
        f"{used / 2**30:.1f}/{total / 2**30:.0f}G" if total and used is not None else "mem N/A"
    )
    util_var = "$gauge-ok" if util is None or util < 0.95 else "$gauge-warn"
    return (
        f"{_marker(gpu)}[b]{gpu.index}[/b] [{util_var}]{fmt.bar(util, 6)}[/] {fmt.percent(util):>4} "
        f"{mem_text:>11} {fmt.watts(gpu.power_w):>5}"
    )


class GpuStrip(Static):
    """Utilization bar and percent, memory used/total and power for every GPU. Says
    "unavailable" and why when there are no local GPUs to read."""

    DEFAULT_CSS = """
    GpuStrip { height: auto; }
    """

    def on_mount(self) -> None:
        self.border_title = "GPUs  util · memory · power   ▶ vLLM  ! foreign memory"

    def show(self, snapshot: GpuSnapshot | None, unavailable: str | None) -> None:
        if unavailable or snapshot is None or not snapshot.available:
            reason = unavailable or (snapshot.reason if snapshot else None) or "not read yet"
            set_markup(self, f"[$text-muted]unavailable: {reason}[/]")
            return
        gpus = list(snapshot.gpus)
        if not gpus:
            set_markup(self, "[$text-muted]no GPUs found[/]")
            return
        per_line = max(1, (self.size.width or 78) // CELL_WIDTH)
        cells = [gpu_cell(gpu) for gpu in gpus]
        rows = ["   ".join(cells[i : i + per_line]) for i in range(0, len(cells), per_line)]
        set_markup(self, "\n".join(rows))
