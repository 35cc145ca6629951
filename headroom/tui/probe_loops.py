"""The worker loops that feed the app: one per probe, each posting what it read.

Each loop waits for its read to finish before sleeping for the interval, so reads never
overlap and a slow probe only delays itself. A probe that raises is reported with
`ProbeFailed` (its panel says why) and is tried again next round. Recorded sources
(`one_shot`) answer once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from textual import work
from textual.message import Message

from headroom.probes.nvml_types import GpuSnapshot
from headroom.tui import messages as msg
from headroom.tui.sources import DataSources
from headroom.tui.store import Store

T = TypeVar("T")

LOG_POLL_S = 0.25  # log lines are cheap to read and users expect them promptly
DOCTOR_MIN_S = 5.0  # the doctor re-runs at most this often (it costs ~10 ms), only on new data
GPU_UNAVAILABLE_RETRY_S = 15.0  # no driver / no GPU: look again this seldom, after a while
GPU_QUICK_RETRIES = 10  # ...but first at the normal rate (a simulator's state appears late)
RAY_POLL_S = 2.0  # `ray status` starts a Python process: not every interval
DOCTOR_WAKE_GAP_S = 0.3  # after a wake-up, wait for the rest of the burst (log lines)


def probe_failed(name: str, exc: BaseException) -> msg.ProbeFailed:
    """The one wording of a probe failure: what was raised."""
    return msg.ProbeFailed(name, f"{type(exc).__name__}: {exc}")


class ProbeLoops:
    """Mixin for `HeadroomApp`: needs `sources`, `store`, `interval`, `post_message` and
    `_data_version` / `_diagnosed_version` counters."""

    sources: DataSources
    store: Store
    interval: float
    _data_version: int
    _diagnosed_version: int
    _doctor_wake: asyncio.Event | None = None

    if TYPE_CHECKING:  # App's; declared here only for the type checker

        def post_message(self, message: Message) -> bool: ...

    def _start_loops(self) -> None:
        self._server_loop()
        self._metrics_loop()
        self._gpu_loop()
        self._topology_once()
        self._log_loop()
        self._doctor_loop()
        self._runs_once()
        self._ray_loop()

    def _post(self, message: Message) -> None:
        self.post_message(message)

    async def _repeat(
        self,
        name: str,
        read: Callable[[], Awaitable[T | None]],
        post: Callable[[T], None],
        every: float | Callable[[T | None], float],
    ) -> None:
        """Run `read` forever (once for recorded sources), posting what it returns.
        The next read starts only after this one finished: a slow probe delays itself and
        nothing else."""
        while True:
            started = asyncio.get_running_loop().time()
            result: T | None = None
            try:
                result = await read()
            except Exception as exc:  # a probe bug must not take the dashboard down
                self.post_message(probe_failed(name, exc))
            else:
                if result is not None:
                    post(result)
            if self.sources.one_shot:
                return
            elapsed = asyncio.get_running_loop().time() - started
            wait = every(result) if callable(every) else every
            await asyncio.sleep(max(0.0, wait - elapsed))

    @work(exclusive=True, group="server", exit_on_error=False)
    async def _server_loop(self) -> None:
        try:
            await self.sources.start()
        except Exception as exc:
            self.post_message(msg.ServerStateChanged("failed", f"could not start: {exc}"))
        if await self.sources.read_server_state() is None:
            return  # attached only: no supervisor state to follow

        def post(result: tuple[str, str | None]) -> None:
            state, detail = result
            server = self.store.server
            if (state, detail) != (server.state, server.detail):
                self.post_message(msg.ServerStateChanged(state, detail))

        await self._repeat("server", self.sources.read_server_state, post, min(self.interval, 0.5))

    @work(exclusive=True, group="metrics", exit_on_error=False)
    async def _metrics_loop(self) -> None:
        await self._repeat(
            "metrics",
            self.sources.scrape_metrics,
            lambda snap: self._post(msg.MetricsScraped(snap)),
            self.interval,
        )

    @work(exclusive=True, group="gpus", exit_on_error=False)
    async def _gpu_loop(self) -> None:
        if not self.sources.gpus_local:
            reason = self.sources.gpus_remote_reason or "GPUs not local"
            self.post_message(msg.ProbeFailed("gpus", reason))
            self.post_message(msg.ProbeFailed("topology", reason))
            return

        misses = 0

        def every(snapshot: GpuSnapshot | None) -> float:
            # No driver or no GPU rarely changes while running: look again, but seldom.
            nonlocal misses
            if snapshot is not None and not snapshot.available:
                misses += 1
                if misses > GPU_QUICK_RETRIES:
                    return max(self.interval, GPU_UNAVAILABLE_RETRY_S)
            else:
                misses = 0
            return self.interval

        await self._repeat(
            "gpus",
            self.sources.sample_gpus,
            lambda snap: self._post(msg.GpusSampled(snap)),
            every,
        )

    @work(exclusive=True, group="topology", exit_on_error=False)
    async def _topology_once(self) -> None:
        """Read the topology; it does not change while running, so once it is readable this
        stops. While unreadable (e.g. a simulator that has not written its state yet), it
        tries again now and then."""
        if not self.sources.gpus_local:
            return
        while True:
            try:
                result = await self.sources.read_topology()
            except Exception as exc:
                self.post_message(probe_failed("topology", exc))
                return
            if result is None:
                return
            self.post_message(msg.TopologyRead(*result))
            if self.sources.one_shot or result[0].confidence != "unreadable":
                return
            await asyncio.sleep(self.sources.topology_retry_s)

    @work(exclusive=True, group="ray", exit_on_error=False)
    async def _ray_loop(self) -> None:
        if not self.sources.reads_ray:
            return  # not on Ray: no panel, nothing read
        await self._repeat(
            "ray",
            self.sources.read_ray,
            lambda reading: self._post(msg.RayRead(reading)),
            max(self.interval, RAY_POLL_S),
        )

    @work(exclusive=True, group="logs", exit_on_error=False)
    async def _log_loop(self) -> None:
        if not self.sources.has_logs:
            return

        def post(lines: list[str]) -> None:
            if lines:
                self.store.add_log_lines(lines)
                self.post_message(msg.LogLinesPending())

        await self._repeat("logs", self.sources.read_log_lines, post, LOG_POLL_S)

    def wake_doctor(self) -> None:
        """Diagnose soon rather than within DOCTOR_MIN_S: the server changed state or the log
        showed an error, and the user is about to look (a failed start must not read
        "nothing wrong found" for seconds)."""
        if self._doctor_wake is not None:
            self._doctor_wake.set()

    @work(exclusive=True, group="doctor", exit_on_error=False)
    async def _doctor_loop(self) -> None:
        wake = self._doctor_wake = asyncio.Event()
        while True:
            if self._data_version != self._diagnosed_version:
                self._diagnosed_version = self._data_version
                # The doctor is pure but may take a moment: run it on a thread over a copy,
                # so the UI thread is never held and the deques are not mutated under it.
                view = dataclasses.replace(
                    self.store, metrics_history=deque(tuple(self.store.metrics_history))
                )
                try:
                    diagnosis = await asyncio.to_thread(self.sources.diagnose, view)
                except Exception as exc:  # a doctor bug must not take the dashboard down
                    self.post_message(probe_failed("doctor", exc))
                else:
                    if diagnosis is not None:
                        self.post_message(msg.DiagnosisMade(diagnosis))
            if self.sources.one_shot:
                return
            wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout=max(self.interval, DOCTOR_MIN_S))
            await asyncio.sleep(DOCTOR_WAKE_GAP_S)  # let the burst that woke it arrive

    @work(exclusive=True, group="runs", exit_on_error=False)
    async def _runs_once(self) -> None:
        try:
            records = await self.sources.read_runs()
        except Exception as exc:
            self.post_message(probe_failed("runs", exc))
            return
        if records is not None:
            self.post_message(msg.RunsLoaded(list(records)))
