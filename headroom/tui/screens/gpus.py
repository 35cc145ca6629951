"""Screen placeholder: gpus."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from headroom.tui.screens.base import HeadroomScreen


class GpusScreen(HeadroomScreen):
    """gpus screen."""

    MODE = "gpus"

    def compose_body(self) -> ComposeResult:
        yield Static("coming", classes="unavailable")
