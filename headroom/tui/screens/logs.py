"""Screen placeholder: logs."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from headroom.tui.screens.base import HeadroomScreen


class LogsScreen(HeadroomScreen):
    """logs screen."""

    MODE = "logs"

    def compose_body(self) -> ComposeResult:
        yield Static("coming", classes="unavailable")
