"""Screen 7, bench: hosts the bench widget (`headroom.tui.widgets.bench_panel`)."""

from __future__ import annotations

from textual.app import ComposeResult

from headroom.tui.screens.base import HeadroomScreen
from headroom.tui.store import Store
from headroom.tui.widgets.bench_panel import BenchPanel


class BenchScreen(HeadroomScreen):
    """The concurrency ramp view."""

    MODE = "bench"

    def compose_body(self) -> ComposeResult:
        store = self.store
        # A server that is still starting may have no URL yet: the panel asks again on `s`.
        yield BenchPanel(url=store.server.url, late_url=lambda: store.server.url)

    def show_body(self, store: Store, what: str) -> None:
        pass
