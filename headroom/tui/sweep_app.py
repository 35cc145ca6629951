"""`headroom sweep ... --tui`: the sweep runs in a worker of this small app, whose one screen
is the Bench screen's sweep view (widgets/sweep_panel.py): configuration i/N and its phase,
the table as it fills, the chosen configuration marked. The app ends with the rows (q after
the sweep), or None when quit while a configuration runs: that configuration's server is
stopped first (the runner's own clean-up), and the sweep can be resumed with its id.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerCancelled, WorkerState

from headroom.sweep.runner import SweepProgress
from headroom.sweep.table import SweepRow
from headroom.tui.format import escape_markup as escape
from headroom.tui.themed_app import ThemedApp
from headroom.tui.widgets.sweep_panel import SweepPanel

ProgressSink = Callable[[SweepProgress], None]
SweepRunner = Callable[[ProgressSink], Awaitable[list[SweepRow]]]


class SweepProgressed(Message):
    def __init__(self, progress: SweepProgress) -> None:
        super().__init__()
        self.progress = progress


class SweepEnded(Message):
    """Posted after the last progress message, so it is drawn after it."""

    def __init__(self, error: str | None) -> None:
        super().__init__()
        self.error = error


class SweepApp(ThemedApp[list[SweepRow] | None]):
    TITLE = "Headroom sweep"
    CSS = "#sweep-head { height: 1; padding: 0 1; background: $panel; }"
    BINDINGS = [Binding("q", "quit", "Quit")]

    def __init__(
        self, runner: SweepRunner, *, goal: str, sweep_id: str, theme: str | None = None
    ) -> None:
        super().__init__()
        self.runner = runner
        self.goal = goal
        self.sweep_id = sweep_id
        self.rows: list[SweepRow] | None = None
        self.error: str | None = None
        self._worker: Worker | None = None
        self.use_themes(theme)

    def compose(self) -> ComposeResult:
        yield Static(
            f"[b]7 Bench[/b] · sweep {escape(self.sweep_id)} · goal {escape(self.goal)}",
            id="sweep-head",
        )
        yield SweepPanel(self.goal, id="sweep")
        yield Footer()

    def on_mount(self) -> None:
        self._worker = self._run()

    @property
    def running(self) -> bool:
        worker = self._worker
        return worker is not None and worker.state in (WorkerState.PENDING, WorkerState.RUNNING)

    @work(exclusive=True, group="sweep", exit_on_error=False)
    async def _run(self) -> None:
        def say(progress: SweepProgress) -> None:
            self.post_message(SweepProgressed(progress))

        try:
            self.rows = await self.runner(say)
        except Exception as exc:  # the table so far stays on screen with the reason
            self.error = f"{type(exc).__name__}: {exc}"
        self.post_message(SweepEnded(self.error))

    @on(SweepProgressed)
    def _on_progress(self, message: SweepProgressed) -> None:
        self.query_one(SweepPanel).record(message.progress)

    @on(SweepEnded)
    def _on_ended(self, message: SweepEnded) -> None:
        self.query_one(SweepPanel).finish(message.error)

    async def action_quit(self) -> None:
        worker = self._worker
        if worker is not None and self.running:
            # The runner stops the running configuration's server in its own clean-up.
            self.query_one("#sweep-progress", Static).update("stopping the running configuration …")
            worker.cancel()
            with contextlib.suppress(WorkerCancelled):
                await worker.wait()
            self.exit(None)
            return
        self.exit(self.rows)
