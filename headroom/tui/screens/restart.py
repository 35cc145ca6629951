"""The restart dialog: the supervisor's preview of the restart (flag and environment diff,
old → new), what the change costs, one key to confirm, then progress through stop → memory
released → start → ready (the supervisor's restart_step events), or the rollback.

Attached to a server Headroom did not launch, the dialog still shows the diff and the new
command line to run by hand, and says why it cannot restart the server itself.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from headroom.doctor import Action, plan_to_changes
from headroom.supervisor.restart import RestartPreview
from headroom.supervisor.states import FlagChangeView
from headroom.tui import format as fmt
from headroom.tui import messages as msg
from headroom.tui.format import escape_markup as escape
from headroom.tui.widgets.finding_line import action_text

STEPS = (("stop", "stop"), ("memory", "memory released"), ("start", "start"), ("ready", "ready"))
MARKS = {
    "pending": "[$text-muted]○[/]",
    "running": "[$warning]◐[/]",
    "done": "[$success]●[/]",
    "failed": "[$error]✖[/]",
    "skipped": "[$text-muted]–[/]",
}


@dataclass
class RestartPlan:
    """What a restart would change, as the supervisor previews it. `error` set means the
    change cannot be applied (or the command line is unknown)."""

    title: str
    why: str | None
    cost: str | None
    changes: dict[str, object] = field(default_factory=dict)
    preview: RestartPreview | None = None
    error: str | None = None

    @property
    def diff(self) -> tuple[FlagChangeView, ...]:
        return self.preview.diff if self.preview is not None else ()

    @property
    def new_argv(self) -> list[str] | None:
        return list(self.preview.argv) if self.preview is not None else None


Previewer = Callable[[dict[str, object]], RestartPreview | None]


def restart_plan(action: Action, preview: Previewer) -> RestartPlan:
    """A doctor `Action` as the restart the supervisor would run: `preview(changes)` is the
    supervisor's own preview (Supervisor.preview), so the dialog shows what will launch."""
    plan = RestartPlan(title=action_text(action), why=action.why, cost=action.cost)
    try:
        plan.changes = dict(plan_to_changes(action))
    except Exception as exc:  # a doctor action that cannot become flags: say so
        plan.error = f"cannot turn this action into flags: {exc}"
        return plan
    try:
        plan.preview = preview(plan.changes)
    except ValueError as exc:
        plan.error = f"cannot apply {plan.changes}: {exc}"
        return plan
    if plan.preview is None:
        plan.error = "the server's command line is unknown, so the new flags cannot be shown"
    return plan


def diff_markup(diff: Sequence[FlagChangeView]) -> str:
    if not diff:
        return "[$text-muted](no flag changes)[/]"
    width = max(len(change.name) for change in diff)
    rows = []
    for change in diff:
        old = escape(fmt.flag_value(change.old))
        new = escape(fmt.flag_value(change.new))
        rows.append(
            f"  [b]{escape(change.name):<{width}}[/b]  [$error]{old}[/] → [$success]{new}[/]"
        )
    return "\n".join(rows)


