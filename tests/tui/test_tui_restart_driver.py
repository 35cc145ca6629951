"""Supervisor events become restart-dialog steps; outcomes become ok / rolled back."""

from __future__ import annotations

from types import SimpleNamespace

from headroom.tui.restart_driver import RestartProgress, drive_restart


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


class FakeSupervisor:
    def __init__(self, outcome, events):
        self.outcome, self.events, self.listeners = outcome, events, None

    async def restart(self, changes):
        for e in self.events:
            for listener in list(self.listeners):
                listener(e)
        return self.outcome


async def test_drive_restart_ok():
    steps, progress = record()
    listeners = []
    sup = FakeSupervisor(
        SimpleNamespace(ok=True, rolled_back=False, reason="ready"),
        [event("restart"), event("launch"), event("state", new="ready")],
    )
    sup.listeners = listeners
    assert await drive_restart(sup, {"max_num_seqs": 32}, progress, listeners) == (
        True,
        False,
        None,
    )
    assert ("ready", "done") in steps
    assert listeners == []  # the tracker is removed afterwards


async def test_drive_restart_rolled_back_reports_log():
    steps, progress = record()
    listeners = []
    outcome = SimpleNamespace(
        ok=False,
        rolled_back=True,
        rollback_ok=True,
        reason="CUDA out of memory",
        failed_log_path="/tmp/run.log",
    )
    sup = FakeSupervisor(outcome, [event("restart"), event("rollback", "restoring")])
    sup.listeners = listeners
    ok, rolled_back, detail = await drive_restart(sup, {}, progress, listeners)
    assert (ok, rolled_back) == (False, True)
    assert "CUDA out of memory" in detail and "/tmp/run.log" in detail
    assert ("rollback", "done") in steps
