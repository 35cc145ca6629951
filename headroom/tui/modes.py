"""The app's modes: one screen class per number key (titles in `headroom.tui.screens`)."""

from __future__ import annotations

from collections.abc import Callable

from textual.screen import Screen

from headroom.tui.screens import SCREEN_TITLES
from headroom.tui.screens.base import HeadroomScreen
from headroom.tui.screens.bench import BenchScreen
from headroom.tui.screens.dashboard import DashboardScreen
from headroom.tui.screens.doctor import DoctorScreen
from headroom.tui.screens.gpus import GpusScreen
from headroom.tui.screens.logs import LogsScreen
from headroom.tui.screens.runs import RunsScreen
from headroom.tui.screens.topology import TopologyScreen

SCREEN_CLASSES: dict[str, type[HeadroomScreen]] = {
    "dashboard": DashboardScreen,
    "gpus": GpusScreen,
    "topology": TopologyScreen,
    "doctor": DoctorScreen,
    "logs": LogsScreen,
    "runs": RunsScreen,
    "bench": BenchScreen,
}
assert list(SCREEN_CLASSES) == list(SCREEN_TITLES), "a mode without a title, or the reverse"


def make_modes() -> dict[str, Callable[[], Screen]]:
    """Textual's MODES: a new screen of the mode's class each time the mode is built."""
    return {mode: SCREEN_CLASSES[mode] for mode in SCREEN_TITLES}
