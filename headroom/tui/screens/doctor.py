"""Screen placeholder: doctor."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from headroom.tui.screens.base import HeadroomScreen


class DoctorScreen(HeadroomScreen):
    """doctor screen."""

    MODE = "doctor"

    def compose_body(self) -> ComposeResult:
        yield Static("coming", classes="unavailable")
