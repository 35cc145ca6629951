"""Drives `Supervisor.restart` for the restart dialog: the supervisor reports its progress
as `restart_step` events (stop → memory released → start → ready, or rollback); this module
forwards them to the dialog for the length of one restart and words the outcome."""

from __future__ import annotations

from collections.abc import Callable

from headroom.supervisor.restart import RestartPreview
from headroom.supervisor.states import SupervisorEvent
from headroom.tui.format import short_message
from headroom.tui.supervised import SupervisedServer

ProgressCallback = Callable[[str, str, str | None], None]


def step_forwarder(progress: ProgressCallback) -> Callable[[SupervisorEvent], None]:
    """A supervisor event listener that passes restart steps on to `progress`."""

    def forward(event: SupervisorEvent) -> None:
        if event.kind != "restart_step":
            return
        fields = event.fields
        detail = fields.get("detail")
        progress(
            str(fields.get("step")),
            str(fields.get("status")),
            _short(str(detail)) if detail else None,
        )

    return forward


def _short(text: str | None, limit: int = 160) -> str | None:
    return short_message(text, limit) or None


async def drive_restart(
    supervisor: SupervisedServer,
    changes: dict[str, object],
    progress: ProgressCallback,
    expected: RestartPreview | None = None,
) -> tuple[bool, bool, str | None]:
    """Run one restart, showing its steps. Returns (ok, rolled_back, detail)."""
    unsubscribe = supervisor.subscribe(step_forwarder(progress))
    try:
        outcome = await supervisor.restart(changes, expected=expected)
    finally:
        unsubscribe()
    if outcome.ok:
        return True, False, None
    detail = _short(outcome.reason, 400)
    if outcome.failed_log_path:
        log = f"failed run's log: {outcome.failed_log_path}"
        detail = f"{detail}\n{log}" if detail else log
    return False, outcome.rolled_back, detail
