"""Screen placeholder: bench."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from headroom.tui.screens.base import HeadroomScreen


class BenchScreen(HeadroomScreen):
    """bench screen."""

    MODE = "bench"

    def compose_body(self) -> ComposeResult:
        yield Static("coming", classes="unavailable")
