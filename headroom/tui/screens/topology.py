"""Screen 3, topology: the `nvidia-smi topo -m` matrix coloured by link class, the GPUs the
server uses highlighted, and the tensor-parallel verdict with its reasons."""

from __future__ import annotations

import re
from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from headroom.probes.topology_types import TopologyMatrix
from headroom.probes.topology_verdict import TpVerdict
from headroom.tui.format import escape_markup as escape
from headroom.tui.screens.base import HeadroomScreen
from headroom.tui.store import Store
from headroom.tui.widgets.keyed_table import Cell
from headroom.tui.widgets.themed import themed

LEVEL_STYLE = {
    "good": "$success",
    "tolerable": "$warning",
    "poor": "$error",
    "impossible": "$error",
    "unknown": "$text-muted",
}
LEGEND = (
    "[$link-nvlink]NV#[/] NVLink   [$link-pcie-switch]PIX/PXB[/] PCIe switch   "
    "[$link-host-bridge]PHB/NODE[/] host bridge   [$link-cross-socket]SYS/SOC[/] cross-socket"
)


def link_variable(code: str) -> str:
    """Theme variable (without $) for a link code as printed by nvidia-smi."""
    if re.fullmatch(r"NV\d+", code):
        return "link-nvlink"
    if code in {"PIX", "PXB"}:
        return "link-pcie-switch"
    if code in {"PHB", "NODE"}:
        return "link-host-bridge"
    if code in {"SYS", "SOC"}:
        return "link-cross-socket"
    return "text-muted"


def server_gpu_indices(store: Store) -> set[int]:
    """GPUs with a vLLM worker on them, from the NVML process list."""
    gpus = store.gpus.gpus if store.gpus is not None else ()
    return {gpu.index for gpu in gpus if any(p.is_vllm for p in gpu.processes)}


class TopologyScreen(HeadroomScreen):
    """Link matrix (server's GPUs marked ▶), legend, TP verdicts."""

    MODE = "topology"

    def compose_body(self) -> ComposeResult:
        yield Static(id="topo-unavailable", classes="unavailable")
        with VerticalScroll(id="topo-body"):
            yield DataTable(id="topo-matrix", cursor_type="none", show_cursor=False)
            yield Static(LEGEND, id="topo-legend")
            yield Static(id="topo-verdicts", classes="panel")

    def on_mount(self) -> None:
        self.query_one("#topo-verdicts").border_title = "Tensor parallel verdict"
        self._drawn: object = None
        super().on_mount()

    def show_body(self, store: Store, what: str) -> None:
        if what not in {"all", "topology", "gpus"}:
            return
        banner = self.query_one("#topo-unavailable", Static)
        body = self.query_one("#topo-body")
        matrix = store.topology
        reason = store.unavailable.get("topology")
        if matrix is None or reason or matrix.confidence == "unreadable":
            why = (
                reason
                or ("; ".join(matrix.problems) if matrix is not None else "")
                or "not read yet"
            )
            banner.update(f"unavailable: {escape(why)}")
            banner.display, body.display = True, False
            return
        banner.display, body.display = False, True
        used = server_gpu_indices(store)
        signature = (id(matrix), tuple(sorted(used)), self.app.theme)
        if signature != self._drawn:  # the matrix is static: redraw only when it could differ
            self._draw_matrix(matrix, used)
            self._drawn = signature
        self._draw_verdicts(matrix, store.verdicts)

    def _draw_matrix(self, matrix: TopologyMatrix, used: set[int]) -> None:
        table = self.query_one("#topo-matrix", DataTable)
        table.clear(columns=True)
        devices = list(matrix.gpus) + list(matrix.nics)
        table.add_column("", key="device")
        for device in devices:
            table.add_column(device, key=device)
        table.add_column("CPU affinity", key="cpu")
        table.add_column("NUMA", key="numa")
        for row, gpu in enumerate(matrix.gpus):
            index = _gpu_index(gpu)
            marked = index in used
            label = themed(
                self.app,
                f"▶{gpu}" if marked else f" {gpu}",
                "accent" if marked else "foreground",
                bold=marked,
            )
            cells: list[Cell] = [label]
            codes = list(matrix.links[row]) + list(_row(matrix.gpu_nic_links, row))
            for code in codes:
                cells.append(themed(self.app, code, link_variable(code), bold=marked))
            cells.append(_at(matrix.cpu_affinity, row) or "N/A")
            cells.append(_at(matrix.numa_affinity, row) or "N/A")
            table.add_row(*cells, key=gpu)

    def _draw_verdicts(self, matrix: TopologyMatrix, verdicts: list[TpVerdict]) -> None:
        lines = []
        if matrix.confidence == "low":
            lines.append(
                "[$warning]matrix read with low confidence: "
                + escape("; ".join(matrix.problems))
                + "[/]"
            )
        for verdict in verdicts:
            style = LEVEL_STYLE.get(verdict.level, "$text-muted")
            # No GPU set (e.g. TP larger than the machine): say nothing rather than "GPU ?".
            gpus = f" on GPU {','.join(str(g) for g in verdict.gpus)}" if verdict.gpus else ""
            weakest = (
                f", weakest link {escape(verdict.weakest_link)}" if verdict.weakest_link else ""
            )
            lines.append(
                f"[b]TP={verdict.tp}[/b]{gpus}: [{style}][b]{escape(verdict.level)}[/b][/]{weakest}"
            )
            lines += [f"  • {escape(reason)}" for reason in verdict.reasons]
        if not verdicts:
            lines.append(
                "[$text-muted]no verdict (the TP size is unknown or the probe has none)[/]"
            )
        self.query_one("#topo-verdicts", Static).update("\n".join(lines))


def _gpu_index(name: str) -> int | None:
    match = re.search(r"\d+", name)
    return int(match.group()) if match else None


def _row(rows: Sequence[Sequence[str]], index: int) -> tuple[str, ...]:
    return tuple(rows[index]) if rows and index < len(rows) else ()


def _at(values: Sequence[str | None], index: int) -> str | None:
    return values[index] if values and index < len(values) else None
