"""Screen 1, the dashboard: everything that matters about the server on one page."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll

from headroom.probes.metrics_types import EngineMetrics
from headroom.tui.screens.base import HeadroomScreen
from headroom.tui.store import Store
from headroom.tui.widgets.events_panel import EventsPanel
from headroom.tui.widgets.finding_line import FindingLine
from headroom.tui.widgets.gpu_strip import GpuStrip
from headroom.tui.widgets.kv_panel import KvPanel
from headroom.tui.widgets.server_facts import ServerFacts
from headroom.tui.widgets.server_notice import MESSAGES as NOTICE_MESSAGES
from headroom.tui.widgets.server_notice import ServerNotice
from headroom.tui.widgets.serving_stats import ServingStats


class DashboardScreen(HeadroomScreen):
    """State, flags, KV cache, serving figures, GPU strip and the doctor's top finding."""

    MODE = "dashboard"

    def compose_body(self) -> ComposeResult:
        yield ServerFacts()
        yield ServerNotice()
        with VerticalScroll(id="dashboard-body"):
            yield KvPanel(classes="panel")
            yield ServingStats(classes="panel")
            yield GpuStrip(classes="panel")
            yield EventsPanel(classes="panel")
        yield FindingLine()

    def show_body(self, store: Store, what: str) -> None:
        engine = _engine(store)
        metrics_reason = _metrics_reason(store)
        if what in {"all", "metrics", "server"}:
            self.query_one(ServerFacts).show(store.server.command, engine, store.server.reported)
            self.query_one(ServerNotice).show(store)
            kv_panel = self.query_one(KvPanel)
            kv_panel.show(engine, list(store.kv_history), metrics_reason)
            kv_panel.show_engines(store.metrics if engine is not None else None)
            self.query_one(ServingStats).show(engine, metrics_reason)
        if what in {"all", "gpus"}:
            self.query_one(GpuStrip).show(store.gpus, store.unavailable.get("gpus"))
        if what in {"all", "logs"}:
            self.query_one(EventsPanel).show(store.events, self.headroom.sources.has_logs)
        if what in {"all", "doctor"}:
            self.query_one(FindingLine).show(store.diagnosis, store.unavailable.get("doctor"))

    def on_resize(self) -> None:
        # The gauge and the GPU strip lay out by width.
        self.show(self.store, "all")


def _engine(store: Store) -> EngineMetrics | None:
    """The totals to show, or None when the last scrape had nothing usable."""
    metrics = store.metrics
    if metrics is None or metrics.state != "up":
        return None
    return metrics.total


# A supervised server that is not serving: say what it is doing, not "cannot reach URL".
SUPERVISED_NOT_SERVING = {
    "starting": "the server is starting; figures appear once it answers /metrics",
    "failed": "not serving: start-up failed (4 shows the doctor's fix)",
    "stopping": "the server is stopping",
    "stopped": "the server is stopped",
}


def _metrics_reason(store: Store) -> str | None:
    server = store.server
    if server.supervised and server.state in SUPERVISED_NOT_SERVING:
        return SUPERVISED_NOT_SERVING[server.state]
    if "metrics" in store.unavailable:
        return store.unavailable["metrics"]
    metrics = store.metrics
    if metrics is None:
        if store.server.url is None:
            return "no server URL"
        return None
    if metrics.state != "up":
        if metrics.state in NOTICE_MESSAGES:  # the notice above says why, in full
            return f"no figures while the server is {NOTICE_MESSAGES[metrics.state][1]}"
        return metrics.message or f"server {metrics.state}"
    return None
