"""A restart's progress as steps: stop -> memory released -> start -> ready, or rollback.

The restarter follows its own supervisor's events ("restart", "state", "memory", "launch",
"rollback") for the length of one restart and emits each step change as a `restart_step`
event (fields: step, status, detail), so whoever shows a restart (the TUI's dialog, a
script) subscribes to one kind of event instead of re-deriving the steps.
"""

from __future__ import annotations

from collections.abc import Callable

from headroom.supervisor.states import SupervisorEvent

STEPS = ("stop", "memory", "start", "ready", "rollback")
STATUSES = ("pending", "running", "done", "failed", "skipped")

ProgressCallback = Callable[[str, str, str | None], None]


class RestartProgress:
    """Maps supervisor events to restart steps, remembering which steps already finished."""

    def __init__(self, progress: ProgressCallback) -> None:
        self.progress = progress
        self.done: set[str] = set()
        self.rolling_back = False

    def mark(self, step: str, status: str, detail: str | None = None) -> None:
        if status == "done":
            if step in self.done:
                return
            self.done.add(step)
        self.progress(step, status, detail)

    def on_event(self, event: SupervisorEvent) -> None:
        kind = event.kind
        fields = event.fields or {}
        if kind == "rollback":
            self.rolling_back = True
            self.mark("start", "failed", event.message)
            self.progress("rollback", "running", None)
            return
        if self.rolling_back:
            return  # the rollback's own stop/start are summed up by its outcome
        if kind == "restart":
            self.progress("stop", "running", None)
        elif kind == "memory":
            released = fields.get("released")
            if released is None:
                self.mark("stop", "done")
                self.progress("memory", "running", event.message)
            else:
                self.mark("memory", "done" if released else "failed", event.message)
        elif kind == "launch":
            self.mark("stop", "done")
            self.mark("memory", "done")
            self.progress("start", "running", None)
        elif kind == "state":
            new = str(fields.get("new", ""))
            if new == "stopped":
                self.mark("stop", "done")
            elif new == "ready":
                self.mark("start", "done")
                self.mark("ready", "done")
            elif new == "failed":
                self.progress("start", "failed", str(fields.get("reason") or event.message))

    def finish(
        self, *, ok: bool, rolled_back: bool = False, rollback_ok: bool | None = None
    ) -> None:
        """The outcome's own steps: ready, or how the rollback went."""
        if ok:
            self.mark("ready", "done", None)
        elif rolled_back:
            self.progress(
                "rollback",
                "done" if rollback_ok else "failed",
                "previous flags running again"
                if rollback_ok
                else "the previous flags did not come back either",
            )
