"""Supervisor events become restart steps (the supervisor's RestartProgress); the TUI's
driver forwards restart_step events to the dialog; outcomes become ok / rolled back."""

from __future__ import annotations

from types import SimpleNamespace

from headroom.supervisor.restart_progress import RestartProgress
from headroom.tui.restart_driver import drive_restart


def event(kind, message="", **fields):
    return SimpleNamespace(kind=kind, message=message, fields=fields)


def record():
    steps = []
    return steps, lambda step, status, detail=None: steps.append((step, status))


def test_successful_restart_walks_every_step():
    steps, progress = record()
    tracker = RestartProgress(progress)
    for e in (
        event("restart"),
        event("state", new="stopping"),
        event("state", new="stopped"),
        event("memory", "waiting for the GPUs"),
        event("memory", "released", released=True),
        event("launch"),
        event("state", new="starting"),
        event("state", new="ready"),
    ):
        tracker.on_event(e)
    assert [s for s in steps if s[1] == "done"] == [
        ("stop", "done"),
        ("memory", "done"),
        ("start", "done"),
        ("ready", "done"),
    ]


def test_rollback_marks_start_failed():
    steps, progress = record()
    tracker = RestartProgress(progress)
    for e in (
        event("restart"),
        event("launch"),
        event("state", new="failed", reason="OOM"),
        event("rollback", "restoring"),
        event("state", new="ready"),
    ):
        tracker.on_event(e)
    assert ("start", "failed") in steps
    assert ("rollback", "running") in steps
    assert ("ready", "done") not in steps  # the rollback's ready is not the new flags' ready


def step(step, status, detail=None):
    return SimpleNamespace(
        kind="restart_step", message="", fields={"step": step, "status": status, "detail": detail}
    )


class FakeSupervisor:
    """Emits the restart_step events a Supervisor's restarter emits, to its subscribers."""

    def __init__(self, outcome, events):
        self.outcome, self.events, self.listeners = outcome, events, []

    def subscribe(self, listener):
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    async def restart(self, changes, expected=None):
        for e in self.events:
            for listener in list(self.listeners):
                listener(e)
        return self.outcome


def outcome(**fields):
    base = dict(ok=False, rolled_back=False, rollback_ok=None, reason="", failed_log_path=None)
    return SimpleNamespace(**{**base, **fields})


async def test_drive_restart_ok():
    steps, progress = record()
    sup = FakeSupervisor(
        outcome(ok=True, reason="ready"),
        [event("restart"), step("stop", "running"), step("ready", "done")],
    )
    assert await drive_restart(sup, {"max_num_seqs": 32}, progress) == (True, False, None)
    assert steps == [("stop", "running"), ("ready", "done")]  # only restart steps pass
    assert sup.listeners == []  # the forwarder is removed afterwards


async def test_drive_restart_rolled_back_reports_log():
    steps, progress = record()
    result = outcome(
        rolled_back=True,
        rollback_ok=True,
        reason="CUDA out of memory",
        failed_log_path="/tmp/run.log",
    )
    sup = FakeSupervisor(result, [step("start", "failed"), step("rollback", "done")])
    ok, rolled_back, detail = await drive_restart(sup, {}, progress)
    assert (ok, rolled_back) == (False, True)
    assert "CUDA out of memory" in detail and "/tmp/run.log" in detail
    assert ("rollback", "done") in steps
