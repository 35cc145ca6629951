"""The sweep view of the Bench screen: which configuration runs (i/N) and in which phase,
and the comparison table filling in as each configuration finishes (the same cells as
`headroom sweep`'s text table, baseline first, the chosen configuration marked with '*'),
with the choice and the runner-up's cost under it.

It only draws SweepProgress events (headroom.sweep.runner) handed to `record`; whoever runs
the sweep (tui/sweep_app.py) feeds it.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from headroom.probes.safe_text import safe_text
from headroom.sweep.runner import SweepProgress
from headroom.sweep.table import HEADERS, SweepRow, table_cells
from headroom.tui.format import escape_markup as escape

# The columns that fit 80 columns best; the rest of the table is in `headroom sweep`'s output.
SHOWN = ("configuration", "GPUs", "outcome", "tok/s", "vs base", "p95 c=1 s", "knee", "notes")
_INDEX = [HEADERS.index(name) for name in SHOWN]
FINISHED = ("done", "failed", "skipped", "resumed")


class SweepPanel(Vertical):
    """Progress line, table, choice. `rows` holds each configuration's row by label."""

    DEFAULT_CSS = """
    SweepPanel { height: 1fr; }
    SweepPanel #sweep-progress { height: auto; padding: 0 1; }
    SweepPanel #sweep-table { height: auto; max-height: 1fr; }
    SweepPanel #sweep-choice { height: auto; padding: 0 1; }
    """

    def __init__(self, goal: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.goal = goal
        self.rows: dict[str, SweepRow] = {}
        self.progress: SweepProgress | None = None
        self.finished = 0

    def compose(self) -> ComposeResult:
        yield Static("waiting for the first configuration …", id="sweep-progress")
        table: DataTable = DataTable(id="sweep-table", cursor_type="row", zebra_stripes=True)
        table.add_columns(*SHOWN)
        yield table
        yield Static("", id="sweep-choice")

    def record(self, progress: SweepProgress) -> None:
        self.progress = progress
        if progress.row is not None:
            self.rows[progress.row.label] = progress.row
        if progress.phase in FINISHED:
            self.finished = len(self.rows)
        self._draw_progress()
        if progress.row is not None:
            self._draw_table()

    def finish(self, error: str | None = None) -> None:
        """The sweep ended (error: why it stopped early)."""
        line = self.query_one("#sweep-progress", Static)
        total = self.progress.total if self.progress is not None else len(self.rows)
        if error:
            line.update(f"[$error]sweep stopped:[/] {escape(safe_text(error))}")
        else:
            line.update(
                f"[$success]sweep done[/]: {len(self.rows)}/{total} configurations · q: quit"
            )

    def _draw_progress(self) -> None:
        p = self.progress
        if p is None:
            return
        text = f" · {p.text}" if p.text and p.phase in ("starting", "failed", "skipped") else ""
        bar_w = 20
        done = round(bar_w * self.finished / p.total) if p.total else 0
        bar = "█" * done + "░" * (bar_w - done)
        self.query_one("#sweep-progress", Static).update(
            f"[b]configuration {p.index + 1}/{p.total}[/b] {escape(safe_text(p.label))} · "
            f"[$accent]{escape(p.phase)}[/]{escape(safe_text(text))[:200]}\n"
            f"[$primary]{bar}[/] {self.finished}/{p.total} finished"
        )

    def _draw_table(self) -> None:
        table = self.query_one("#sweep-table", DataTable)
        cells, choice = table_cells(list(self.rows.values()), self.goal)
        table.clear()
        for row in cells:
            shown = [row[i] for i in _INDEX]
            style = "bold" if shown[0].startswith("*") else ""
            # Text, never markup: notes quote log event kinds and failure reasons.
            table.add_row(*(Text(safe_text(c), style=style) for c in shown))
        choice_line = self.query_one("#sweep-choice", Static)
        if choice.label:
            runner = f"\n  runner-up: {escape(choice.runner_up)}" if choice.runner_up else ""
            choice_line.update(
                f"goal {self.goal}: [$success]*{escape(choice.label)}[/] "
                f"({escape(choice.why)}){runner}"
            )
        else:
            choice_line.update(f"goal {self.goal}: nothing to choose yet ({escape(choice.why)})")
