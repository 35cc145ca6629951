"""Waiting for the server's state to change, and cancelling a watch task, from any event loop.

asyncio primitives bind to the loop that first waits on them; the TUI runs its own loop and
`headroom serve` may stop the server from a fresh one afterwards, so one Event per loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class StateSignal:
    def __init__(self) -> None:
        self._events: dict[int, asyncio.Event] = {}

    def notify(self) -> None:
        """The state changed: wake every waiter, in every loop."""
        for event in self._events.values():
            event.set()

    async def wait_until(self, verdict: Callable[[], bool | None], timeout_s: float | None) -> bool:
        """Wait for state changes until verdict() says True or False; False on timeout."""
        changed = self._events.setdefault(id(asyncio.get_running_loop()), asyncio.Event())
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while (answer := verdict()) is None:
            changed.clear()
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except TimeoutError:
                return False
        return answer


async def cancel_task(task: asyncio.Task[None] | None) -> None:
    """Cancel `task` and wait for its end (what it raised on the way is dropped), unless it is
    the caller itself or its loop is gone (the TUI's app.run() ended: nothing left to cancel)."""
    if task is None or task is asyncio.current_task():
        return
    if task.get_loop() is not asyncio.get_running_loop():
        return
    task.cancel()
    try:
        await task
    except (asyncio.CancelledError, Exception):
        pass
