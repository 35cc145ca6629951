"""The starter: how a run begins, for the Supervisor. A new run is refused when its command
line carries a redaction marker or fails the preflight, else launched, journaled and watched;
a server that runs already (re-adoption) is bound to a run of its own without launching.

Its own state: where the next start comes from (trigger, parent run, changes: next_run) and
the task that adds the model and GPU context to the journal record after the launch.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from headroom.supervisor import preflight as pf
from headroom.supervisor.host import SupervisorHost
from headroom.supervisor.journal import new_run_id
from headroom.supervisor.launcher import flag_tokens
from headroom.supervisor.log_scrub import LogScrubber
from headroom.supervisor.log_tail import FileTail
from headroom.supervisor.paths import logs_dir
from headroom.supervisor.process import LaunchError, ManagedProcess
from headroom.supervisor.run_journal import prune_logs
from headroom.supervisor.run_state import Run
from headroom.supervisor.secret_store import redacted_parts, refusal
from headroom.supervisor.states import PreflightError, ServerState
from headroom.supervisor.watcher import ProcessWatcher
from headroom.vllm_cmd import redact_argv, secret_values


class RunStarter:
    """Starts runs of `host` (the Supervisor); `watcher` is the host's process watcher."""

    def __init__(self, host: SupervisorHost, watcher: ProcessWatcher) -> None:
        self.host = host
        self.watcher = watcher
        self._next: dict[str, object] = {}
        self._context_task: asyncio.Task[None] | None = None

    def next_run(
        self,
        *,
        trigger: str | None,
        parent_run_id: str | None,
        changes: dict[str, object] | None = None,
    ) -> None:
        """Kept for the next start() (Supervisor.next_run)."""
        self._next = {"trigger": trigger, "parent_run_id": parent_run_id, "changes": changes}

    async def start(self, *, reason: str | None = None) -> None:
        """The work of Supervisor.start (PreflightError / LaunchError come from here)."""
        host = self.host
        process = host.run.process
        if host.adopted and not self.watcher.watching and process and process.alive():
            await host.watch()  # re-adopted: it runs already, only the watching starts
            return
        if process is not None and process.alive():
            raise RuntimeError(f"a server is already running (pid {process.pid})")
        host.adopted = False
        provenance, self._next = self._next, {}
        # The previous process stays on record until the new one is spawned.
        host.run = run = Run(log_ring=host.settings.log_ring, run_id=new_run_id(), process=process)
        run.parent_run_id = provenance.get("parent_run_id")  # type: ignore[assignment]
        run.changes = provenance.get("changes")  # type: ignore[assignment]
        run.trigger = provenance.get("trigger")  # type: ignore[assignment]
        run.trigger = reason or run.trigger
        self.watcher.reset()
        host.metrics.reset()
        await host.ray.cancel()
        argv = host.argv()
        self._refuse_redacted(argv)
        if host.settings.preflight:
            await self._preflight()
        run.log_path = log_path = logs_dir(host.data_dir) / f"{run.run_id}.log"
        prune_logs(log_path.parent, keep=host.settings.keep_logs)
        run.tail = FileTail(log_path)
        run.secrets = tuple(secret_values(argv, host.child_env()))
        run.scrubber = LogScrubber(log_path, run.secrets)
        run.started_mono = run.last_progress = time.monotonic()
        try:
            run.process = ManagedProcess.spawn(argv, host.child_env(), log_path)
        except Exception as exc:
            run.failure_reason = str(exc)
            host.set_state(ServerState.FAILED, str(exc))
            raise
        host.detached = False
        pid = run.process.pid
        host.set_state(ServerState.STARTING, f"launched pid {pid}")
        shown = redact_argv(argv)
        host.emit(
            "launch",
            f"started {' '.join(shown)} (pid {pid}, log {log_path})",
            pid=pid,
            argv=shown,
            log_path=str(log_path),
        )
        # Journal and state file first, from what is known already; nothing here reads
        # the model or the GPUs (a crafted model directory must not leave an orphan).
        self._journal_launch(argv)
        self.watcher.begin()
        host.ray.begin()
        self._context_task = asyncio.create_task(
            host.records.add_context(
                run.run_id,
                host.command.model,
                host.gpus,
                host.child_env(),
                local_world(host.command),
            )
        )

    def _journal_launch(self, argv: list[str]) -> None:
        host = self.host
        host.records.record_launch(
            host.run,
            model=host.command.model,
            argv=redact_argv(argv),
            flags=redact_argv(flag_tokens(host.command)),
            real_flags=flag_tokens(host.command),
            env_overrides=host.env,
            launcher=host.launcher_name,
            template=host.template,
            env=host.relevant_env(),
            port=host.port,
            url=host.url,
        )

    def _refuse_redacted(self, argv: list[str]) -> None:
        """Never launch a redaction marker as if it were a value (`--api-key ***` would
        make "***" the server's key): say what is missing instead."""
        host = self.host
        missing = redacted_parts(argv, host.env)
        if missing:
            host.run.failure_reason = why = refusal(missing)
            host.set_state(ServerState.FAILED, why)
            raise LaunchError(why)

    async def _preflight(self) -> None:
        host = self.host
        problems = await pf.run_preflight(
            host.command, host.port, host.child_env(), host.gpus, host.records.read_state
        )
        if host.ray.active:
            cluster = await host.ray.preflight()
            problems = pf.PreflightResult(
                problems.failures + cluster.failures, problems.notes + cluster.notes
            )
        for note in problems.notes:
            host.emit("notice", note)
        for failure in problems.failures:
            host.emit("preflight", failure, check=failure.split(" ", 1)[0])
        if problems.failures:
            host.run.failure_reason = "preflight: " + "; ".join(problems.failures)
            host.set_state(ServerState.FAILED, host.run.failure_reason)
            raise PreflightError(tuple(problems.failures))

    def adopt(
        self,
        process: ManagedProcess,
        *,
        run_id: str | None = None,
        log_path: Path | None = None,
        started_at: float | None = None,
    ) -> None:
        """The work of Supervisor.adopt_running: a run of its own for `process`."""
        host = self.host
        run = Run(log_ring=host.settings.log_ring, run_id=run_id, process=process)
        run.log_path = log_path
        run.tail = FileTail(log_path) if log_path is not None else None
        run.secrets = tuple(secret_values(host.argv(), host.child_env()))
        run.scrubber = LogScrubber(log_path, run.secrets) if log_path is not None else None
        if started_at is not None:
            run.started_mono = time.monotonic() - max(time.time() - started_at, 0.0)
        run.last_progress = time.monotonic()
        host.run = run
        host.adopted = True
        # STOPPED until watch() (or start(), which the TUI calls) begins watching it.


def local_world(cmd) -> int:
    """GPUs a run takes on this node (TP x PP x DP), 0 when they are spread over nodes (Ray,
    --nnodes) and this node's share is not known: the journal records those GPUs."""
    try:
        if pf._ray_backend(cmd) or cmd.get_int("nnodes", 1) != 1:
            return 0
        return pf.world_size(cmd) * max(cmd.get_int("data_parallel_size", 1), 1)
    except (TypeError, ValueError):
        return 0
