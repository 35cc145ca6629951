"""The supervisor: launch vLLM, watch it (log + /health), stop it cleanly, restart it with
changed knobs and roll back when the new configuration fails. asyncio, no Textual.

The Supervisor is the public face; the work is done by small collaborators with their own
state, each given the Supervisor as a `host.SupervisorHost`:
- starter.RunStarter: refuses, launches and journals a new run, binds a re-adopted one;
- watcher.ProcessWatcher: the watch loop (log, process, /health, metrics, GPUs);
- ending.RunEnder: stops the server and closes a run's books;
- restarter.Restarter: restarts with changes, rollback, crash back-off;
- run_journal.RunJournal: the journal record and the state file of each run;
- metrics_feed.MetricsFeed: the one /metrics reader, shared with the TUI;
over a run_state.Run (what this run has shown), with frozen settings.SupervisorSettings.

The state is judged from the process and /health, never from a log line alone: vLLM can exit
0 after a crash, and can keep its API process (and port) alive after the engine died.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from headroom.supervisor.ending import RunEnder
from headroom.supervisor.gpus import GpuAccess
from headroom.supervisor.journal import Journal
from headroom.supervisor.launcher import build_argv, flag_tokens
from headroom.supervisor.metrics_feed import MetricsFeed
from headroom.supervisor.process import ManagedProcess
from headroom.supervisor.ray_watch import ClusterReader, RayWatch, make_probe
from headroom.supervisor.restart import RestartPreview
from headroom.supervisor.restarter import Restarter
from headroom.supervisor.run_journal import RunJournal
from headroom.supervisor.run_state import Run, RunView
from headroom.supervisor.settings import SupervisorSettings
from headroom.supervisor.starter import RunStarter
from headroom.supervisor.state_signal import StateSignal
from headroom.supervisor.states import (
    RELEVANT_ENV,
    TERMINAL,
    RestartOutcome,
    ServerState,
    SupervisorEvent,
)
from headroom.supervisor.watcher import ProcessWatcher
from headroom.vllm_cmd import VllmCommand, redact_env

EventListener = Callable[[SupervisorEvent], None]


class Supervisor(RunView):
    """Launches and watches one vLLM server; restarts it with changed knobs on request.

    env: overrides on top of os.environ for the child (only the relevant keys are journaled).
    on_event: a first listener (more with subscribe()). nvml_probe: an NvmlProbe-like object
    with read(), False for "no GPUs", None to look for NVML.
    """

    def __init__(
        self,
        command: VllmCommand,
        settings: SupervisorSettings | None = None,
        *,
        env: Mapping[str, str] | None = None,
        journal: Journal | None = None,
        on_event: EventListener | None = None,
        nvml_probe: object | None = None,
        ray_probe: ClusterReader | None = None,
    ) -> None:
        self.settings = settings or SupervisorSettings()
        self.template = self.settings.template
        self.launcher_name = self.settings.launcher_name
        self.command = command
        self.env: dict[str, str] = dict(env or {})
        self.data_dir = self.settings.data_folder()
        self.journal = journal or Journal(self.data_dir / "runs.jsonl")
        self.on_event = on_event
        self.state = ServerState.STOPPED
        self.detached = False
        self.adopted = False  # watching a server an earlier Headroom started
        self.run = Run(log_ring=self.settings.log_ring)
        self.gpus = GpuAccess(nvml_probe)
        self.records = RunJournal(self.journal, self.settings.state_dir, self._notice)
        self.metrics = MetricsFeed()
        self.watcher = ProcessWatcher(self)
        self.starter = RunStarter(self, self.watcher)
        self.ender = RunEnder(self)
        self.restarter = Restarter(self)
        # Read only when the command uses --distributed-executor-backend ray.
        self.ray = RayWatch(
            self,
            ray_probe
            or make_probe(self.settings.ray_address, self.settings.ray_dashboard, self.child_env()),
            poll_s=self.settings.ray_poll_s,
            asked=bool(self.settings.ray_address or self.settings.ray_dashboard),
        )
        self._listeners: list[EventListener] = []
        self._log_listeners: list[Callable[[list[str]], None]] = []
        self._changed = StateSignal()

    # -- what the UI reads ------------------------------------------------------------
    @property
    def port(self) -> int:
        value = self.command.get("port")
        try:
            return int(value) if isinstance(value, int | str) else 8000
        except ValueError:
            return 8000

    @property
    def host(self) -> str:
        host = self.command.get("host")
        if not host or host in ("0.0.0.0", "::"):  # noqa: S104 - reading vLLM's bind address
            return "127.0.0.1"
        return str(host)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def crash_count(self) -> int:
        return self.restarter.crash_count

    @property
    def restart_pending(self) -> bool:
        return self.restarter.restart_pending

    @property
    def last_good_start_s(self) -> float | None:
        return self.restarter.last_good_start_s

    @last_good_start_s.setter
    def last_good_start_s(self, value: float | None) -> None:
        self.restarter.last_good_start_s = value
        self.run.ready_timeout_s = None  # worked out again from the new value

    def child_env(self, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.env if overrides is None else overrides)
        # Python's stdout to a file is block-buffered; the tail should see lines as written.
        env.setdefault("PYTHONUNBUFFERED", "1")
        return env

    def relevant_env(self, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
        full = self.child_env(overrides)
        return redact_env({k: v for k, v in sorted(full.items()) if RELEVANT_ENV.match(k)})

    def argv(self, command: VllmCommand | None = None) -> list[str]:
        command = command or self.command
        python = self.settings.interpreter
        return build_argv(self.template, command.model, flag_tokens(command), python=python)

    # -- events ---------------------------------------------------------------------------
    def subscribe(self, listener: EventListener) -> Callable[[], None]:
        """listener(event) for every SupervisorEvent; returns the unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def subscribe_log(self, callback: Callable[[list[str]], None]) -> None:
        """callback(lines) for each batch of new log lines (the ring buffer keeps the rest)."""
        self._log_listeners.append(callback)

    def emit(self, kind: str, message: str, **fields: object) -> None:
        event = SupervisorEvent(kind, message, self.state, fields)
        for listener in [self.on_event, *self._listeners]:
            if listener is None:
                continue
            try:
                listener(event)
            except Exception as exc:  # a listener bug must not take the supervisor down
                print(f"headroom: event listener failed: {exc!r}", file=sys.stderr)

    def _notice(self, message: str) -> None:
        self.emit("notice", message)

    def set_state(self, new: ServerState, reason: str) -> None:
        old = self.state
        if old == new:
            return
        self.state = new
        self._changed.notify()
        self.emit("state", f"{old} -> {new}: {reason}", old=str(old), new=str(new), reason=reason)

    # -- lifecycle ----------------------------------------------------------------------
    def next_run(
        self,
        *,
        trigger: str | None,
        parent_run_id: str | None,
        changes: dict[str, object] | None = None,
    ) -> None:
        """Where the next start comes from (its journal record's trigger/parent/changes)."""
        self.starter.next_run(trigger=trigger, parent_run_id=parent_run_id, changes=changes)

    async def start(self, *, reason: str | None = None) -> None:
        """Preflight, launch, and start watching. Raises PreflightError / LaunchError."""
        await self.starter.start(reason=reason)

    def adopt_running(
        self,
        process: ManagedProcess,
        *,
        run_id: str | None = None,
        log_path: Path | None = None,
        started_at: float | None = None,
    ) -> None:
        """Bind to a server that runs already (re-adoption); watch() or start() watches it.
        With a log path, the whole log is read again to rebuild the start-up facts."""
        self.starter.adopt(process, run_id=run_id, log_path=log_path, started_at=started_at)

    def ready_timeout(self) -> float:
        """Seconds without log progress before a start counts as hung: the given value, else
        at least 10 minutes or twice the last good start (from the journal, read once)."""
        if self.settings.ready_timeout_s is not None:
            return self.settings.ready_timeout_s
        if self.run.ready_timeout_s is None:
            last = self.restarter.last_good_start_s or self.records.last_good_start(
                self.command.model
            )
            self.run.ready_timeout_s = max(600.0, 2 * last) if last else 600.0
        return self.run.ready_timeout_s

    def note_ready(self) -> None:
        self.restarter.note_ready()

    def served_well(self) -> None:
        self.restarter.crash_count = 0

    async def wait_ready(self, timeout_s: float | None = None) -> bool:
        """True once ready; False when the run failed/stopped (or timeout_s passed first)."""

        def verdict() -> bool | None:
            ready = self.state in (ServerState.READY, ServerState.DEGRADED)
            if ready and self.run.time_to_ready_s:
                return True
            return False if self.state in TERMINAL else None

        return await self._changed.wait_until(verdict, timeout_s)

    async def wait_state(self, *states: ServerState, timeout_s: float | None = None) -> bool:
        in_one = lambda: True if self.state in states else None  # noqa: E731
        return await self._changed.wait_until(in_one, timeout_s)

    async def stop(self, *, outcome: str | None = None) -> None:
        """Stop the server (whole group, escalating signals), then wait for GPU memory."""
        self.restarter.cancel_crash_restart()
        await self.ender.stop_server(outcome=outcome)

    async def finish_failed(self, why: str, *, outcome: str) -> None:
        await self.ender.finish_failed(why, outcome=outcome)

    async def after_crash(self, why: str, *, stop_first: bool = False) -> None:
        await self.restarter.after_crash(why, stop_first=stop_first)

    async def detach(self) -> None:
        """Stop watching but leave the server running; its state file stays for re-adoption."""
        self.detached = True
        self.restarter.cancel_crash_restart()
        await self.watcher.cancel()
        self.records.update(self.run.run_id, outcome="detached", summary=self.stats.summary())
        self.emit("notice", f"detached; the server keeps running (pid {self.pid})")

    async def watch(self) -> None:
        """Start watching a re-adopted process (start() does this itself for new ones)."""
        if not self.watcher.watching and self.run.process is not None:
            self.emit(
                "notice", f"re-adopted pid {self.pid} serving {self.url} (log {self.log_path})"
            )
            now = time.monotonic()
            self.run.last_progress = now  # the ready timeout counts from here
            if self.run.started_mono is None:
                self.run.started_mono = now
            self.set_state(ServerState.STARTING, "re-adopted; waiting for /health")
            self.watcher.begin()

    async def close(self) -> None:
        """Release the watcher without touching the server (for tests and shutdown paths);
        a crash restart still waiting for its back-off is called off too."""
        self.restarter.cancel_crash_restart()
        await self.watcher.cancel()
        await self.ray.cancel()

    def preview(self, changes: Mapping[str, object]) -> RestartPreview:
        """What a restart with these changes would launch (command, env, diff including
        environment changes as "env NAME", redacted argv); nothing runs. The only place a
        new command line is made. Raises ValueError if a change cannot be applied."""
        return self.restarter.preview(changes)

    async def restart(
        self,
        changes: Mapping[str, object],
        *,
        reason: str = "restart",
        expected: RestartPreview | None = None,
    ) -> RestartOutcome:
        """Apply knob changes, restart, and roll back to the last good config on failure.
        Progress comes as `restart_step` events (step, status, detail). expected: the
        preview that was shown; if the configuration moved since, nothing restarts."""
        return await self.restarter.restart(changes, reason=reason, expected=expected)

    def read_log(self, *, final: bool = False) -> list[str]:
        """Pull new lines from the run's log into the digest, ring buffer and listeners."""
        return self.watcher.read_log(final=final, listeners=tuple(self._log_listeners))
