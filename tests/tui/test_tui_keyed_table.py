"""Keyed DataTable updates keep the cursor; a theme switch recolours table cells."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable
from tui_helpers import settle

from headroom.tui.widgets.keyed_table import _same, sync_rows


class TableApp(App):
    def compose(self) -> ComposeResult:
        table = DataTable(cursor_type="row")
        table.add_columns("a", "b")
        yield table


async def test_rows_update_in_place_and_cursor_stays():
    app = TableApp()
    async with app.run_test() as pilot:
        table = app.query_one(DataTable)
        sync_rows(app, table, {"x": ["1", "2"], "y": ["3", "4"], "z": ["5", "6"]})
        await pilot.pause()
        table.move_cursor(row=2)
        sync_rows(app, table, {"x": ["1", "9"], "y": ["3", "4"], "z": ["5", "7"], "w": ["0", "0"]})
        await pilot.pause()
        assert table.cursor_row == 2
        assert table.get_row("z") == ["5", "7"]
        sync_rows(app, table, {"z": ["5", "7"]})
        await pilot.pause()
        assert [k.value for k in table.rows] == ["z"]


def test_same_counts_text_colour():
    assert _same(Text("ok", style="green"), Text("ok", style="green"))
    assert not _same(Text("ok", style="green"), Text("ok", style="red"))
    assert not _same("ok", Text("ok"))
    assert _same("1", "1")


async def test_theme_switch_recolours_gpu_owner_cells(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        table = app.screen.query_one("#gpu-processes", DataTable)
        before = str(table.get_row("2:5120")[3].style)
        app.theme = "headroom-light"
        await pilot.pause()
        after = str(table.get_row("2:5120")[3].style)
        assert before != after
