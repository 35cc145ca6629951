"""`headroom serve --headless`: the supervisor without the TUI, for systemd, CI and scripts.

State changes and findings are printed as lines (or JSON lines with --json). SIGTERM/SIGINT
stop the server the way systemd expects (whole group, then the GPU memory wait) unless
detach_on_exit. With auto_fix N, a known start-up failure makes it apply the doctor's top
finding's first action that has a value, one knob per restart, at most N times; without it
nothing changes unasked.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from typing import TextIO

from headroom.doctor.findings import action_words
from headroom.probes.safe_text import safe_text
from headroom.supervisor.process import LaunchError
from headroom.supervisor.restart import auto_fix_changes
from headroom.supervisor.states import (
    STARTUP_FAILURES,
    PreflightError,
    ServerState,
    SupervisorEvent,
)
from headroom.supervisor.supervisor import Supervisor

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class EventPrinter:
    """on_event listener that prints one line (or one JSON object) per event."""

    def __init__(self, *, as_json: bool = False, stream: TextIO | None = None) -> None:
        self.as_json = as_json
        self.stream = stream or sys.stdout

    def __call__(self, event: SupervisorEvent) -> None:
        self.write(event)

    def write(self, event: SupervisorEvent) -> None:
        if self.as_json:
            line = json.dumps(event.to_json(), default=str)
        else:
            stamp = time.strftime("%H:%M:%S", time.localtime(event.at))
            line = f"{stamp} {event.kind:<9} {event.message}"
            if event.kind == "finding":
                for evidence in _listed(event.fields.get("evidence")):
                    line += f"\n{'':18} evidence: {evidence}"
                for action in _listed(event.fields.get("actions")):
                    value = "" if action.get("value") is None else f" to {action['value']}"
                    line += f"\n{'':18} fix: {action['direction']} {action['knob']}{value}"
                    if action.get("why"):
                        line += f" ({action['why']})"
        if not self.as_json:  # messages quote log lines: control characters shown escaped
            line = safe_text(line, multiline=True)
        try:
            print(line, file=self.stream, flush=True)
        except (BrokenPipeError, ValueError):
            pass  # the reader went away; supervising matters more than printing

    def say(self, kind: str, message: str, state: ServerState, **fields: object) -> None:
        self.write(SupervisorEvent(kind, message, state, fields))


def _listed(value: object) -> list:
    return list(value) if isinstance(value, list | tuple) else []


def is_startup_failure(sup: Supervisor) -> bool:
    return sup.state == ServerState.FAILED and sup.failure_kind in STARTUP_FAILURES


async def run_headless(
    sup: Supervisor,
    printer: EventPrinter,
    *,
    auto_fix: int = 0,
    detach_on_exit: bool = False,
    already_running: bool = False,
) -> int:
    """Start (or keep watching) the server until a signal or a final failure."""
    loop = asyncio.get_running_loop()
    quit_requested = asyncio.Event()
    signal_name: list[str] = []

    def on_signal(sig: signal.Signals) -> None:
        signal_name.append(sig.name)
        quit_requested.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal, sig)
        except (NotImplementedError, RuntimeError):
            pass
    try:
        if already_running:
            await sup.watch()
        else:
            try:
                await sup.start()
            except PreflightError:
                return EXIT_USAGE  # each failure was printed as a preflight event
            except LaunchError:
                return EXIT_USAGE  # the failed state event said why
        fixes_left = auto_fix
        while True:
            done = await _wait_quit_or_final(sup, quit_requested)
            if quit_requested.is_set():
                break
            if not done:
                continue
            if is_startup_failure(sup) and fixes_left > 0:
                plan = auto_fix_changes(sup.diagnosis, sup.command, sup.failure_reason)
                if plan is None:
                    printer.say("notice", "auto-fix: the doctor has no change to try", sup.state)
                    return EXIT_FAILED
                changes, finding, action = plan
                attempt = auto_fix - fixes_left + 1
                fixes_left -= 1
                printer.say(
                    "notice",
                    f"auto-fix {attempt}/{auto_fix}: {finding.title}: {action_words(action)}",
                    sup.state,
                    finding=finding.id,
                    changes=changes,
                )
                outcome = await _unless_quit(
                    sup.restart(changes, reason=f"auto-fix {attempt}/{auto_fix}"), quit_requested
                )
                if outcome is None:
                    break  # a signal came during the restart: stop (or detach) below
                printer.say(
                    "notice",
                    f"auto-fix {attempt}/{auto_fix}: "
                    + ("ready" if outcome.ok else f"did not help: {outcome.reason[:300]}"),
                    sup.state,
                    ok=outcome.ok,
                )
                continue
            if is_startup_failure(sup) and auto_fix == 0 and sup.diagnosis is not None:
                printer.say(
                    "notice",
                    "not changing anything unasked: rerun with --auto-fix 1 to apply the "
                    "doctor's first fix, or change the flags yourself",
                    sup.state,
                )
            return EXIT_FAILED
        if detach_on_exit:
            await sup.detach()
            printer.say("notice", f"detached on {signal_name[0]}; server left running", sup.state)
        else:
            printer.say("notice", f"{signal_name[0]}: stopping the server", sup.state)
            await sup.stop()
        return EXIT_OK
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.remove_signal_handler(sig)
            except (NotImplementedError, RuntimeError):
                pass
        await sup.close()
        await sup.metrics.aclose()


async def _unless_quit(coro, quit_requested: asyncio.Event):
    """Run coro unless a quit signal comes first (then cancel it and return None)."""
    work = asyncio.ensure_future(coro)
    waiter = asyncio.ensure_future(quit_requested.wait())
    try:
        await asyncio.wait({work, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if work.done():
        return work.result()
    work.cancel()
    try:
        await work
    except (asyncio.CancelledError, Exception):
        pass
    return None


async def _wait_quit_or_final(sup: Supervisor, quit_requested: asyncio.Event) -> bool:
    """Wait for a quit signal or a final state (failed/stopped with no restart pending)."""
    while not quit_requested.is_set():
        final = sup.state in (ServerState.FAILED, ServerState.STOPPED)
        if final and not sup.restart_pending:
            return True
        if final:  # a crash restart is scheduled: let it happen
            try:
                await asyncio.wait_for(quit_requested.wait(), 0.25)
            except TimeoutError:
                pass
            continue
        waiter = asyncio.create_task(quit_requested.wait())
        state = asyncio.create_task(sup.wait_state(ServerState.FAILED, ServerState.STOPPED))
        try:
            await asyncio.wait({waiter, state}, timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (waiter, state):
                task.cancel()
    return False
