"""Update a Static only when its text changed, and re-layout only when its height may have.

Monitoring overhead matters on a busy GPU host: most panels show the same text from one
scrape to the next, and a layout pass costs far more than a repaint.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from textual.widgets import Static

# The markup each widget shows now (weak: a removed widget takes its entry with it).
_SHOWN: WeakKeyDictionary[Static, str] = WeakKeyDictionary()


def _rows(markup: str, width: int) -> int:
    width = max(1, width)
    return sum(max(1, -(-len(line) // width)) for line in markup.split("\n"))


def set_markup(widget: Static, markup: str) -> bool:
    """Show `markup` in `widget`; returns False when nothing changed."""
    previous = _SHOWN.get(widget)
    if previous == markup:
        return False
    width = widget.content_region.width or widget.size.width or 80
    layout = previous is None or _rows(previous, width) != _rows(markup, width)
    _SHOWN[widget] = markup
    widget.update(markup, layout=layout)
    return True
