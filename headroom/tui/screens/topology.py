"""Screen placeholder: topology."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from headroom.tui.screens.base import HeadroomScreen


class TopologyScreen(HeadroomScreen):
    """topology screen."""

    MODE = "topology"

    def compose_body(self) -> ComposeResult:
        yield Static("coming", classes="unavailable")
