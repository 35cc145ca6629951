"""Screen 2, GPUs: every NVML reading per GPU, the processes on each GPU (vLLM workers
named, foreign memory flagged), and utilization/memory history; above them, for a server on
a Ray cluster, the Ray nodes panel (widgets/ray_panel.py). Tables update by row key,
so the cursor and scroll position survive each refresh."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from headroom.probes.nvml_types import GpuReading, GpuSnapshot
from headroom.tui import format as fmt
from headroom.tui.format import escape_markup as escape
from headroom.tui.screens.base import HeadroomScreen
from headroom.tui.store import Store
from headroom.tui.widgets.keyed_table import Cell, sync_rows
from headroom.tui.widgets.ray_panel import RayPanel
from headroom.tui.widgets.themed import themed


def _pair(value: object | None, limit: object | None, unit: str = "") -> str:
    if value is None and limit is None:
        return fmt.NA
    left = fmt.NA if value is None else f"{value}"
    right = fmt.NA if limit is None else f"{limit}"
    return f"{left}/{right}{unit}"


def _mem(gpu: GpuReading) -> str:
    if gpu.memory_used is None or gpu.memory_total is None:
        return fmt.NA
    return f"{gpu.memory_used / 2**30:.1f}/{gpu.memory_total / 2**30:.1f} GiB"


def _nvlinks(gpu: GpuReading) -> str:
    links = gpu.nvlinks or ()
    if not links:
        return "none"
    active = sum(1 for link in links if link.active)
    return f"{active}/{len(links)} active"


def _yes_no(value: bool | None) -> str:
    return fmt.NA if value is None else ("yes" if value else "no")


# (row key, label, reader). Every field of GpuReading a user might want, in reading order.
FIELDS = (
    ("name", "name", lambda g: (g.name or fmt.NA).removeprefix("NVIDIA ")),
    ("bus", "PCI bus", lambda g: g.pci_bus_id or fmt.NA),
    ("util", "utilization", lambda g: fmt.NA if g.util_gpu is None else f"{g.util_gpu:.0f}%"),
    (
        "util_mem",
        "memory busy",
        lambda g: fmt.NA if g.util_memory is None else f"{g.util_memory:.0f}%",
    ),
    ("mem", "memory used", _mem),
    ("mem_free", "memory free", lambda g: fmt.gib(g.memory_free)),
    ("mem_reserved", "reserved", lambda g: fmt.gib(g.memory_reserved)),
    (
        "temp",
        "temperature",
        lambda g: fmt.NA if g.temperature_c is None else f"{g.temperature_c:.0f} °C",
    ),
    ("power", "power", lambda g: f"{fmt.watts(g.power_w)} / {fmt.watts(g.power_limit_w)}"),
    ("sm_clock", "SM clock", lambda g: _pair(g.sm_clock_mhz, g.sm_clock_max_mhz, " MHz")),
    ("mem_clock", "mem clock", lambda g: _pair(g.mem_clock_mhz, g.mem_clock_max_mhz, " MHz")),
    (
        "throttle",
        "throttle",
        lambda g: (
            fmt.NA if g.throttle_reasons is None else (", ".join(g.throttle_reasons) or "none")
        ),
    ),
    (
        "pcie",
        "PCIe gen×width",
        lambda g: f"{_pair(g.pcie_gen, g.pcie_gen_max)} × {_pair(g.pcie_width, g.pcie_width_max)}",
    ),
    (
        "pcie_io",
        "PCIe tx/rx",
        lambda g: (
            f"{fmt.rate(None if g.pcie_tx_kbps is None else g.pcie_tx_kbps * 1000, 'B/s')} / {fmt.rate(None if g.pcie_rx_kbps is None else g.pcie_rx_kbps * 1000, 'B/s')}"
        ),
    ),
    ("nvlink", "NVLink", _nvlinks),
    ("ecc", "ECC corr/uncorr", lambda g: _pair(g.ecc_corrected, g.ecc_uncorrected)),
    (
        "remap",
        "rows remap pend/fail",
        lambda g: f"{_yes_no(g.remapped_rows_pending)}/{_yes_no(g.remapped_rows_failure)}",
    ),
    ("mig", "MIG", lambda g: _yes_no(g.mig_enabled)),
)


class GpusScreen(HeadroomScreen):
    """NVML fields (one column per GPU), processes, and history sparklines."""

    MODE = "gpus"

    def compose_body(self) -> ComposeResult:
        yield RayPanel(id="ray-nodes", classes="panel")
        yield Static(id="gpus-unavailable", classes="unavailable")
        with VerticalScroll(id="gpus-body"):
            yield Static(id="gpu-history", classes="panel")
            yield DataTable(id="gpu-processes", cursor_type="row")
            yield DataTable(id="gpu-fields", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one("#gpu-processes").border_title = "Processes"
        self.query_one("#gpu-history").border_title = "History  util · memory"
        self.query_one("#ray-nodes").border_title = "Ray nodes"
        self._gpu_columns: tuple[int, ...] = ()
        processes = self.query_one("#gpu-processes", DataTable)
        processes.add_columns("GPU", "PID", "memory", "owner", "process")
        super().on_mount()

    def show_body(self, store: Store, what: str) -> None:
        if what in {"all", "ray"}:
            self.query_one("#ray-nodes", RayPanel).show(store.ray)
        if what not in {"all", "gpus"}:
            return
        reason = store.unavailable.get("gpus")
        snapshot = store.gpus
        banner = self.query_one("#gpus-unavailable", Static)
        body = self.query_one("#gpus-body")
        if reason or snapshot is None or not snapshot.available:
            reason = reason or (snapshot.reason if snapshot else None) or "not read yet"
            banner.update(f"unavailable: {escape(reason)}")
            banner.display, body.display = True, False
            return
        banner.display, body.display = False, True
        gpus = list(snapshot.gpus)
        self._fill_fields(gpus, snapshot)
        self._fill_processes(gpus)
        self._fill_history(store, gpus)

    def _fill_fields(self, gpus: list[GpuReading], snapshot: GpuSnapshot) -> None:
        table = self.query_one("#gpu-fields", DataTable)
        indices = tuple(gpu.index for gpu in gpus)
        if indices != self._gpu_columns:  # GPU set changed: rebuild the columns once
            table.clear(columns=True)
            table.add_column("field", key="field")
            for index in indices:
                table.add_column(f"GPU{index}", key=f"gpu{index}")
            self._gpu_columns = indices
        rows = {}
        for key, label, read in FIELDS:
            cells = [label]
            for gpu in gpus:
                cells.append("lost" if gpu.lost else _safe(read, gpu))
            rows[key] = cells
        driver = (
            f"driver {snapshot.driver_version or fmt.NA} · CUDA {snapshot.cuda_version or fmt.NA}"
        )
        table.border_title = driver
        sync_rows(self.app, table, rows)

    def _fill_processes(self, gpus: list[GpuReading]) -> None:
        table = self.query_one("#gpu-processes", DataTable)
        rows: dict[str, list[Cell]] = {}
        for gpu in gpus:
            for proc in gpu.processes:
                if proc.is_vllm:
                    owner = themed(self.app, proc.vllm_role or "vLLM", "success")
                else:
                    owner = themed(self.app, "foreign", "warning", bold=True)
                name = proc.name or fmt.NA
                rows[f"{gpu.index}:{proc.pid}"] = [
                    str(gpu.index),
                    str(proc.pid),
                    fmt.gib(proc.used_memory_bytes),
                    owner,
                    f"{name} {proc.cmdline or ''}".strip()[:60],
                ]
        sync_rows(self.app, table, rows)

    def _fill_history(self, store: Store, gpus: list[GpuReading]) -> None:
        width = max(10, ((self.size.width or 80) - 20) // 2)
        lines = []
        for gpu in gpus:
            util = fmt.spark(store.gpu_util_history.get(gpu.index, ()), width)
            mem = fmt.spark(store.gpu_mem_history.get(gpu.index, ()), width)
            lines.append(f"[b]GPU{gpu.index}[/b] [$gauge-ok]{util:<{width}}[/] [$primary]{mem}[/]")
        self.query_one("#gpu-history", Static).update("\n".join(lines) or "no GPUs")


def _safe(read: Callable[[GpuReading], str], gpu: GpuReading) -> str:
    try:
        return read(gpu)
    except Exception:  # one odd field must not hide the rest of the table
        return fmt.NA
