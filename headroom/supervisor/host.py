"""What the supervisor's collaborators (watcher, ender, restarter, starter) may use of the Supervisor.

They are given the Supervisor itself, typed as this protocol, so that none of them imports
supervisor.py (no import cycle) and each touches only the public surface named here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from headroom.supervisor.gpus import GpuAccess
from headroom.supervisor.metrics_feed import MetricsFeed
from headroom.supervisor.ray_watch import RayWatch
from headroom.supervisor.run_journal import RunJournal
from headroom.supervisor.run_state import Run
from headroom.supervisor.settings import SupervisorSettings
from headroom.supervisor.states import ServerState, SupervisorEvent
from headroom.vllm_cmd import VllmCommand


class SupervisorHost(Protocol):
    settings: SupervisorSettings
    command: VllmCommand
    env: dict[str, str]
    template: str
    launcher_name: str
    data_dir: Path
    run: Run
    state: ServerState
    detached: bool
    adopted: bool
    gpus: GpuAccess
    records: RunJournal
    metrics: MetricsFeed
    ray: RayWatch

    @property
    def url(self) -> str: ...

    @property
    def port(self) -> int: ...

    def subscribe(self, listener: Callable[[SupervisorEvent], None]) -> Callable[[], None]: ...

    def next_run(
        self,
        *,
        trigger: str | None,
        parent_run_id: str | None,
        changes: dict[str, object] | None = None,
    ) -> None: ...

    def emit(self, kind: str, message: str, **fields: object) -> None: ...

    def set_state(self, new: ServerState, reason: str) -> None: ...

    def child_env(self, overrides: Mapping[str, str] | None = None) -> dict[str, str]: ...

    def relevant_env(self, overrides: Mapping[str, str] | None = None) -> dict[str, str]: ...

    def argv(self, command: VllmCommand | None = None) -> list[str]: ...

    def read_log(self, *, final: bool = False) -> list[str]: ...

    def ready_timeout(self) -> float: ...

    async def start(self, *, reason: str | None = None) -> None: ...

    async def watch(self) -> None: ...

    async def stop(self, *, outcome: str | None = None) -> None: ...

    async def close(self) -> None: ...

    async def wait_ready(self, timeout_s: float | None = None) -> bool: ...

    async def finish_failed(self, why: str, *, outcome: str) -> None: ...

    async def after_crash(self, why: str, *, stop_first: bool = False) -> None: ...

    def note_ready(self) -> None: ...

    def served_well(self) -> None: ...
