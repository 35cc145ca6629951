"""Update a DataTable by row key: drop stale rows, update changed cells, add new ones, all
inside one batch update, so the cursor and scroll position survive every refresh."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual.app import App
from textual.widgets import DataTable

from headroom.probes.safe_text import is_safe, safe_text

Cell = str | Text  # what Headroom's tables hold: plain text, or theme-coloured Rich text


def sync_rows(app: App, table: DataTable, rows: Mapping[str, Sequence[Cell]]) -> None:
    """Make `table` show exactly `rows` (key -> cells, in column order)."""
    columns = list(table.columns)
    # Cells carry process command lines, journal models, server strings: escaped here once.
    rows = {key: [_safe_cell(cell) for cell in cells] for key, cells in rows.items()}
    with app.batch_update():
        for stale in [k for k in table.rows if k.value not in rows]:
            table.remove_row(stale)
        for key, cells in rows.items():
            if key in table.rows:
                current = table.get_row(key)
                for column, old, new in zip(columns, current, cells, strict=False):
                    if not _same(old, new):
                        table.update_cell(key, column, new)
            else:
                table.add_row(*cells, key=key)


def _safe_cell(cell: Cell) -> Cell:
    if isinstance(cell, str):
        return safe_text(cell)
    if isinstance(cell, Text) and not is_safe(cell.plain):
        return Text(safe_text(cell.plain), style=cell.style)
    return cell


def _same(old: object, new: object) -> bool:
    """Equal cells, counting a Text's colour (so a theme switch recolours the table)."""
    if isinstance(old, Text) or isinstance(new, Text):
        return (
            isinstance(old, Text)
            and isinstance(new, Text)
            and old.plain == new.plain
            and str(old.style) == str(new.style)
        )
    return old == new
