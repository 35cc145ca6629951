"""Helpers for TUI tests: a plain-text screen capture and waiting for workers."""

from __future__ import annotations

import io

from rich.console import Console


def screen_text(app) -> str:
    """What the terminal shows, as plain text, for readable assertions."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        record=True,
        color_system=None,
        force_terminal=True,
        legacy_windows=False,
    )
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text()


async def settle(app, pilot) -> None:
    """Let every worker finish and every posted message be handled."""
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()
