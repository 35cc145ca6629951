"""The supervisor: launch vLLM, watch it (log + /health), stop it cleanly, restart it with
changed knobs and roll back when the new configuration fails. asyncio, no Textual.

The state is judged from the log and /health, never from the exit code alone: vLLM can exit
0 after a crash, and can keep its API process (and port) alive after the engine died.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path

import httpx

from headroom.probes.vllm_log import LogDigest
from headroom.supervisor import ending, lifecycle
from headroom.supervisor.journal import Journal, new_run_id
from headroom.supervisor.launcher import (  # flag_tokens: re-exported for callers
    LauncherConfig,
    build_argv,
    describe,
    flag_tokens,
    resolve_template,
)
from headroom.supervisor.log_tail import FileTail
from headroom.supervisor.paths import data_dir as default_data_dir
from headroom.supervisor.paths import logs_dir
from headroom.supervisor.process import ManagedProcess
from headroom.supervisor.run_stats import RunStats
from headroom.supervisor.states import (  # noqa: F401 - re-exported for callers
    ENGINE_DEATH,
    RELEVANT_ENV,
    STARTUP_FAILURES,
    TERMINAL,
    PreflightError,
    RestartOutcome,
    ServerState,
    SupervisorEvent,
)
from headroom.vllm_cmd import VllmCommand, redact_argv, redact_env


class Supervisor:
    """Launches and watches one vLLM server; restarts it with changed knobs on request.

    env: overrides on top of os.environ for the child (only the relevant keys are journaled).
    launcher: a name from LAUNCHERS or the config file, or a template with {model} {flags}.
    """

    def __init__(
        self,
        command: VllmCommand,
        *,
        launcher: str = "vllm",
        env: Mapping[str, str] | None = None,
        data_dir: Path | None = None,
        journal: Journal | None = None,
        on_event: Callable[[SupervisorEvent], None] | None = None,
        config: LauncherConfig | None = None,
        python: str | None = None,
        ready_timeout_s: float | None = None,
        poll_interval_s: float = 0.5,
        health_timeout_s: float = 2.0,
        degraded_after_failures: int = 3,
        failure_exit_grace_s: float = 15.0,
        grace_int_s: float = 20.0,
        grace_term_s: float = 10.0,
        memory_timeout_s: float = 60.0,
        preflight: bool = True,
        nvml_probe: object | None = None,
        state_dir: Path | None = None,
        max_crash_restarts: int = 3,
        crash_backoff_s: float = 5.0,
        metrics_interval_s: float = 5.0,
        scrape_metrics: bool = True,
        log_ring: int = 5000,
        keep_logs: int = 200,
    ) -> None:
        self.config = config or LauncherConfig()
        self.template = resolve_template(launcher, self.config)
        self.launcher_name = describe(self.template)
        self.python = python or self.config.python or sys.executable
        self.command = command
        self.env: dict[str, str] = dict(env or {})
        self.data_dir = data_dir or default_data_dir()
        self.journal = journal or Journal(self.data_dir / "runs.jsonl")
        self.on_event = on_event
        self.ready_timeout_s = ready_timeout_s
        self.poll_interval_s = poll_interval_s
        self.health_timeout_s = health_timeout_s
        self.degraded_after_failures = degraded_after_failures
        self.failure_exit_grace_s = failure_exit_grace_s
        self.grace_int_s = grace_int_s
        self.grace_term_s = grace_term_s
        self.memory_timeout_s = memory_timeout_s
        self.preflight_enabled = preflight
        self.nvml_probe = nvml_probe
        self.state_dir = state_dir
        self.max_crash_restarts = max_crash_restarts
        self.crash_backoff_s = crash_backoff_s
        self.metrics_interval_s = metrics_interval_s
        self.scrape_metrics = scrape_metrics
        self.keep_logs = keep_logs  # per-run logs kept in the data dir (oldest go first)

        self.state = ServerState.STOPPED
        self.process: ManagedProcess | None = None
        self.log_path: Path | None = None
        self.digest = LogDigest()
        self.log_lines: deque[str] = deque(maxlen=log_ring)
        self.run_id: str | None = None
        self.last_good: VllmCommand | None = None
        self.last_good_env: dict[str, str] | None = None
        self.last_good_start_s: float | None = None
        self.time_to_ready_s: float | None = None
        self.failure_reason: str | None = None
        self.failure_kind: str | None = None
        self.diagnosis = None
        self.stats = RunStats()
        self.crash_count = 0
        self.detached = False
        self.adopted = False  # watching a server an earlier Headroom started
        self.restart_pending = False  # a crash restart is scheduled (after its back-off)
        self._crash_task: asyncio.Task | None = None
        self._topology_task: asyncio.Task | None = None  # kept so it is not garbage-collected
        self._log_listeners: list[Callable[[list[str]], None]] = []
        self._tail: FileTail | None = None
        self._watch_task: asyncio.Task | None = None
        self._events: dict[int, asyncio.Event] = {}
        self._started_mono: float | None = None
        self._last_progress: float = 0.0
        self._failure_seen_at: float | None = None
        self._ready_timeout: float | None = None
        self._metrics_probe = None
        self._metrics_state: str | None = None
        self._health_failures = 0
        self._last_metrics_at = 0.0
        self._stopping = False
        self._locks: dict[int, asyncio.Lock] = {}
        self._run_reason: str | None = None
        self._run_parent: str | None = None
        self._run_changes: dict | None = None

    # asyncio primitives bind to the loop that first waits on them; the TUI runs its own loop
    # and `headroom serve` may stop the server from a fresh one afterwards, so keep one per loop.
    @property
    def _state_changed(self) -> asyncio.Event:
        key = id(asyncio.get_running_loop())
        return self._events.setdefault(key, asyncio.Event())

    @property
    def _restart_lock(self) -> asyncio.Lock:
        key = id(asyncio.get_running_loop())
        return self._locks.setdefault(key, asyncio.Lock())

    # -- what the UI reads ------------------------------------------------------------
    @property
    def port(self) -> int:
        value = self.command.get("port")
        try:
            return int(value) if value is not None else 8000
        except (TypeError, ValueError):
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
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

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
        return build_argv(self.template, command.model, flag_tokens(command), python=self.python)

    def subscribe_log(self, callback: Callable[[list[str]], None]) -> None:
        """callback(lines) for each batch of new log lines (the ring buffer keeps the rest)."""
        self._log_listeners.append(callback)

    def emit(self, kind: str, message: str, **fields: object) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(SupervisorEvent(kind, message, self.state, fields))
        except Exception as exc:  # a listener bug must not take the supervisor down
            print(f"headroom: event listener failed: {exc!r}", file=sys.stderr)

    def set_state(self, new: ServerState, reason: str) -> None:
        old = self.state
        if old == new:
            return
        self.state = new
        for event in self._events.values():
            event.set()
        self.emit("state", f"{old} -> {new}: {reason}", old=str(old), new=str(new), reason=reason)

    # -- lifecycle ----------------------------------------------------------------------
    async def start(self, *, reason: str | None = None) -> None:
        """Preflight, launch, and start watching. Raises PreflightError / LaunchError."""
        if self.adopted and self._watch_task is None and self.process and self.process.alive():
            await self.watch()  # re-adopted: it runs already, only the watching starts
            return
        if self.process is not None and self.process.alive():
            raise RuntimeError(f"a server is already running (pid {self.process.pid})")
        self.adopted = False
        self._reset_run()
        self.run_id = new_run_id()
        if self.preflight_enabled:
            await lifecycle.run_preflight(self)
        self.log_path = logs_dir(self.data_dir) / f"{self.run_id}.log"
        lifecycle.prune_logs(self.log_path.parent, keep=self.keep_logs)
        argv = self.argv()
        self._tail = FileTail(self.log_path)
        self._started_mono = time.monotonic()
        self._last_progress = self._started_mono
        try:
            self.process = ManagedProcess.spawn(argv, self.child_env(), self.log_path)
        except Exception as exc:
            self.failure_reason = str(exc)
            self.set_state(ServerState.FAILED, str(exc))
            raise
        self.detached = False
        self.set_state(ServerState.STARTING, f"launched pid {self.process.pid}")
        self.emit(
            "launch",
            f"started {' '.join(redact_argv(argv))} (pid {self.process.pid}, log {self.log_path})",
            pid=self.process.pid,
            argv=redact_argv(argv),
            log_path=str(self.log_path),
        )
        lifecycle.journal_new_run(self, argv, reason)
        lifecycle.write_state_file(self)
        self._watch_task = asyncio.create_task(self._watch(), name="headroom-supervisor-watch")
        self._topology_task = asyncio.create_task(lifecycle.journal_topology(self))

    def _reset_run(self) -> None:
        self.digest = LogDigest()
        self.log_lines.clear()
        self.stats = RunStats()
        self.time_to_ready_s = None
        self.failure_reason = None
        self.failure_kind = None
        self.diagnosis = None
        self._failure_seen_at = None
        self._health_failures = 0
        self._stopping = False
        self._ready_timeout = None
        self._metrics_probe = None  # bound to the watcher's HTTP client and this run's URL
        self._metrics_state: str | None = None

    def _journal_safely(self, fn: Callable, *args, **kwargs) -> None:
        try:
            fn(*args, **kwargs)
        except OSError as exc:  # a full disk must not stop the server from being watched
            self.emit("notice", f"could not write the run journal: {exc}")

    def journal_update(self, **fields: object) -> None:
        if self.run_id:
            self._journal_safely(self.journal.update, self.run_id, **fields)

    def ready_timeout(self) -> float:
        """Seconds without log progress before a start counts as hung: the given value, else
        at least 10 minutes or twice the last good start (from the journal, read once)."""
        if self.ready_timeout_s is not None:
            return self.ready_timeout_s
        if self._ready_timeout is None:
            last = self.last_good_start_s or lifecycle.last_good_start_from_journal(self)
            self._ready_timeout = max(600.0, 2 * last) if last else 600.0
        return self._ready_timeout

    async def wait_ready(self, timeout_s: float | None = None) -> bool:
        """True once ready; False when the run failed/stopped (or timeout_s passed first)."""

        def verdict() -> bool | None:
            if self.state in (ServerState.READY, ServerState.DEGRADED) and self.time_to_ready_s:
                return True
            return False if self.state in TERMINAL else None

        return await self._wait_until(verdict, timeout_s)

    async def wait_state(self, *states: ServerState, timeout_s: float | None = None) -> bool:
        return await self._wait_until(lambda: True if self.state in states else None, timeout_s)

    async def _wait_until(
        self, verdict: Callable[[], bool | None], timeout_s: float | None
    ) -> bool:
        """Wait for state changes until verdict() says True or False; False on timeout."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while (answer := verdict()) is None:
            self._state_changed.clear()
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._state_changed.wait(), remaining)
            except TimeoutError:
                return False
        return answer

    async def stop(self, *, outcome: str | None = None) -> None:
        """Stop the server (whole group, escalating signals), then wait for GPU memory."""
        self._cancel_crash_restart()
        await ending.stop_server(self, outcome=outcome)

    def _cancel_crash_restart(self) -> None:
        task, self._crash_task = self._crash_task, None
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
        self.restart_pending = False

    async def detach(self) -> None:
        """Stop watching but leave the server running; its state file stays for re-adoption."""
        self.detached = True
        self._cancel_crash_restart()
        await self._cancel_watch()
        self.journal_update(outcome="detached", summary=self.stats.summary())
        self.emit("notice", f"detached; the server keeps running (pid {self.pid})")

    async def watch(self) -> None:
        """Start watching a re-adopted process (start() does this itself for new ones)."""
        if self._watch_task is None and self.process is not None:
            self.emit(
                "notice", f"re-adopted pid {self.pid} serving {self.url} (log {self.log_path})"
            )
            now = time.monotonic()
            self._last_progress = now  # the ready timeout counts from here
            if self._started_mono is None:
                self._started_mono = now
            self.set_state(ServerState.STARTING, "re-adopted; waiting for /health")
            self._watch_task = asyncio.create_task(self._watch(), name="headroom-supervisor-watch")

    async def close(self) -> None:
        """Release the watcher without touching the server (for tests and shutdown paths)."""
        await self._cancel_watch()

    async def _cancel_watch(self) -> None:
        task, self._watch_task = self._watch_task, None
        if task is not None and task.get_loop() is not asyncio.get_running_loop():
            return  # its loop is gone (the TUI's app.run() ended): nothing left to cancel
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass

    def preview(self, changes: Mapping[str, object]):
        """(command, env, diff) a restart with these changes would use; nothing runs.
        The diff includes environment changes ("env NAME"). Raises ValueError if a change
        cannot be applied."""
        from headroom.supervisor.restart import preview

        return preview(self, changes)

    async def restart(
        self, changes: Mapping[str, object], *, reason: str = "restart"
    ) -> RestartOutcome:
        """Apply knob changes, restart, and roll back to the last good config on failure."""
        from headroom.supervisor.restart import restart_with_changes

        async with self._restart_lock:
            return await restart_with_changes(self, changes, reason=reason)

    # -- watching -----------------------------------------------------------------------
    async def _watch(self) -> None:
        async with httpx.AsyncClient(timeout=self.health_timeout_s, trust_env=False) as client:
            while True:
                try:
                    done = await lifecycle.watch_tick(self, client)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # keep watching; say what broke
                    self.emit("notice", f"supervisor watch error (still watching): {exc!r}")
                    done = False
                if done:
                    return
                await asyncio.sleep(self.poll_interval_s)

    def read_log(self, *, final: bool = False) -> list[str]:
        """Pull new lines from the run's log into the digest, ring buffer and listeners."""
        return lifecycle.read_log(self, final=final)
