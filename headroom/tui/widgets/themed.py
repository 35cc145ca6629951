"""Theme-coloured text for widgets that take Rich renderables (DataTable cells).

Textual's content markup understands `$variables`, but DataTable cells are Rich text, so
the colour is looked up from the running theme at draw time. Screens redraw on theme change.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.app import App

from headroom.probes.safe_text import safe_text


def themed(app: App, text: str, variable: str, *, bold: bool = False) -> Text:
    """`text` in the colour of theme variable `variable` (name without the `$`)."""
    colour = app.theme_variables.get(variable)
    try:
        style = Style(color=colour, bold=bold) if colour else Style(bold=bold)
    except Exception:  # a colour Rich cannot parse (e.g. with alpha): plain but readable
        style = Style(bold=bold)
    return Text(safe_text(text), style=style)  # cells may quote a server's or a journal's text
