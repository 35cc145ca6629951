"""What one run of the server has shown so far: its process, log, digest and verdicts.

A fresh `Run` begins with each launch (or re-adoption); the supervisor's collaborators
(watcher, journal writer, ender, restarter) read and write these public fields, and the
Supervisor exposes them to the TUI and the CLI under their old names.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from headroom.doctor import Diagnosis
from headroom.probes.vllm_log import LogDigest, StartupFacts
from headroom.supervisor.log_scrub import LogScrubber
from headroom.supervisor.log_tail import FileTail
from headroom.supervisor.process import ManagedProcess
from headroom.supervisor.run_stats import RunStats


@dataclass(eq=False)
class Run:
    """One run: set up by start() or adopt(); the watcher and the ender fill in the rest."""

    log_ring: int = 5000
    run_id: str | None = None
    process: ManagedProcess | None = None
    log_path: Path | None = None
    tail: FileTail | None = None
    digest: LogDigest = field(default_factory=LogDigest)
    log_lines: deque[str] = field(init=False)
    stats: RunStats = field(default_factory=RunStats)
    time_to_ready_s: float | None = None
    failure_reason: str | None = None
    failure_kind: str | None = None
    diagnosis: Diagnosis | None = None
    started_mono: float | None = None  # time.monotonic() of the launch
    last_progress: float = 0.0  # last time the log grew (the ready timeout counts from it)
    ready_at: float | None = None
    failure_seen_at: float | None = None  # a start-up failure line was read at this time
    ready_timeout_s: float | None = None  # worked out once per run
    stopping: bool = False
    secrets: tuple[str, ...] = ()  # secret values it was launched with (kept out of text)
    scrubber: LogScrubber | None = None  # overwrites them in the per-run log
    # Where this run came from, for its journal record.
    trigger: str | None = None
    parent_run_id: str | None = None
    changes: dict[str, object] | None = None

    def __post_init__(self) -> None:
        self.log_lines = deque(maxlen=self.log_ring)

    def facts(self) -> StartupFacts | None:
        """The log's start-up facts so far; None if the log reader broke."""
        try:
            return self.digest.facts()
        except Exception:  # the log reader must never stop the supervisor
            return None


class RunView:
    """The current run's facts under the names the TUI and the CLI read (sup.pid, ...)."""

    run: Run

    @property
    def process(self) -> ManagedProcess | None:
        return self.run.process

    @property
    def pid(self) -> int | None:
        return self.run.process.pid if self.run.process else None

    @property
    def log_path(self) -> Path | None:
        return self.run.log_path

    @property
    def run_id(self) -> str | None:
        return self.run.run_id

    @property
    def digest(self) -> LogDigest:
        return self.run.digest

    @property
    def log_lines(self) -> deque[str]:
        return self.run.log_lines

    @property
    def stats(self) -> RunStats:
        return self.run.stats

    @property
    def diagnosis(self) -> Diagnosis | None:
        return self.run.diagnosis

    @property
    def time_to_ready_s(self) -> float | None:
        return self.run.time_to_ready_s

    @property
    def failure_reason(self) -> str | None:
        return self.run.failure_reason

    @property
    def failure_kind(self) -> str | None:
        return self.run.failure_kind
