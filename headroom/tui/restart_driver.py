"""Drives `Supervisor.restart` and turns the supervisor's events into the restart dialog's
steps: stop → memory released → start → ready, or rollback.

The supervisor reports what happens through `SupervisorEvent`s (kinds "restart", "state",
"memory", "launch", "rollback"); this module listens to them for the length of one restart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headroom.tui.format import short_message

ProgressCallback = Callable[[str, str, str | None], None]


class RestartProgress:
    """Maps supervisor events to dialog steps, remembering which steps already finished."""

    def __init__(self, progress: ProgressCallback) -> None:
        self.progress = progress
        self.done: set[str] = set()
        self.rolling_back = False

    def _mark(self, step: str, status: str, detail: str | None = None) -> None:
        if status == "done":
            if step in self.done:
                return
            self.done.add(step)
        self.progress(step, status, detail)

    def on_event(self, event: Any) -> None:
        kind = getattr(event, "kind", None)
        fields = getattr(event, "fields", {}) or {}
        if kind == "rollback":
            self.rolling_back = True
            self._mark("start", "failed", _short(event.message))
            self.progress("rollback", "running", None)
            return
        if self.rolling_back:
            return  # the rollback's own stop/start are summed up by its outcome
        if kind == "restart":
            self.progress("stop", "running", None)
        elif kind == "memory":
            released = fields.get("released")
            if released is None:
                self._mark("stop", "done")
                self.progress("memory", "running", _short(event.message))
            else:
                self._mark("memory", "done" if released else "failed", _short(event.message))
        elif kind == "launch":
            self._mark("stop", "done")
            self._mark("memory", "done")
            self.progress("start", "running", None)
        elif kind == "state":
            new = str(fields.get("new", ""))
            if new == "stopped":
                self._mark("stop", "done")
            elif new == "ready":
                self._mark("start", "done")
                self._mark("ready", "done")
            elif new == "failed":
                self.progress("start", "failed", _short(str(fields.get("reason") or event.message)))


def _short(text: str | None, limit: int = 160) -> str | None:
    return short_message(text, limit) or None


async def drive_restart(
    supervisor: Any,
    changes: dict[str, object],
    progress: ProgressCallback,
    listeners: list | None = None,
) -> tuple[bool, bool, str | None]:
    """Run one restart; `listeners` is the event fan-out list the source keeps (the
    tracker is added for the restart's duration). Returns (ok, rolled_back, detail)."""
    tracker = RestartProgress(progress)
    if listeners is not None:
        listeners.append(tracker.on_event)
    try:
        outcome = await supervisor.restart(changes)
    finally:
        if listeners is not None and tracker.on_event in listeners:
            listeners.remove(tracker.on_event)
    ok = bool(getattr(outcome, "ok", False))
    rolled_back = bool(getattr(outcome, "rolled_back", False))
    reason = getattr(outcome, "reason", None)
    if ok:
        tracker._mark("ready", "done", None)
        return True, False, None
    if rolled_back:
        rollback_ok = getattr(outcome, "rollback_ok", None)
        progress(
            "rollback",
            "done" if rollback_ok else "failed",
            "previous flags running again"
            if rollback_ok
            else "the previous flags did not come back either",
        )
    log_path = getattr(outcome, "failed_log_path", None)
    detail = _short(reason, 400)
    if log_path:
        detail = (
            f"{detail}\nfailed run's log: {log_path}" if detail else f"failed run's log: {log_path}"
        )
    return False, rolled_back, detail
