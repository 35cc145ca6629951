"""Sources for `headroom demo`: the live probes over a supervised simulator, plus the
scenario's built-in load, started once the server is first ready and kept running across
restarts (requests to a server that is restarting fail fast and are retried)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from headroom.tui.sources import LiveSources


class DemoSources(LiveSources):
    """LiveSources + the scenario's closed-loop load."""

    def __init__(self, supervisor: Any, scenario: Any, **kwargs: Any) -> None:
        super().__init__(supervisor=supervisor, stop_on_exit=True, **kwargs)
        self.scenario = scenario
        self._load_stop = asyncio.Event()
        self._load_task: asyncio.Task | None = None

    async def start(self) -> None:
        self._load_task = asyncio.get_running_loop().create_task(self._load_when_ready())
        await super().start()

    async def _load_when_ready(self) -> None:
        load = getattr(self.scenario, "load", None)
        if load is None or getattr(load, "concurrency", 0) <= 0:
            return
        from headroom.simulator.loadgen import run_load

        while str(getattr(self.supervisor, "state", "")) != "ready":
            if self._load_stop.is_set():
                return
            await asyncio.sleep(0.5)
        await run_load(
            self.supervisor.url,
            self.scenario.model,
            concurrency=load.concurrency,
            requests=load.requests,
            prompt_tokens=tuple(load.prompt_tokens),
            max_tokens=tuple(load.max_tokens),
            ignore_eos=load.ignore_eos,
            stop=self._load_stop,
        )

    async def close(self) -> None:
        self._load_stop.set()
        task = self._load_task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await super().close()
