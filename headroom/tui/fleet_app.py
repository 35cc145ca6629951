"""`headroom fleet` on a terminal: one row per server, worst first; Enter opens its dashboard.

The fleet table is its own small App. Enter ends it with the chosen server; the existing
dashboard (HeadroomApp and all its screens) then runs over `FleetServerSources`, which reads
that server from the *same* fleet source (Prometheus or direct scrape), its GPUs from DCGM;
quitting the dashboard comes back to the table. With `--export N` the exporter runs in a
thread of its own, so it keeps answering while either app is shown.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.findings import Diagnosis
from headroom.fleet.export import ExporterThread
from headroom.fleet.model import FleetServer, FleetSnapshot
from headroom.fleet.report import COLUMNS, server_cells
from headroom.probes.dcgm import DcgmGpu
from headroom.probes.metrics_types import EngineMetrics, ServerMetrics
from headroom.probes.nvml_types import GpuReading, GpuSnapshot
from headroom.probes.safe_text import safe_text
from headroom.probes.server_info import ServerInfo as ReportedInfo
from headroom.tui.app import HeadroomApp
from headroom.tui.sources import DataSources
from headroom.tui.store import ServerInfo, Store
from headroom.tui.themed_app import ThemedApp
from headroom.tui.widgets.keyed_table import sync_rows

MIB = 1024 * 1024


class FleetSource(Protocol):
    """What the fleet screens read: `headroom.fleet`'s DirectSource and PrometheusSource."""

    async def refresh(self) -> FleetSnapshot: ...

    async def aclose(self) -> None: ...


class FleetApp(ThemedApp[str | None]):
    """The fleet table. `exit(instance)` on Enter, `exit(None)` on q."""

    TITLE = "Headroom fleet"
    CSS = """
    #fleet-head { height: 1; padding: 0 1; }
    #fleet-table { height: 1fr; }
    #fleet-findings { height: auto; max-height: 8; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("enter", "open", "Open server"),
        Binding("r", "refresh_now", "Refresh"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        source: FleetSource,
        interval: float = 2.0,
        exporter: ExporterThread | None = None,
        theme: str | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.interval = max(0.2, float(interval))
        self.exporter = exporter
        self.snapshot: FleetSnapshot | None = None
        self.refreshes = 0
        self.use_themes(theme)

    def compose(self) -> ComposeResult:
        yield Static("reading the fleet ...", id="fleet-head")
        table: DataTable = DataTable(id="fleet-table", cursor_type="row", zebra_stripes=True)
        table.add_columns(*COLUMNS)
        yield table
        yield Static("", id="fleet-findings")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self._refresh_loop()

    async def on_unmount(self) -> None:
        await self.source.aclose()

    @work(exclusive=True, group="fleet", exit_on_error=False)
    async def _refresh_loop(self) -> None:
        while True:
            started = time.monotonic()
            await self.refresh_once()
            await asyncio.sleep(max(0.05, self.interval - (time.monotonic() - started)))

    async def refresh_once(self) -> None:
        try:
            snap = await self.source.refresh()
        except Exception as error:  # a source bug must not take the table down
            self.query_one("#fleet-head", Static).update(Text(f"refresh failed: {error!r}"))
            return
        self.snapshot = snap
        self.refreshes += 1
        if self.exporter is not None:
            self.exporter.update_fleet(snap)
        self.show(snap)

    def show(self, snap: FleetSnapshot) -> None:
        table = self.query_one(DataTable)
        servers = snap.sorted_servers()
        # Text cells: a DataTable reads plain str cells as markup, and these are server strings.
        rows = {s.instance: [Text(safe_text(c)) for c in server_cells(s)] for s in servers}
        order = [k.value for k in table.rows]
        if order != [s.instance for s in servers if s.instance in order] or len(order) != len(rows):
            # The order by trouble changed: rebuild, keeping the cursor on the same server.
            chosen = self._cursor_instance()
            table.clear()
            for key, cells in rows.items():
                table.add_row(*cells, key=key)
            if chosen in rows:
                table.move_cursor(row=list(rows).index(chosen))
        else:
            sync_rows(self, table, rows)
        up = sum(1 for s in snap.servers if s.state == "up")
        gpus = sum(len(s.gpus) for s in snap.servers)
        head = (
            f"{snap.source}: {up}/{len(snap.servers)} servers up, {gpus} GPUs, "
            f"{snap.requests_made} requests   Enter: open a server"
        )
        # Plain Text, never markup: titles and sources carry server-provided strings.
        self.query_one("#fleet-head", Static).update(Text(safe_text(head)))
        lines = [f"[{f.finding.severity}] {f.finding.title}" for f in snap.findings]
        lines += [f"warning: {w}" for w in snap.warnings]
        shown = safe_text("\n".join(lines), multiline=True) if lines else "no fleet findings"
        self.query_one("#fleet-findings", Static).update(Text(shown))

    def _cursor_instance(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return key.value

    def action_open(self) -> None:
        instance = self._cursor_instance()
        if instance is not None:
            self.exit(instance)

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.exit(event.row_key.value)

    async def action_refresh_now(self) -> None:
        await self.refresh_once()


class FleetServerSources(DataSources):
    """One server of the fleet for the existing dashboard, read from the fleet's source."""

    has_logs = False
    can_restart = False

    def __init__(self, source: FleetSource, instance: str) -> None:
        self.source = source
        self.instance = instance
        self.server: FleetServer | None = None
        self.reported: ReportedInfo | None = None

    def server_info(self) -> ServerInfo:
        return ServerInfo(url=self.instance, state="unknown")

    async def scrape_metrics(self) -> ServerMetrics | None:
        snap = await self.source.refresh()
        self.server = snap.server(self.instance)
        if self.server is None:
            message = f"{self.instance} is no longer in the fleet ({snap.source})"
            return ServerMetrics(
                time.monotonic(), self.instance, "down", message, EngineMetrics.empty(), (), ()
            )
        self.reported = self.server.info
        return self.server.metrics

    async def sample_gpus(self) -> GpuSnapshot | None:
        server = self.server
        if server is None or not server.gpus:
            return GpuSnapshot(
                time.monotonic(), False, "no DCGM GPUs joined to this server", None, None, (), ()
            )
        return dcgm_snapshot(server.gpus)

    def diagnose(self, store: Store) -> Diagnosis:
        extra = {"server_info": self.reported} if self.reported is not None else {}
        return diagnose(
            DoctorInputs(
                metrics_history=tuple(store.metrics_history)[-60:],
                vllm_version=self.reported.version if self.reported is not None else None,
                extra=extra,
            )
        )

    async def close(self) -> None:
        await self.source.aclose()


