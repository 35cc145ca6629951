"""Recorded probe data and a fixed clock, so snapshot tests are deterministic.

`RecordedSources` answers every probe once with the data in `headroom.tui.recorded_data`
(a fictional but plausible 2-GPU tensor-parallel server under KV pressure, plus real
fixtures read through the probes' own parsers) and never moves its clock. The Doctor's
verdicts come from the live doctor run on those recorded inputs.

`story="failed"` is the demo's first act instead: a start-up that vLLM refused (a real
capture: max_model_len 2048 does not fit the KV cache), the server down, the doctor's fix.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from recorded_data import (
    CLOCK,
    KV_HISTORY,
    MODEL,
    UP_SINCE,
    URL,
    recorded_command,
    recorded_diagnosis,
    recorded_failed_command,
    recorded_failed_diagnosis,
    recorded_failed_log_lines,
    recorded_gpus,
    recorded_log_lines,
    recorded_metrics,
    recorded_no_gpus,
    recorded_ray,
    recorded_runs,
    recorded_topology,
)

from headroom.supervisor.restart import RestartPreview, preview_for_command
from headroom.tui.format import short_message
from headroom.tui.sources import DataSources, ProgressCallback
from headroom.tui.store import HISTORY, ServerInfo, Store

__all__ = ["RecordedSources", "recorded_gpus", "recorded_metrics"]


class RecordedSources(DataSources):
    """Each probe answers once with the recorded data; the clock never moves."""

    one_shot = True

    def __init__(
        self,
        *,
        gpus_local: bool = True,
        restart_outcome: str = "ok",
        story: str = "ready",
        ray: bool = False,
    ) -> None:
        if story not in {"ready", "failed"}:
            raise ValueError(f"unknown recorded story {story!r}")
        self.failed = story == "failed"
        self.gpus_local = gpus_local
        if not gpus_local:
            self.gpus_remote_reason = "GPUs not local: the server runs on gpu-node-7"
        self.can_restart = True
        self.restart_outcome = restart_outcome  # "ok" | "rollback"
        self.restarts: list[dict[str, object]] = []
        self.ray_reading = recorded_ray() if ray else None  # a server on a Ray cluster
        self.command = recorded_failed_command() if self.failed else recorded_command()

    def clock(self) -> float:
        return CLOCK

    def prime(self, store: Store) -> None:
        """Fill the KV history the way a few minutes of scrapes would have."""
        if self.failed:
            return  # it never served
        store.kv_history.extend(KV_HISTORY[:-1])
        for index, busy in ((0, 0.93), (1, 0.91), (2, 0.0), (3, 0.0)):
            wave = [busy * (0.6 + 0.4 * ((i * 7) % 10) / 10) for i in range(30)]
            store.gpu_util_history[index] = deque(wave, maxlen=HISTORY)
            store.gpu_mem_history[index] = deque([0.9 if busy else 0.07] * 30, maxlen=HISTORY)

    def server_info(self) -> ServerInfo:
        if self.failed:
            failure = next((x for x in recorded_failed_log_lines() if "ValueError:" in x), None)
            return ServerInfo(
                url="http://127.0.0.1:18000",
                state="failed",
                detail=short_message(failure, 400) if failure else "start-up failed",
                model=getattr(self.command, "model", None),
                command=self.command,
                supervised=True,
            )
        return ServerInfo(
            url=URL,
            state="ready",
            model=MODEL,
            command=self.command,
            up_since=UP_SINCE,
            supervised=True,
        )

    async def scrape_metrics(self) -> Any:
        return None if self.failed else recorded_metrics()

    async def sample_gpus(self) -> Any:
        if self.failed:  # that capture came from a CPU-only machine
            return recorded_no_gpus("no NVIDIA GPU on this machine (the capture ran on a CPU)")
        return recorded_gpus() if self.gpus_local else None

    async def read_topology(self) -> tuple[Any, list[Any]] | None:
        return recorded_topology() if self.gpus_local else None

    @property
    def reads_ray(self) -> bool:
        return self.ray_reading is not None

    async def read_ray(self) -> Any:
        return self.ray_reading

    async def read_log_lines(self) -> list[str]:
        return recorded_failed_log_lines() if self.failed else recorded_log_lines()

    def diagnose(self, store: Store) -> Any:
        return recorded_failed_diagnosis() if self.failed else recorded_diagnosis()

    async def read_runs(self) -> list[Any] | None:
        return recorded_runs()

    def preview_restart(self, changes: dict[str, object]) -> RestartPreview | None:
        return preview_for_command(self.command, changes) if self.command else None

    async def restart(
        self,
        changes: dict[str, object],
        progress: ProgressCallback,
        expected: RestartPreview | None = None,
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
