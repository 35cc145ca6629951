"""One screen per module. Screens are Textual modes, switched with the number keys.

Each mode factory imports its screen module lazily, so start-up only pays for the
dashboard."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from textual.screen import Screen

# mode name -> title; the order gives the number keys 1..7.
SCREEN_TITLES: dict[str, str] = {
    "dashboard": "Dashboard",
    "gpus": "GPUs",
    "topology": "Topology",
    "doctor": "Doctor",
    "logs": "Logs",
    "runs": "Runs",
    "bench": "Bench",
}

_CLASSES = {
    "dashboard": ("headroom.tui.screens.dashboard", "DashboardScreen"),
    "gpus": ("headroom.tui.screens.gpus", "GpusScreen"),
    "topology": ("headroom.tui.screens.topology", "TopologyScreen"),
    "doctor": ("headroom.tui.screens.doctor", "DoctorScreen"),
    "logs": ("headroom.tui.screens.logs", "LogsScreen"),
    "runs": ("headroom.tui.screens.runs", "RunsScreen"),
    "bench": ("headroom.tui.screens.bench", "BenchScreen"),
}


def _factory(mode: str) -> Callable[[], Screen]:
    module_name, class_name = _CLASSES[mode]

    def make() -> Screen:
        return getattr(importlib.import_module(module_name), class_name)()

    return make


def make_modes() -> dict[str, Callable[[], Screen]]:
    return {mode: _factory(mode) for mode in SCREEN_TITLES}
