"""Plain-text capture of what a running app shows, for readable assertions."""

from __future__ import annotations

import io

from rich.console import Console


def screen_text(app) -> str:
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        record=True,
        legacy_windows=False,
        color_system=None,
        force_terminal=True,
    )
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text()
