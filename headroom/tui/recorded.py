"""Recorded probe data and a fixed clock, so snapshot tests are deterministic.

`RecordedSources` answers every probe once with the data in `headroom.tui.recorded_data`
(a fictional but plausible 2-GPU tensor-parallel server under KV pressure, plus real
fixtures read through the probes' own parsers) and never moves its clock.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from headroom.tui.recorded_data import (
    CLOCK,
    KV_HISTORY,
    MODEL,
    UP_SINCE,
    URL,
    recorded_command,
    recorded_diagnosis,
    recorded_gpus,
    recorded_log_lines,
    recorded_metrics,
    recorded_runs,
    recorded_topology,
)
from headroom.tui.sources import DataSources, ProgressCallback
from headroom.tui.store import HISTORY, ServerInfo, Store

__all__ = ["RecordedSources", "recorded_gpus", "recorded_metrics"]


class RecordedSources(DataSources):
    """Each probe answers once with the recorded data; the clock never moves."""

    one_shot = True

    def __init__(self, *, gpus_local: bool = True, restart_outcome: str = "ok") -> None:
        self.gpus_local = gpus_local
        if not gpus_local:
            self.gpus_remote_reason = "GPUs not local: the server runs on gpu-node-7"
        self.can_restart = True
        self.restart_outcome = restart_outcome  # "ok" | "rollback"
        self.restarts: list[dict[str, object]] = []
        self.command = recorded_command()

    def clock(self) -> float:
        return CLOCK

    def prime(self, store: Store) -> None:
        """Fill the KV history the way a few minutes of scrapes would have."""
        store.kv_history.extend(KV_HISTORY[:-1])
        for index, busy in ((0, 0.93), (1, 0.91), (2, 0.0), (3, 0.0)):
            wave = [busy * (0.6 + 0.4 * ((i * 7) % 10) / 10) for i in range(30)]
            store.gpu_util_history[index] = deque(wave, maxlen=HISTORY)
            store.gpu_mem_history[index] = deque([0.9 if busy else 0.07] * 30, maxlen=HISTORY)

    def server_info(self) -> ServerInfo:
        return ServerInfo(
            url=URL,
            state="ready",
            model=MODEL,
            command=self.command,
            up_since=UP_SINCE,
            supervised=True,
        )

    async def scrape_metrics(self) -> Any:
        return recorded_metrics()

    async def sample_gpus(self) -> Any:
        return recorded_gpus() if self.gpus_local else None

    async def read_topology(self) -> tuple[Any, list[Any]] | None:
        return recorded_topology() if self.gpus_local else None

    async def read_log_lines(self) -> list[str]:
        return recorded_log_lines()

    def diagnose(self, store: Store) -> Any:
        return recorded_diagnosis()

    async def read_runs(self) -> list[Any] | None:
        return recorded_runs()

    async def restart(
        self, changes: dict[str, object], progress: ProgressCallback
    ) -> tuple[bool, bool, str | None]:
        self.restarts.append(dict(changes))
        progress("stop", "done", None)
        progress("memory", "done", "GPU memory back to 0.5 GiB")
        if self.restart_outcome == "rollback":
            progress("start", "failed", "ValueError: max_num_seqs must be at least 1")
            progress("rollback", "done", "previous flags running again")
            return False, True, "the new flags failed to start; rolled back"
        progress("start", "done", None)
        progress("ready", "done", "ready in 38 s")
        return True, False, None
