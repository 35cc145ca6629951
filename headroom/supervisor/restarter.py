"""The restarter: restart with changed knobs, roll back to the last good configuration, and
restart a crashed server with back-off, up to a limit.

It launches exactly what `preview_restart` computed (the restart dialog shows the same
preview), and reports its progress as `restart_step` events (restart_progress.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from headroom.supervisor.host import SupervisorHost
from headroom.supervisor.process import LaunchError
from headroom.supervisor.restart import RestartPreview, journaled_changes, preview_restart
from headroom.supervisor.restart_progress import RestartProgress
from headroom.supervisor.secret_store import redacted_parts, refusal
from headroom.supervisor.states import (
    PreflightError,
    RestartOutcome,
    ServerState,
)
from headroom.vllm_cmd import VllmCommand


class Restarter:
    """Remembers the last good configuration and the crash budget between runs."""

    def __init__(self, host: SupervisorHost) -> None:
        self.host = host
        self.last_good: VllmCommand | None = None
        self.last_good_env: dict[str, str] | None = None
        self.last_good_start_s: float | None = None
        self.crash_count = 0
        self.restart_pending = False  # a crash restart is scheduled (after its back-off)
        self._crash_task: asyncio.Task[None] | None = None
        # asyncio primitives bind to the loop that first waits on them; the TUI runs its own
        # loop and `headroom serve` may stop the server from a fresh one, so one per loop.
        self._locks: dict[int, asyncio.Lock] = {}

    @property
    def lock(self) -> asyncio.Lock:
        key = id(asyncio.get_running_loop())
        return self._locks.setdefault(key, asyncio.Lock())

    def preview(self, changes: Mapping[str, object]) -> RestartPreview:
        host = self.host
        return preview_restart(
            host.command,
            host.env,
            changes,
            relevant_env=host.relevant_env,
            argv_for=host.argv,
        )

    def note_ready(self) -> None:
        """The current run reached ready: it is the configuration to roll back to."""
        host, run = self.host, self.host.run
        self.last_good = host.command
        self.last_good_env = dict(host.env)
        self.last_good_start_s = run.time_to_ready_s
        if run.trigger != "crash restart":
            self.crash_count = 0  # a deliberate start begins a fresh crash budget

    # -- restart with changes -----------------------------------------------------------
    async def restart(
        self,
        changes: Mapping[str, object],
        *,
        reason: str = "restart",
        expected: RestartPreview | None = None,
    ) -> RestartOutcome:
        """Apply knob changes, restart, and roll back to the last good config on failure.
        expected: the preview a user confirmed; when the configuration moved since (so the
        restart would launch something else than was shown), nothing is done."""
        async with self.lock:
            try:
                plan = self.preview(changes)
            except ValueError as exc:
                return RestartOutcome(ok=False, reason=f"the change cannot be applied: {exc}")
            missing = redacted_parts(self.host.argv(plan.command), plan.env)
            if missing:  # refused before anything is stopped: the server keeps serving
                return RestartOutcome(ok=False, reason=refusal(missing))
            if expected is not None and (
                expected.command != plan.command or expected.env != plan.env
            ):
                return RestartOutcome(
                    ok=False,
                    reason="the server's configuration changed since this restart was shown; "
                    "nothing was restarted (open it again to see the new diff)",
                )
            tracker = RestartProgress(self._emit_step)
            unsubscribe = self.host.subscribe(tracker.on_event)
            try:
                outcome = await self._restart(plan, reason)
            finally:
                unsubscribe()
            tracker.finish(
                ok=outcome.ok, rolled_back=outcome.rolled_back, rollback_ok=outcome.rollback_ok
            )
            return outcome

    def _emit_step(self, step: str, status: str, detail: str | None) -> None:
        self.host.emit(
            "restart_step",
            f"restart: {step} {status}" + (f" ({detail[:200]})" if detail else ""),
            step=step,
            status=status,
            detail=detail,
        )

    async def _restart(self, plan: RestartPreview, reason: str) -> RestartOutcome:
        host = self.host
        diff = plan.diff
        changes = journaled_changes(plan.changes)
        host.emit(
            "restart",
            f"{reason}: " + ("; ".join(str(d) for d in diff) or "same configuration"),
            diff=[str(d) for d in diff],
            changes=changes,
        )
        parent = host.run.run_id
        ok = await self._start_config(
            plan.command,
            plan.env,
            reason=reason,
            parent=parent,
            changes=changes,
            outcome="restarted",
        )
        if ok:
            return RestartOutcome(ok=True, reason="ready", diff=diff, run_id=host.run.run_id)
        why = host.run.failure_reason or "the new configuration did not become ready"
        failed_log, failed_run = host.run.log_path, host.run.run_id
        if self.last_good is None or (
            self.last_good == plan.command and self.last_good_env == plan.env
        ):
            return RestartOutcome(
                ok=False,
                reason=f"{why} (no earlier good configuration to go back to)",
                diff=diff,
                failed_log_path=failed_log,
                run_id=failed_run,
            )
        host.emit(
            "rollback",
            f"the new configuration failed ({why[:200]}); restoring the last good one "
            f"(failed run's log kept: {failed_log})",
            failed_log_path=str(failed_log),
        )
        host.records.update(failed_run, outcome="rolled_back")
        rollback_ok = await self._start_config(
            self.last_good, self.last_good_env or {}, reason="rollback", parent=failed_run
        )
        return RestartOutcome(
            ok=False,
            reason=why,
            diff=diff,
            rolled_back=True,
            rollback_ok=rollback_ok,
            failed_log_path=failed_log,
            run_id=failed_run,
        )

    async def _start_config(
        self,
        command: VllmCommand,
        env: Mapping[str, str],
        *,
        reason: str,
        parent: str | None,
        changes: dict[str, object] | None = None,
        outcome: str = "stopped",
    ) -> bool:
        """Stop what runs, then start `command` with `env`; True once it is ready."""
        host = self.host
        process = host.run.process
        if process is not None and process.alive():
            await host.stop(outcome=outcome)
        else:
            await host.close()
        host.command, host.env = command, dict(env)
        host.next_run(trigger=reason, parent_run_id=parent, changes=changes)
        try:
            await host.start(reason=reason)
            return await host.wait_ready()
        except (PreflightError, LaunchError, RuntimeError) as exc:
            host.run.failure_reason = host.run.failure_reason or str(exc)
            return False

    # -- crashes ------------------------------------------------------------------------
    async def after_crash(self, why: str, *, stop_first: bool = False) -> None:
        """A server that was serving died: journal it, then restart with back-off."""
        host = self.host
        settings = host.settings
        host.run.failure_kind = host.run.failure_kind or "crash"
        await host.finish_failed(why, outcome="crashed")
        if self.crash_count >= settings.max_crash_restarts or host.detached:
            if settings.max_crash_restarts:
                host.emit(
                    "notice",
                    f"crashed {self.crash_count + 1} times; not restarting again "
                    f"(limit {settings.max_crash_restarts}); last reason: {why[:200]}",
                )
            return
        delay = settings.crash_backoff_s * (2**self.crash_count)
        self.crash_count += 1
        host.emit(
            "crash_backoff",
            f"the server crashed ({why[:200]}); restart {self.crash_count} of "
            f"{settings.max_crash_restarts} in {delay:.0f} s",
            delay_s=delay,
            attempt=self.crash_count,
        )
        self.restart_pending = True
        self._crash_task = asyncio.get_running_loop().create_task(self._delayed_restart(delay))

    async def _delayed_restart(self, delay: float) -> None:
        host = self.host
        try:
            await asyncio.sleep(delay)
            if host.state != ServerState.FAILED or host.detached:
                return  # someone else acted meanwhile (stop, restart, quit)
            async with self.lock:
                await self._start_config(
                    host.command, host.env, reason="crash restart", parent=host.run.run_id
                )
        finally:
            self.restart_pending = False

    def cancel_crash_restart(self) -> None:
        task, self._crash_task = self._crash_task, None
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
        self.restart_pending = False
