"""What the TUI needs from a server Headroom supervises, as a typed Protocol.

`headroom.supervisor.Supervisor` implements it (structurally: the check at the end of this
module makes the type checker compare the two), and test doubles implement the same few
members. The TUI reads these and nothing else, so a
change on the supervisor's side that the TUI would trip over fails `mypy`, not a user.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from headroom.probes.vllm_log import LogDigest
from headroom.supervisor.journal import Journal
from headroom.supervisor.metrics_feed import MetricsFeed
from headroom.supervisor.process import ManagedProcess
from headroom.supervisor.ray_watch import RayWatch
from headroom.supervisor.restart import RestartPreview
from headroom.supervisor.states import RestartOutcome, ServerState, SupervisorEvent
from headroom.vllm_cmd import VllmCommand

EventListener = Callable[[SupervisorEvent], None]
LogListener = Callable[[list[str]], None]


class SupervisedServer(Protocol):
    """A vLLM server under a supervisor: its state, log, journal, and the actions on it."""

    @property
    def command(self) -> VllmCommand: ...  # the command line running now (restarts change it)

    @property
    def url(self) -> str: ...

    @property
    def state(self) -> ServerState: ...

    @property
    def failure_reason(self) -> str | None: ...

    @property
    def digest(self) -> LogDigest: ...  # the current run's log, read so far

    @property
    def journal(self) -> Journal: ...

    @property
    def log_path(self) -> Path | None: ...

    @property
    def log_lines(self) -> Iterable[str]: ...  # the recent lines already read

    @property
    def process(self) -> ManagedProcess | None: ...

    @property
    def pid(self) -> int | None: ...

    @property
    def adopted(self) -> bool: ...  # watching a server an earlier Headroom started

    @property
    def metrics(self) -> MetricsFeed: ...  # the one /metrics reader, shared with the supervisor

    @property
    def ray(self) -> RayWatch: ...  # the Ray cluster under a --distributed-executor-backend ray

    def subscribe_log(self, callback: LogListener) -> None: ...

    def subscribe(self, listener: EventListener) -> Callable[[], None]: ...  # -> unsubscribe

    def preview(self, changes: Mapping[str, object]) -> RestartPreview: ...  # what would launch

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def detach(self) -> None: ...

    async def restart(
        self, changes: Mapping[str, object], *, expected: RestartPreview | None = None
    ) -> RestartOutcome: ...


if TYPE_CHECKING:  # for mypy only: a Supervisor must be usable wherever the TUI wants one
    from headroom.supervisor.supervisor import Supervisor

    def _supervisor_is_a_supervised_server(supervisor: Supervisor) -> SupervisedServer:
        return supervisor