def dcgm_snapshot(gpus: tuple[DcgmGpu, ...]) -> GpuSnapshot:
    """DCGM's view of a server's GPUs in the NVML snapshot type the GPU screens draw."""
    readings = []
    for position, g in enumerate(gpus):
        head = g.index.split("/", 1)[0]
        total = g.memory_total_mib
        readings.append(
            GpuReading(
                index=int(head) if head.isdigit() else position,
                name=g.name,
                uuid=g.uuid,
                pci_bus_id=g.pci_bus_id,
                lost=False,
                memory_total=_bytes(total),
                memory_used=_bytes(g.fb_used_mib),
                memory_reserved=_bytes(g.fb_reserved_mib),
                memory_free=_bytes(g.fb_free_mib),
                util_gpu=g.util_pct,
                util_memory=None,
                temperature_c=g.temperature_c,
                power_w=g.power_w,
                power_limit_w=g.power_limit_w,
                sm_clock_mhz=int(g.sm_clock_mhz) if g.sm_clock_mhz is not None else None,
                sm_clock_max_mhz=None,
                mem_clock_mhz=None,
                mem_clock_max_mhz=None,
                throttle_reasons=tuple(f"{r}_violation" for r in g.throttle)
                if g.throttle is not None
                else None,
                pcie_gen=None,
                pcie_gen_max=None,
                pcie_width=None,
                pcie_width_max=None,
                pcie_tx_kbps=None,
                pcie_rx_kbps=None,
                nvlinks=(),
                ecc_corrected=None,
                ecc_uncorrected=None,
                remapped_rows_pending=None,
                remapped_rows_failure=None,
                mig_enabled=bool(g.mig_profile) if g.mig_profile else None,
                processes=(),
            )
        )
    return GpuSnapshot(time.monotonic(), True, None, None, None, tuple(readings), ())


def _bytes(mib: float | None) -> int | None:
    return None if mib is None else int(mib * MIB)


def run_fleet_tui(
    make_source: Callable[[], FleetSource],
    interval: float,
    export_port: int | None = None,
    theme: str | None = None,
    export_host: str = "127.0.0.1",
) -> int:
    """The table; Enter: that server's dashboard; q there: back to the table; q: quit."""
    exporter = None
    if export_port is not None:
        exporter = ExporterThread(export_host, export_port)
        exporter.start()
    try:
        while True:
            chosen = FleetApp(make_source(), interval, exporter, theme).run()
            if not chosen:
                return 0
            HeadroomApp(
                FleetServerSources(make_source(), chosen), interval=interval, theme=theme
            ).run()
    finally:
        if exporter is not None:
            exporter.stop()
