"""Update a Static only when its text changed, and re-layout only when its height may have.

Monitoring overhead matters on a busy GPU host: most panels show the same text from one
scrape to the next, and a layout pass costs far more than a repaint.
"""

from __future__ import annotations

from textual.widgets import Static


def _rows(markup: str, width: int) -> int:
    width = max(1, width)
    return sum(max(1, -(-len(line) // width)) for line in markup.split("\n"))


def set_markup(widget: Static, markup: str) -> bool:
    """Show `markup` in `widget`; returns False when nothing changed."""
    previous = getattr(widget, "_headroom_markup", None)
    if previous == markup:
        return False
    width = widget.content_region.width or widget.size.width or 80
    layout = previous is None or _rows(previous, width) != _rows(markup, width)
    widget._headroom_markup = markup  # type: ignore[attr-defined]
    widget.update(markup, layout=layout)
    return True