class RestartDialog(ModalScreen[bool]):
    """Confirm and follow a restart with changed flags. `y`/enter confirms, `n`/escape
    cancels (or closes once finished)."""

    BINDINGS = [
        Binding("y", "confirm", "Confirm"),
        Binding("enter", "confirm", "Confirm", show=False),
        Binding("n", "cancel", "Cancel"),
        Binding("escape", "cancel", "Close", show=False),
    ]

    DEFAULT_CSS = """
    RestartDialog { align: center middle; }
    RestartDialog > VerticalScroll {
        width: 90%; max-width: 100; height: auto; max-height: 95%;
        border: round $warning; background: $surface; padding: 0 1;
    }
    RestartDialog #restart-progress { margin-top: 1; }
    RestartDialog #restart-keys { margin-top: 1; color: $text-muted; }
    """

    def __init__(self, plan: RestartPlan, *, can_restart: bool) -> None:
        super().__init__()
        self.plan = plan
        self.can_restart = can_restart and plan.error is None
        self.phase = "confirm"  # confirm -> running -> finished
        self.step_status = {step: "pending" for step, _ in STEPS}
        self.step_detail: dict[str, str] = {}
        self.outcome: str | None = None
        self.succeeded = False

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = "Restart with new flags"
            yield Static(self._head_markup(), id="restart-head")
            progress = Static("", id="restart-progress")
            progress.display = False  # nothing to show until confirmed (no blank gap)
            yield progress
            yield Static(self._keys_markup(), id="restart-keys")

    def _head_markup(self) -> str:
        plan = self.plan
        lines = [f"[b]{escape(plan.title)}[/b]"]
        if plan.why:
            lines.append(f"why: {escape(plan.why)}")
        lines += ["", "[b]flags[/b] (old → new)", diff_markup(plan.diff)]
        if plan.cost:
            lines += ["", f"[b]cost[/b]: {escape(plan.cost)}"]
        if plan.error:
            lines += ["", f"[$error]{escape(plan.error)}[/]"]
        elif not self.can_restart and plan.new_argv:
            lines += [
                "",
                "[$warning]Headroom is only attached to this server, so it cannot restart it.[/]",
                "Restart it yourself with:",
                escape(shlex.join(plan.new_argv)),
                "",
                "[$text-muted]To let Headroom restart it, attach with "
                '--launched-with "vllm serve MODEL --flags..." (how it was started).[/]',
            ]
        return "\n".join(lines)

    def _keys_markup(self) -> str:
        if self.phase == "running":
            return "restarting… (the old flags come back if the new ones fail)"
        if self.phase == "finished" and self.succeeded:
            return "[$accent]enter[/] back to the dashboard to watch it serve"
        if self.phase == "finished" or not self.can_restart:
            return "[$accent]escape[/] close"
        return "[$accent]y[/] restart now   [$accent]n[/] cancel"

    def _progress_markup(self) -> str:
        parts = [f"{MARKS[self.step_status[step]]} {label}" for step, label in STEPS]
        lines = ["  →  ".join(parts)]
        if "rollback" in self.step_status:
            lines.append(f"{MARKS[self.step_status['rollback']]} rollback to the previous flags")
        for step, _ in (*STEPS, ("rollback", "")):
            detail = self.step_detail.get(step)
            if detail:
                lines.append(f"  [$text-muted]{step}:[/] {escape(detail)}")
        if self.outcome:
            lines.append(self.outcome)
        return "\n".join(lines)

    def _refresh(self) -> None:
        progress = self.query_one("#restart-progress", Static)
        progress.display = True
        progress.update(self._progress_markup())
        self.query_one("#restart-keys", Static).update(self._keys_markup())

    def action_confirm(self) -> None:
        if self.phase == "finished":
            self.action_cancel()  # enter closes a finished dialog too
            return
        if self.phase != "confirm" or not self.can_restart:
            return
        self.phase = "running"
        self.step_status["stop"] = "running"
        self._refresh()
        self.app.run_restart(self.plan.changes, self.plan.preview)  # type: ignore[attr-defined]

    def action_cancel(self) -> None:
        if self.phase == "running":
            self.notify("a restart is in progress; wait for it to finish", severity="warning")
            return
        self.dismiss(self.succeeded)  # True: the app shows the dashboard

    @on(msg.RestartProgressed)
    def _on_progress(self, message: msg.RestartProgressed) -> None:
        self.step_status[message.step] = message.status
        if message.detail:
            self.step_detail[message.step] = message.detail
        # The next step starts when this one is done, so show it running.
        order = [step for step, _ in STEPS]
        if message.status == "done" and message.step in order:
            index = order.index(message.step)
            if index + 1 < len(order) and self.step_status[order[index + 1]] == "pending":
                self.step_status[order[index + 1]] = "running"
        self._refresh()

    @on(msg.RestartFinished)
    def _on_finished(self, message: msg.RestartFinished) -> None:
        self.phase = "finished"
        self.succeeded = bool(message.ok)
        for step, status in self.step_status.items():
            if status == "running":
                self.step_status[step] = "done" if message.ok else "failed"
        if message.ok:
            self.outcome = "[$success][b]restarted: the server is ready with the new flags[/b][/]"
        elif message.rolled_back:
            self.outcome = (
                "[$error][b]the new flags failed; rolled back[/b][/] "
                "(the previous flags are running again)"
            )
        else:
            self.outcome = "[$error][b]restart failed[/b][/]"
        if message.detail:
            self.outcome += f"\n{escape(message.detail)}"
        self._refresh()
