"""Screen 7, bench: hosts the bench widget from `headroom.tui.widgets.bench_panel` (the bench
owner's module) when it is installed, and says so when it is not."""

from __future__ import annotations

import importlib
import inspect

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Static

from headroom.tui.screens.base import HeadroomScreen
from headroom.tui.store import Store

PREFERRED = ("BenchPanel", "BenchView", "BenchWidget")


def find_bench_widget() -> tuple[type[Widget] | None, str | None]:
    """The bench module's widget class, or (None, why not)."""
    try:
        module = importlib.import_module("headroom.tui.widgets.bench_panel")
    except ImportError as exc:
        return None, f"the bench view is not available in this build ({exc.name})"
    for name in PREFERRED:
        candidate = getattr(module, name, None)
        if inspect.isclass(candidate) and issubclass(candidate, Widget):
            return candidate, None
    for _, candidate in inspect.getmembers(module, inspect.isclass):
        if (
            candidate.__module__ == module.__name__
            and issubclass(candidate, Widget)
            and "Bench" in candidate.__name__
        ):
            return candidate, None
    return None, "headroom.tui.widgets.bench_panel has no bench widget"


class BenchScreen(HeadroomScreen):
    """The concurrency ramp view, or why it is missing."""

    MODE = "bench"

    def compose_body(self) -> ComposeResult:
        widget_class, why = find_bench_widget()
        if widget_class is None:
            yield Static(
                f"unavailable: {why}\nRun `headroom bench URL` from a shell meanwhile.",
                classes="unavailable",
            )
            return
        try:
            yield (
                widget_class(url=self.app.store.server.url)
                if _takes_url(widget_class)
                else widget_class()
            )
        except Exception as exc:  # their widget failing must not take the app down
            yield Static(
                f"unavailable: the bench view failed to start: {exc}", classes="unavailable"
            )

    def show_body(self, store: Store, what: str) -> None:
        pass


def _takes_url(widget_class: type) -> bool:
    try:
        return "url" in inspect.signature(widget_class).parameters
    except (TypeError, ValueError):
        return False
