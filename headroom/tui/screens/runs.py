"""Screen 6, runs: the run journal as a comparison table, newest first. Each row is one
launch: what changed from its parent, how it ended, and what it measured."""

from __future__ import annotations

import time

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Static

from headroom.supervisor.journal import RunRecord
from headroom.tui import format as fmt
from headroom.tui.format import escape_markup as escape
from headroom.tui.screens.base import HeadroomScreen
from headroom.tui.store import Store
from headroom.tui.widgets.keyed_table import Cell, sync_rows
from headroom.tui.widgets.themed import themed

OUTCOME_VARIABLE = {
    "ready": "success",
    "running": "primary",
    "stopped": "text-muted",
    "failed": "error",
    "crashed": "error",
    "rolled_back": "warning",
    "detached": "text-muted",
}
COLUMNS = (
    "run",
    "started",
    "outcome",
    "changes",
    "KV tokens",
    "ready in",
    "tok/s",
    "TTFT p95",
    "ITL p95",
    "preempt",
    "why",
)


def _changes(record: RunRecord) -> str:
    changes = record.changes or {}
    if not changes:
        return "—" if record.parent_run_id is None else "(same)"
    return ", ".join(f"{name}={value}" for name, value in changes.items())


def run_cells(app: App, record: RunRecord) -> list[Cell]:
    summary = record.summary or {}
    # UTC, as in vLLM's own log lines on most servers, and stable across viewers' zones.
    started = time.strftime("%m-%d %H:%MZ", time.gmtime(record.time)) if record.time else fmt.NA
    outcome = themed(app, record.outcome, OUTCOME_VARIABLE.get(record.outcome, "foreground"))
    ready = None if record.time_to_ready_s is None else f"{record.time_to_ready_s:.0f}s"
    return [
        record.run_id[-8:],
        started,
        outcome,
        _changes(record),
        fmt.count(record.kv_cache_tokens),
        ready or fmt.NA,
        fmt.compact(summary.get("throughput_tok_s")),
        fmt.seconds_as_latency(summary.get("ttft_p95_s")),
        fmt.seconds_as_latency(summary.get("itl_p95_s")),
        fmt.count(summary.get("preemptions")),
        (record.reason or "")[:40],
    ]


class RunsScreen(HeadroomScreen):
    """The journal, newest first; `r` reloads it."""

    MODE = "runs"
    BINDINGS = [Binding("r", "reload", "Reload")]

    def compose_body(self) -> ComposeResult:
        table: DataTable[Cell] = DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        for column in COLUMNS:
            table.add_column(column, key=column)
        yield table
        yield Static(id="runs-empty", classes="unavailable")

    def show_body(self, store: Store, what: str) -> None:
        if what not in {"all", "runs"}:
            return
        empty = self.query_one("#runs-empty", Static)
        reason = store.unavailable.get("runs")
        records = sorted(store.runs, key=lambda r: r.time or 0, reverse=True)
        if reason or not records:
            empty.update(
                escape(f"unavailable: {reason}") if reason else "no runs in the journal yet"
            )
            empty.display = True
        else:
            empty.display = False
        rows = {}
        for record in records:
            try:
                rows[record.run_id] = run_cells(self.app, record)
            except Exception:  # a journal line from another version: skip, keep the rest
                continue
        sync_rows(self.app, self.query_one("#runs-table", DataTable), rows)

    def action_reload(self) -> None:
        self.headroom.reload_runs()
